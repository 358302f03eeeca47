// Pure logic of the hierarchical path: how the ranks of a communicator split
// into nodes (real or virtual) and how an allreduce splits into shards.
// No GPU, no UCX, no MPI; unit-tested in tests/hier/test_hier_plan.cpp.
#include <algorithm>
#include <map>
#include <vector>

#include "gpucoll_core.h"
#include "no_throw.hpp"

using gpucoll::no_throw;

static gpucoll_status_t gpucoll_hier_plan_body(const int *host_of_rank, int size, int rank, int virtual_node_size,
                                              gpucoll_hier_layout_t *layout, int *rank_of)
{
    *layout = gpucoll_hier_layout_t{1, size, 0, rank};
    if (size < 1 || rank < 0 || rank >= size || virtual_node_size < 0)
        return gpucoll_fail(GPUCOLL_ERR_INVALID, "hier plan: rank %d of %d, virtual_node_size %d", rank, size,
                            virtual_node_size);
    // Hosts in the order of their lowest rank; ranks of a host ascending.
    std::vector<std::vector<int>> hosts;
    std::map<int, size_t> host_index;
    for (int r = 0; r < size; r++) {
        auto it = host_index.find(host_of_rank[r]);
        if (it == host_index.end()) {
            it = host_index.emplace(host_of_rank[r], hosts.size()).first;
            hosts.emplace_back();
        }
        hosts[it->second].push_back(r);
    }
    // Nodes: a host, or consecutive runs of virtual_node_size of its ranks.
    // Splitting hosts in their own order keeps node order = order of the lowest rank.
    std::vector<std::vector<int>> nodes;
    for (const auto &h : hosts) {
        if (virtual_node_size == 0) {
            nodes.push_back(h);
            continue;
        }
        if (h.size() % (size_t)virtual_node_size != 0)
            return gpucoll_fail(GPUCOLL_ERR_UNSUPPORTED,
                                "the host of rank %d has %zu ranks, not a multiple of virtual_node_size %d", h[0],
                                h.size(), virtual_node_size);
        for (size_t b = 0; b < h.size(); b += (size_t)virtual_node_size)
            nodes.emplace_back(h.begin() + (long)b, h.begin() + (long)b + virtual_node_size);
    }
    std::sort(nodes.begin(), nodes.end(), [](const std::vector<int> &a, const std::vector<int> &b) { return a[0] < b[0]; });
    const size_t L = nodes[0].size();
    for (const auto &n : nodes)
        if (n.size() != L)
            return gpucoll_fail(GPUCOLL_ERR_UNSUPPORTED,
                                "nodes are not uniform: the node of rank %d has %zu ranks, the node of rank %d %zu",
                                nodes[0][0], L, n[0], n.size());
    layout->nnodes = (int)nodes.size();
    layout->local_size = (int)L;
    for (size_t n = 0; n < nodes.size(); n++)
        for (size_t i = 0; i < L; i++) {
            rank_of[n * L + i] = nodes[n][i];
            if (nodes[n][i] == rank) {
                layout->node = (int)n;
                layout->local_rank = (int)i;
            }
        }
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
