/* The communicator plan: node-local groups, cross-node groups, uniformity.
 *
 * Pure logic over plain data so it can be tested for any layout without MPI
 * or a cluster. A hierarchical collective runs inside each node-local group,
 * then across each cross-node group (the ranks holding the same local index
 * on every node), then inside the node again. */
#include "gpucoll_topo.h"

#include <algorithm>
#include <map>
#include <set>

namespace gpucoll {
namespace topo {

namespace {

/* Bus ids compare as numbers; a string we cannot parse compares as itself. */
std::string gpu_key(const std::string &bus_id)
{
    PciBusId id;
    return parse_pci_bus_id(bus_id, &id) ? format_pci_bus_id(id) : bus_id;
}

bool any_node_shares_a_gpu(const std::vector<RankPlacement> &placements, const CommPlan &plan)
{
    for (const std::vector<int> &node : plan.nodes) {
        std::set<std::string> seen;
        for (int r : node) {
            const std::string &bus = placements[r].gpu_bus_id;
            if (!bus.empty() && !seen.insert(gpu_key(bus)).second)
                return true;
        }
    }
    return false;
}

} // namespace

gpucoll_status_t build_comm_plan(const std::vector<RankPlacement> &placements, CommPlan *out)
{
    if (!out)
        return gpucoll_fail(GPUCOLL_ERR_INVALID, "build_comm_plan: null output");
    if (placements.empty())
        return gpucoll_fail(GPUCOLL_ERR_INVALID, "build_comm_plan: no ranks");

    CommPlan plan;
    const int size = (int)placements.size();
    plan.node_of_rank.assign(size, -1);
    plan.local_index.assign(size, -1);
    std::map<std::string, int> node_index; /* node id -> index, in order of first rank */
    for (int r = 0; r < size; ++r) {
        const std::string &id = placements[r].node_id;
        if (id.empty())
            return gpucoll_fail(GPUCOLL_ERR_INVALID, "build_comm_plan: rank %d has an empty node id", r);
        auto it = node_index.emplace(id, (int)plan.nodes.size()).first;
        if (it->second == (int)plan.nodes.size())
            plan.nodes.emplace_back();
        std::vector<int> &node = plan.nodes[it->second];
        plan.node_of_rank[r] = it->second;
        plan.local_index[r] = (int)node.size();
        node.push_back(r);
    }

    size_t largest = 0;
    for (const std::vector<int> &node : plan.nodes) {
        largest = std::max(largest, node.size());
        plan.uniform = plan.uniform && node.size() == plan.nodes[0].size();
    }
    plan.cross_groups.assign(largest, {});
    for (size_t i = 0; i < largest; ++i)
        for (const std::vector<int> &node : plan.nodes)
            if (i < node.size())
                plan.cross_groups[i].push_back(node[i]);

    plan.gpu_shared = any_node_shares_a_gpu(placements, plan);
    *out = std::move(plan);
    return GPUCOLL_SUCCESS;
}

gpucoll_status_t split_virtual_nodes(const std::vector<RankPlacement> &placements, int ranks_per_node,
                                     std::vector<RankPlacement> *out)
{
    if (!out)
        return gpucoll_fail(GPUCOLL_ERR_INVALID, "split_virtual_nodes: null output");
    if (ranks_per_node < 1)
        return gpucoll_fail(GPUCOLL_ERR_INVALID, "split_virtual_nodes: %d ranks per virtual node", ranks_per_node);

    std::map<std::string, std::vector<int>> ranks_of_host; /* ascending ranks */
    for (int r = 0; r < (int)placements.size(); ++r)
        ranks_of_host[placements[r].node_id].push_back(r);

    std::vector<RankPlacement> split = placements;
    for (const auto &host : ranks_of_host) {
        const size_t count = host.second.size();
        if (count % (size_t)ranks_per_node != 0)
            return gpucoll_fail(GPUCOLL_ERR_INVALID,
                                "host '%s' (rank %d first) has %zu ranks, not a multiple of %d ranks per "
                                "virtual node",
                                host.first.c_str(), host.second[0], count, ranks_per_node);
        if (count == (size_t)ranks_per_node)
            continue; /* one node: keep the real host name */
        for (size_t pos = 0; pos < count; ++pos)
            split[host.second[pos]].node_id = host.first + "#" + std::to_string(pos / (size_t)ranks_per_node);
    }
    *out = std::move(split);
    return GPUCOLL_SUCCESS;
}

RankPlan rank_plan(const CommPlan &plan, int rank)
{
    RankPlan view;
    if (rank < 0 || rank >= (int)plan.node_of_rank.size())
        return view;
    view.node = plan.node_of_rank[rank];
    view.local_rank = plan.local_index[rank];
    view.local_group = plan.nodes[view.node];
    view.cross_group = plan.cross_groups[view.local_rank];
    const auto pos = std::find(view.cross_group.begin(), view.cross_group.end(), rank);
    view.cross_rank = (int)(pos - view.cross_group.begin());
    return view;
}

} // namespace topo
} // namespace gpucoll
