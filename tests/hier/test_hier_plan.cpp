// Pure logic of the hierarchical path, without a GPU or MPI: how ranks split
// into (virtual) nodes, the cross-node groups, the shard/tail split of an
// allreduce, and the hier object's life without groups.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "gpucoll_core.h"

#include "../common/check.h"

struct Result {
    gpucoll_status_t st;
    std::vector<gpucoll_hier_layout_t> layouts; // per rank
    std::vector<int> rank_of;
};

static Result plan(const std::vector<int> &hosts, int vns)
{
    Result r;
    int size = (int)hosts.size();
    r.layouts.resize(hosts.size());
    std::vector<int> first;
    for (int me = 0; me < size; me++) {
        std::vector<int> rank_of(hosts.size(), -1);
        gpucoll_status_t st = gpucoll_hier_plan(hosts.data(), size, me, vns, &r.layouts[(size_t)me], rank_of.data());
        if (me == 0) {
            r.st = st;
            r.rank_of = rank_of;
        } else {
            CHECK(st == r.st);                              // every rank decides alike
            if (st == GPUCOLL_SUCCESS) CHECK(rank_of == r.rank_of); // and sees the same map
        }
    }
    return r;
}

// The layout is consistent with rank_of, and the cross group of every rank
// (rank_of[n*L + local]) holds one rank per node, with the same local index.
static void check_consistent(const Result &r)
{
    const int size = (int)r.layouts.size();
    const int N = r.layouts[0].nnodes, L = r.layouts[0].local_size;
    CHECK(N * L == size);
    std::vector<int> seen((size_t)size, 0);
    for (int k = 0; k < size; k++) seen[(size_t)r.rank_of[(size_t)k]]++;
    for (int k = 0; k < size; k++) CHECK(seen[(size_t)k] == 1);
    for (int me = 0; me < size; me++) {
        const gpucoll_hier_layout_t &l = r.layouts[(size_t)me];
        CHECK(l.nnodes == N && l.local_size == L);
        CHECK(r.rank_of[(size_t)(l.node * L + l.local_rank)] == me);
        for (int n = 0; n < N; n++) {
            int peer = r.rank_of[(size_t)(n * L + l.local_rank)];
            CHECK(r.layouts[(size_t)peer].local_rank == l.local_rank);
            CHECK(r.layouts[(size_t)peer].node == n);
        }
    }
    // Node order = order of the lowest rank; ranks ascending inside a node.
    for (int n = 0; n < N; n++) {
        for (int i = 1; i < L; i++) CHECK(r.rank_of[(size_t)(n * L + i)] > r.rank_of[(size_t)(n * L + i - 1)]);
        if (n > 0) CHECK(r.rank_of[(size_t)(n * L)] > r.rank_of[(size_t)((n - 1) * L)]);
    }
}

static void test_virtual_nodes()
{
    // One host, 4 ranks: 2 x 2, node n = ranks 2n, 2n+1 (the 4-GPU test machine).
    Result r = plan({0, 0, 0, 0}, 2);
    CHECK(r.st == GPUCOLL_SUCCESS);
    CHECK(r.layouts[0].nnodes == 2 && r.layouts[0].local_size == 2);
    CHECK((r.rank_of == std::vector<int>{0, 1, 2, 3}));
    CHECK(r.layouts[3].node == 1 && r.layouts[3].local_rank == 1);
    check_consistent(r);
    // 4 x 1 and 1 x 4
    r = plan({0, 0, 0, 0}, 1);
    CHECK(r.st == GPUCOLL_SUCCESS && r.layouts[0].nnodes == 4 && r.layouts[0].local_size == 1);
    check_consistent(r);
    r = plan({0, 0, 0, 0}, 4);
    CHECK(r.st == GPUCOLL_SUCCESS && r.layouts[0].nnodes == 1);
    r = plan({0, 0}, 1);
    CHECK(r.st == GPUCOLL_SUCCESS && r.layouts[1].nnodes == 2 && r.layouts[1].node == 1);
    // Not a multiple: refused, with a reason naming the parameter.
    r = plan({0, 0, 0}, 2);
    CHECK(r.st == GPUCOLL_ERR_UNSUPPORTED);
    CHECK(std::strstr(gpucoll_last_error(), "virtual_node_size") != nullptr);
    r = plan({0, 0, 0, 0}, 3);
    CHECK(r.st == GPUCOLL_ERR_UNSUPPORTED);
    // Every L from 1 to 8 on 8 and 16 ranks of one host.
    for (int size : {8, 16})
        for (int L = 1; L <= 8; L++) {
            r = plan(std::vector<int>((size_t)size, 7), L);
            if (size % L) {
                CHECK(r.st == GPUCOLL_ERR_UNSUPPORTED);
                continue;
            }
            CHECK(r.st == GPUCOLL_SUCCESS && r.layouts[0].local_size == L && r.layouts[0].nnodes == size / L);
            for (int k = 0; k < size; k++) CHECK(r.rank_of[(size_t)k] == k); // consecutive ranks
            check_consistent(r);
        }
    // Virtual nodes inside real hosts: hosts of 4 and 8 ranks, nodes of 4: 3 x 4.
    std::vector<int> hosts;
    for (int k = 0; k < 12; k++) hosts.push_back(k % 3 == 0 ? 5 : 9); // host 5: 0,3,6,9; host 9: the rest
    r = plan(hosts, 4);
    CHECK(r.st == GPUCOLL_SUCCESS && r.layouts[0].nnodes == 3 && r.layouts[0].local_size == 4);
    CHECK((r.rank_of == std::vector<int>{0, 3, 6, 9, 1, 2, 4, 5, 7, 8, 10, 11}));
    check_consistent(r);
}

static void test_real_nodes()
{
    // Block mapping: 2 hosts x 2.
    Result r = plan({4, 4, 8, 8}, 0);
    CHECK(r.st == GPUCOLL_SUCCESS && r.layouts[0].nnodes == 2 && r.layouts[0].local_size == 2);
    CHECK((r.rank_of == std::vector<int>{0, 1, 2, 3}));
    check_consistent(r);
    // Round-robin mapping: node 0 = {0, 2}, node 1 = {1, 3}.
    r = plan({4, 8, 4, 8}, 0);
    CHECK(r.st == GPUCOLL_SUCCESS);
    CHECK((r.rank_of == std::vector<int>{0, 2, 1, 3}));
    CHECK(r.layouts[1].node == 1 && r.layouts[1].local_rank == 0);
    CHECK(r.layouts[2].node == 0 && r.layouts[2].local_rank == 1);
    check_consistent(r);
    // Keys need not be small or ordered.
    r = plan({99, -3, 99, -3, 99, -3}, 0);
    CHECK(r.st == GPUCOLL_SUCCESS && r.layouts[0].nnodes == 2 && r.layouts[0].local_size == 3);
    check_consistent(r);
    // Not uniform: 3 + 1.
    r = plan({0, 0, 0, 1}, 0);
    CHECK(r.st == GPUCOLL_ERR_UNSUPPORTED);
    CHECK(std::strstr(gpucoll_last_error(), "uniform") != nullptr);
    // Bad input.
    gpucoll_hier_layout_t l;
    int h[2] = {0, 0}, ro[2];
    CHECK(gpucoll_hier_plan(h, 2, 2, 0, &l, ro) == GPUCOLL_ERR_INVALID);
    CHECK(gpucoll_hier_plan(h, 2, 0, -1, &l, ro) == GPUCOLL_ERR_INVALID);
}

static void test_split()
{
    for (int L = 1; L <= 8; L++) {
        std::vector<size_t> counts;
        for (size_t c = 0; c < 100; c++) counts.push_back(c);
        for (size_t c : {1003u, 65537u, 1048581u, 1048576u}) counts.push_back(c);
        for (size_t c : counts) {
            size_t shard, tail;
            gpucoll_hier_split(c, L, &shard, &tail);
            CHECK(shard * (size_t)L + tail == c);
            CHECK(tail < (size_t)L);
            CHECK(shard == c / (size_t)L);
            if (c < (size_t)L) CHECK(shard == 0 && tail == c); // only the small path
        }
    }
    size_t shard, tail;
    gpucoll_hier_split(7, 0, &shard, &tail); // defensive: L < 1 counts as 1
    CHECK(shard == 7 && tail == 0);
}

static void test_object()
{
    // Created and destroyed without any group or GPU; never runs on host memory.
    gpucoll_hier_layout_t l = {2, 2, 1, 0};
    int rank_of[4] = {0, 1, 2, 3};
    gpucoll_hier_t *h = nullptr;
    CHECK(gpucoll_hier_create(&l, rank_of, &h) == GPUCOLL_SUCCESS && h);
    char desc[256];
    gpucoll_hier_describe(h, desc, sizeof desc);
    CHECK(std::strstr(desc, "2 nodes x 2 ranks") != nullptr);
    float x[8] = {};
    gpucoll_coll_args_t a = {GPUCOLL_COLL_ALLREDUCE, x, x + 4, 4, GPUCOLL_FLOAT32, GPUCOLL_OP_SUM, 0, 1};
    CHECK(gpucoll_hier_local_ok(h, &a) == 0); // host buffers, no UCX group
    CHECK(!gpucoll_hier_prepared(h));
    gpucoll_hier_destroy(h);
    gpucoll_hier_destroy(nullptr);
    // rank_of must be a permutation, the layout in range.
    int dup[4] = {0, 1, 1, 3};
    CHECK(gpucoll_hier_create(&l, dup, &h) == GPUCOLL_ERR_INVALID && !h);
    gpucoll_hier_layout_t bad = {2, 2, 2, 0};
    CHECK(gpucoll_hier_create(&bad, rank_of, &h) == GPUCOLL_ERR_INVALID && !h);
}

int main()
{
    test_virtual_nodes();
    test_real_nodes();
    test_split();
    test_object();
    std::printf("%s (%d failures)\n", failures ? "FAILED" : "passed", failures);
    return failures ? 1 : 0;
}
