/* Human-readable report of a Topology and of a communicator plan, as printed
 * by gpucoll-topo. */
#ifndef GPUCOLL_TOPO_REPORT_H
#define GPUCOLL_TOPO_REPORT_H

#include "gpucoll_topo.h"

#include <cstdio>
#include <vector>

namespace gpucoll {
namespace topo_tool {

/* Machine summary, GPUs (with "GPUs: <n>" as its first line), NICs and the
 * GPU link matrix. */
void print_topology(std::FILE *out, const topo::Topology &topo);

/* The placement of `nodes` x `ranks_per_node` ranks (rank r on host r /
 * ranks_per_node, using GPU (r % ranks_per_node) % #GPUs), split into virtual
 * nodes of virtual_node_size ranks when > 0, and the plan build_comm_plan()
 * makes of it.
 * Returns false (message on stderr) when the layout is invalid. */
bool print_plan(std::FILE *out, const topo::Topology &topo, int nodes, int ranks_per_node, int virtual_node_size);

/* "0-3,8,10-11" */
std::string format_ranks(const std::vector<int> &ranks);

} // namespace topo_tool
} // namespace gpucoll

#endif
