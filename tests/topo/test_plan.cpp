/* The communicator plan: node-local and cross-node groups for 1..8 ranks,
 * uneven nodes, and virtual nodes carved out of one host. */
#include "topo_check.h"

#include <cstring>

using namespace gpucoll::topo;

namespace {

using Groups = std::vector<std::vector<int>>;

/* One placement per node id, GPUs numbered by local position on each host. */
std::vector<RankPlacement> on_hosts(const std::vector<std::string> &hosts)
{
    std::vector<RankPlacement> ranks;
    std::vector<std::string> seen;
    std::vector<int> count;
    for (const std::string &h : hosts) {
        size_t k = 0;
        while (k < seen.size() && seen[k] != h)
            ++k;
        if (k == seen.size()) {
            seen.push_back(h);
            count.push_back(0);
        }
        char bus[32];
        std::snprintf(bus, sizeof bus, "0000:%02x:00.0", 0x10 + count[k]++);
        ranks.push_back({h, bus});
    }
    return ranks;
}

std::vector<std::string> blocked(int nodes, int per_node)
{
    std::vector<std::string> hosts;
    for (int r = 0; r < nodes * per_node; ++r)
        hosts.push_back("host" + std::to_string(r / per_node));
    return hosts;
}

} // namespace

TOPO_TEST(plan_1_rank)
{
    CommPlan plan;
    REQUIRE_OK(build_comm_plan(on_hosts({"a"}), &plan));
    CHECK_EQ(plan.nodes, Groups({{0}}));
    CHECK_EQ(plan.cross_groups, Groups({{0}}));
    CHECK(plan.uniform);
    CHECK(!plan.gpu_shared);
    RankPlan view = rank_plan(plan, 0);
    CHECK_EQ(view.node, 0);
    CHECK_EQ(view.local_rank, 0);
    CHECK_EQ(view.cross_rank, 0);
}

TOPO_TEST(plan_2_ranks)
{
    CommPlan one, two;
    REQUIRE_OK(build_comm_plan(on_hosts({"a", "a"}), &one));
    CHECK_EQ(one.nodes, Groups({{0, 1}}));
    CHECK_EQ(one.cross_groups, Groups({{0}, {1}}));
    REQUIRE_OK(build_comm_plan(on_hosts({"a", "b"}), &two));
    CHECK_EQ(two.nodes, Groups({{0}, {1}}));
    CHECK_EQ(two.cross_groups, Groups({{0, 1}}));
    CHECK(one.uniform && two.uniform);
}

TOPO_TEST(plan_3_ranks)
{
    CommPlan one, uneven;
    REQUIRE_OK(build_comm_plan(on_hosts({"a", "a", "a"}), &one));
    CHECK_EQ(one.nodes, Groups({{0, 1, 2}}));
    CHECK(one.uniform);

    REQUIRE_OK(build_comm_plan(on_hosts({"a", "a", "b"}), &uneven));
    CHECK_EQ(uneven.nodes, Groups({{0, 1}, {2}}));
    CHECK_EQ(uneven.cross_groups, Groups({{0, 2}, {1}}));
    CHECK(!uneven.uniform);
    RankPlan r1 = rank_plan(uneven, 1);
    CHECK_EQ(r1.cross_group, std::vector<int>({1}));
    RankPlan r2 = rank_plan(uneven, 2);
    CHECK_EQ(r2.local_group, std::vector<int>({2}));
    CHECK_EQ(r2.cross_group, std::vector<int>({0, 2}));
    CHECK_EQ(r2.cross_rank, 1);
}

TOPO_TEST(plan_4_ranks_blocked_and_round_robin)
{
    CommPlan blocked_plan, rr;
    REQUIRE_OK(build_comm_plan(on_hosts(blocked(2, 2)), &blocked_plan));
    CHECK_EQ(blocked_plan.nodes, Groups({{0, 1}, {2, 3}}));
    CHECK_EQ(blocked_plan.cross_groups, Groups({{0, 2}, {1, 3}}));

    /* mpirun --map-by node: ranks alternate between hosts */
    REQUIRE_OK(build_comm_plan(on_hosts({"a", "b", "a", "b"}), &rr));
    CHECK_EQ(rr.nodes, Groups({{0, 2}, {1, 3}}));
    CHECK_EQ(rr.cross_groups, Groups({{0, 1}, {2, 3}}));
    CHECK_EQ(rr.local_index, std::vector<int>({0, 0, 1, 1}));
    CHECK(rr.uniform);
}

TOPO_TEST(plan_8_ranks_every_split)
{
    struct Case {
        int nodes, per_node;
    };
    for (Case c : {Case{1, 8}, Case{2, 4}, Case{4, 2}, Case{8, 1}}) {
        CommPlan plan;
        REQUIRE_OK(build_comm_plan(on_hosts(blocked(c.nodes, c.per_node)), &plan));
        CHECK_EQ(plan.nodes.size(), (size_t)c.nodes);
        CHECK_EQ(plan.cross_groups.size(), (size_t)c.per_node);
        CHECK(plan.uniform);
        for (int r = 0; r < 8; ++r) {
            RankPlan view = rank_plan(plan, r);
            CHECK_EQ(view.node, r / c.per_node);
            CHECK_EQ(view.local_rank, r % c.per_node);
            CHECK_EQ(view.cross_rank, r / c.per_node);
            CHECK_EQ(view.local_group.size(), (size_t)c.per_node);
            CHECK_EQ(view.cross_group.size(), (size_t)c.nodes);
            CHECK_EQ(view.local_group[view.local_rank], r);
            CHECK_EQ(view.cross_group[view.cross_rank], r);
        }
    }
    CommPlan two_by_four;
    REQUIRE_OK(build_comm_plan(on_hosts(blocked(2, 4)), &two_by_four));
    CHECK_EQ(two_by_four.cross_groups, Groups({{0, 4}, {1, 5}, {2, 6}, {3, 7}}));
}

TOPO_TEST(plan_uneven_nodes)
{
    CommPlan plan;
    REQUIRE_OK(build_comm_plan(on_hosts({"a", "a", "a", "b", "c", "c"}), &plan));
    CHECK_EQ(plan.nodes, Groups({{0, 1, 2}, {3}, {4, 5}}));
    CHECK_EQ(plan.cross_groups, Groups({{0, 3, 4}, {1, 5}, {2}}));
    CHECK(!plan.uniform);
}

TOPO_TEST(plan_node_order_follows_lowest_rank)
{
    CommPlan plan;
    REQUIRE_OK(build_comm_plan(on_hosts({"zeta", "alpha", "zeta", "alpha"}), &plan));
    CHECK_EQ(plan.nodes, Groups({{0, 2}, {1, 3}})); /* not alphabetical */
}

TOPO_TEST(plan_detects_shared_gpu)
{
    CommPlan plan;
    /* same GPU spelled two ways on one node */
    REQUIRE_OK(build_comm_plan({{"a", "0000:3b:00.0"}, {"a", "00000000:3B:00.0"}}, &plan));
    CHECK(plan.gpu_shared);
    /* same bus id on different nodes is normal */
    REQUIRE_OK(build_comm_plan({{"a", "0000:3b:00.0"}, {"b", "0000:3b:00.0"}}, &plan));
    CHECK(!plan.gpu_shared);
    /* ranks without a GPU never share one */
    REQUIRE_OK(build_comm_plan({{"a", ""}, {"a", ""}}, &plan));
    CHECK(!plan.gpu_shared);
}

TOPO_TEST(plan_rejects_bad_input)
{
    CommPlan plan;
    CHECK_EQ(build_comm_plan({}, &plan), GPUCOLL_ERR_INVALID);
    CHECK_EQ(build_comm_plan({{"a", ""}, {"", ""}}, &plan), GPUCOLL_ERR_INVALID);
    CHECK(std::strstr(gpucoll_last_error(), "rank 1") != nullptr);
    CHECK(rank_plan(plan, 99).local_group.empty());
    CHECK_EQ(rank_plan(plan, -1).node, -1);
}

TOPO_TEST(virtual_nodes_split_one_host)
{
    std::vector<RankPlacement> split;
    REQUIRE_OK(split_virtual_nodes(on_hosts(blocked(1, 8)), 4, &split));
    CHECK_EQ(split[0].node_id, std::string("host0#0"));
    CHECK_EQ(split[7].node_id, std::string("host0#1"));
    CHECK_EQ(split[5].gpu_bus_id, std::string("0000:15:00.0")); /* GPUs untouched */
    CommPlan plan;
    REQUIRE_OK(build_comm_plan(split, &plan));
    CHECK_EQ(plan.nodes, Groups({{0, 1, 2, 3}, {4, 5, 6, 7}}));
    CHECK_EQ(plan.cross_groups, Groups({{0, 4}, {1, 5}, {2, 6}, {3, 7}}));
    CHECK(plan.uniform);

    REQUIRE_OK(split_virtual_nodes(on_hosts(blocked(1, 8)), 2, &split));
    REQUIRE_OK(build_comm_plan(split, &plan));
    CHECK_EQ(plan.nodes, Groups({{0, 1}, {2, 3}, {4, 5}, {6, 7}}));
}

TOPO_TEST(virtual_nodes_identity_and_many_hosts)
{
    std::vector<RankPlacement> in = on_hosts(blocked(2, 4)), same, split;
    REQUIRE_OK(split_virtual_nodes(in, 4, &same));
    CHECK_EQ(same[5].node_id, std::string("host1"));

    REQUIRE_OK(split_virtual_nodes(in, 2, &split));
    CommPlan plan;
    REQUIRE_OK(build_comm_plan(split, &plan));
    CHECK_EQ(plan.nodes, Groups({{0, 1}, {2, 3}, {4, 5}, {6, 7}}));
    CHECK_EQ(plan.cross_groups, Groups({{0, 2, 4, 6}, {1, 3, 5, 7}}));

    /* round-robin over two hosts: each host splits by its own rank order */
    REQUIRE_OK(split_virtual_nodes(on_hosts({"a", "b", "a", "b", "a", "b", "a", "b"}), 2, &split));
    REQUIRE_OK(build_comm_plan(split, &plan));
    CHECK_EQ(plan.nodes, Groups({{0, 2}, {1, 3}, {4, 6}, {5, 7}}));
}

TOPO_TEST(virtual_nodes_reject_uneven_split)
{
    std::vector<RankPlacement> split;
    CHECK_EQ(split_virtual_nodes(on_hosts(blocked(1, 8)), 3, &split), GPUCOLL_ERR_INVALID);
    CHECK(std::strstr(gpucoll_last_error(), "not a multiple of 3") != nullptr);
    CHECK_EQ(split_virtual_nodes(on_hosts(blocked(1, 8)), 0, &split), GPUCOLL_ERR_INVALID);
    /* uneven hosts: 3 + 1 ranks cannot both split into nodes of 2 */
    CHECK_EQ(split_virtual_nodes(on_hosts({"a", "a", "a", "b"}), 2, &split), GPUCOLL_ERR_INVALID);
    /* hosts of different sizes split into nodes of one size: 4 + 8 ranks in nodes of 4 */
    std::vector<std::string> hosts;
    for (int r = 0; r < 12; ++r)
        hosts.push_back(r % 3 == 0 ? "a" : "b");
    REQUIRE_OK(split_virtual_nodes(on_hosts(hosts), 4, &split));
    CommPlan plan;
    REQUIRE_OK(build_comm_plan(split, &plan));
    CHECK_EQ(plan.nodes, Groups({{0, 3, 6, 9}, {1, 2, 4, 5}, {7, 8, 10, 11}}));
    CHECK(plan.uniform);
}
