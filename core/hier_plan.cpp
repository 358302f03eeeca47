// Pure logic of the hierarchical path: how the ranks of a communicator split
// into nodes (real or virtual) and how an allreduce splits into shards.
// The grouping itself is topo's communicator plan (topo/topo_plan.cpp); this
// turns it into the layout the hierarchical path runs on. No GPU, no UCX, no
// MPI; unit-tested in tests/hier/test_hier_plan.cpp (and topo's plan in
// tests/topo/test_plan.cpp).
#include <string>
#include <vector>

#include "gpucoll_core.h"
#include "gpucoll_topo.h"
#include "no_throw.hpp"

using gpucoll::no_throw;
namespace topo = gpucoll::topo;

static gpucoll_status_t gpucoll_hier_plan_body(const int *host_of_rank, int size, int rank, int virtual_node_size,
                                              gpucoll_hier_layout_t *layout, int *rank_of)
{
    *layout = gpucoll_hier_layout_t{1, size, 0, rank};
    if (size < 1 || rank < 0 || rank >= size || virtual_node_size < 0)
        return gpucoll_fail(GPUCOLL_ERR_INVALID, "hier plan: rank %d of %d, virtual_node_size %d", rank, size,
                            virtual_node_size);
    std::vector<topo::RankPlacement> ranks((size_t)size);
    for (int r = 0; r < size; r++) ranks[(size_t)r].node_id = std::to_string(host_of_rank[r]);
    // A layout the path cannot take is UNSUPPORTED (the caller stages), not
    // an invalid argument as topo has it.
    if (virtual_node_size > 0 && topo::split_virtual_nodes(ranks, virtual_node_size, &ranks) != GPUCOLL_SUCCESS) {
        const std::string why = gpucoll_last_error();
        return gpucoll_fail(GPUCOLL_ERR_UNSUPPORTED, "virtual_node_size %d: %s", virtual_node_size, why.c_str());
    }
    topo::CommPlan plan;
    if (gpucoll_status_t st = topo::build_comm_plan(ranks, &plan)) return st;
    const std::vector<std::vector<int>> &nodes = plan.nodes;
    const size_t L = nodes[0].size();
    if (!plan.uniform)
        for (const auto &n : nodes)
            if (n.size() != L)
                return gpucoll_fail(GPUCOLL_ERR_UNSUPPORTED,
                                    "nodes are not uniform: the node of rank %d has %zu ranks, the node of rank %d %zu",
                                    nodes[0][0], L, n[0], n.size());
    layout->nnodes = (int)nodes.size();
    layout->local_size = (int)L;
    layout->node = plan.node_of_rank[(size_t)rank];
    layout->local_rank = plan.local_index[(size_t)rank];
    for (size_t n = 0; n < nodes.size(); n++)
        for (size_t i = 0; i < L; i++) rank_of[n * L + i] = nodes[n][i];
    return GPUCOLL_SUCCESS;
}

extern "C" gpucoll_status_t gpucoll_hier_plan(const int *host_of_rank, int size, int rank, int virtual_node_size,
                                              gpucoll_hier_layout_t *layout, int *rank_of)
{
    return no_throw([&] { return gpucoll_hier_plan_body(host_of_rank, size, rank, virtual_node_size, layout, rank_of); });
}

extern "C" void gpucoll_hier_split(size_t count, int local_size, size_t *shard, size_t *tail)
{
    size_t L = local_size > 0 ? (size_t)local_size : 1;
    *shard = count / L;
    *tail = count - *shard * L;
}
