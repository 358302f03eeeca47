// The exact agreement of a team's calls (core/call_check.cpp): every rank
// reaches a consistent verdict from the same published keys, mismatched
// alltoallv counts are a truncation on exactly the ranks that would be
// overrun, and the range check of peer offsets does not overflow.
#include <cstdint>
#include <cstdio>
#include <vector>

#include "call_check.hpp"

using namespace gpucoll;

#include "../common/check.h"

namespace {

gpucoll_coll_args_t args(gpucoll_coll_kind_t kind, size_t count, int root = 0)
{
    gpucoll_coll_args_t a{};
    a.kind = kind;
    a.count = count;
    a.dtype = GPUCOLL_FLOAT32;
    a.op = GPUCOLL_OP_SUM;
    a.root = root;
    a.local_ok = 1;
    return a;
}

// Verdicts of every rank for keys[0..n).
std::vector<KeyVerdict> verdicts(const std::vector<CallKey> &keys)
{
    std::vector<KeyVerdict> v;
    for (int r = 0; r < (int)keys.size(); r++) v.push_back(compare_keys(keys.data(), (int)keys.size(), r));
    return v;
}

// Match everywhere or nowhere: the property the settle round relies on.
bool consistent(const std::vector<KeyVerdict> &v)
{
    int matches = 0;
    for (KeyVerdict x : v) matches += x == KeyVerdict::Match;
    return matches == 0 || matches == (int)v.size();
}

void test_same_calls_match()
{
    for (int n = 1; n <= kMaxPeers; n++) {
        std::vector<CallKey> keys(n, call_key(args(GPUCOLL_COLL_ALLREDUCE, 1000), n));
        for (KeyVerdict v : verdicts(keys)) CHECK(v == KeyVerdict::Match, "n=%d", n);
    }
}

void test_each_field_counts()
{
    const int n = 4;
    for (int field = 0; field < 5; field++) {
        std::vector<CallKey> keys;
        for (int r = 0; r < n; r++) {
            gpucoll_coll_args_t a = args(GPUCOLL_COLL_BCAST, 64, 1);
            if (r == 2) {
                if (field == 0) a.kind = GPUCOLL_COLL_ALLREDUCE;
                if (field == 1) a.count = 65;
                if (field == 2) a.dtype = GPUCOLL_INT32;
                if (field == 3) a.op = GPUCOLL_OP_MAX;
                if (field == 4) a.root = 0;
            }
            keys.push_back(call_key(a, n));
        }
        auto v = verdicts(keys);
        CHECK(consistent(v), "field %d", field);
        for (int r = 0; r < n; r++) CHECK(v[r] != KeyVerdict::Match, "field %d rank %d", field, r);
        // A larger count on rank 2 overruns everyone else; rank 2 itself only sees a mismatch.
        if (field == 1) {
            CHECK(v[2] == KeyVerdict::Mismatch);
            CHECK(v[0] == KeyVerdict::Truncate && v[3] == KeyVerdict::Truncate);
        }
    }
    // A count differing by one bit high up: a hash of 14 bits could pass this, an exact key cannot.
    std::vector<CallKey> keys(3, call_key(args(GPUCOLL_COLL_ALLREDUCE, 1000), 3));
    keys[1] = call_key(args(GPUCOLL_COLL_ALLREDUCE, 1000 + (1ull << 40)), 3);
    for (KeyVerdict v : verdicts(keys)) CHECK(v != KeyVerdict::Match);
}

void test_vector_counts()
{
    const int n = 3;
    size_t counts[n] = {4, 0, 9}, displs[n] = {20, 0, 5}, other[n] = {4, 1, 9};
    std::vector<CallKey> keys;
    for (int r = 0; r < n; r++) {
        gpucoll_coll_args_t a = args(GPUCOLL_COLL_ALLGATHERV, 13);
        a.counts = r == 1 ? other : counts;
        a.displs = displs;
        keys.push_back(call_key(a, n));
    }
    auto v = verdicts(keys);
    CHECK(consistent(v));
    CHECK(v[0] != KeyVerdict::Match && v[2] != KeyVerdict::Match);
    // Rank 1 expects a block of 1 for itself where the others send 0: not an overrun of rank 1.
    CHECK(v[1] == KeyVerdict::Mismatch);
    // Displacements differ: the pieces would land elsewhere.
    keys.clear();
    size_t moved[n] = {21, 0, 5};
    for (int r = 0; r < n; r++) {
        gpucoll_coll_args_t a = args(GPUCOLL_COLL_ALLGATHERV, 13);
        a.counts = counts;
        a.displs = r == 0 ? moved : displs;
        keys.push_back(call_key(a, n));
    }
    for (KeyVerdict x : verdicts(keys)) CHECK(x == KeyVerdict::Mismatch);
}

// sends[i][j]: what rank i sends to rank j; recvs[j][i] what j expects from i.
std::vector<CallKey> alltoallv_keys(int n, const std::vector<std::vector<size_t>> &sends,
                                    const std::vector<std::vector<size_t>> &recvs)
{
    std::vector<CallKey> keys;
    for (int r = 0; r < n; r++) {
        gpucoll_coll_args_t a = args(GPUCOLL_COLL_ALLTOALLV, 0);
        a.dtype = GPUCOLL_UINT8;
        a.op = GPUCOLL_OP_NONE;
        a.counts = sends[r].data();
        a.rcounts = recvs[r].data();
        size_t total = 0;
        for (int p = 0; p < n; p++) total += sends[r][p] + recvs[r][p];
        a.count = total; // each rank's own: must not take part
        keys.push_back(call_key(a, n));
    }
    return keys;
}

void test_alltoallv_pairs()
{
    for (int n = 1; n <= kMaxPeers; n++) {
        std::vector<std::vector<size_t>> sends(n, std::vector<size_t>(n)), recvs(n, std::vector<size_t>(n));
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++) sends[i][j] = recvs[j][i] = (size_t)((i * 7 + j * 3) % 5) * 4;
        for (KeyVerdict v : verdicts(alltoallv_keys(n, sends, recvs))) CHECK(v == KeyVerdict::Match, "n=%d", n);
        if (n < 2) continue;
        // Every single mismatched pair, larger and smaller.
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++)
                for (int delta : {+4, -4}) {
                    auto s = sends;
                    if (delta < 0 && s[i][j] == 0) continue;
                    s[i][j] += delta;
                    auto v = verdicts(alltoallv_keys(n, s, recvs));
                    CHECK(consistent(v), "n=%d pair %d->%d", n, i, j);
                    for (int r = 0; r < n; r++) {
                        KeyVerdict want = delta > 0 && r == j ? KeyVerdict::Truncate : KeyVerdict::Mismatch;
                        CHECK(v[r] == want, "n=%d pair %d->%d delta %d rank %d: verdict %d", n, i, j, delta, r,
                              (int)v[r]);
                    }
                }
    }
}

void test_ranges()
{
    CHECK(range_fits(0, 0, 0));
    CHECK(range_fits(0, 100, 100));
    CHECK(!range_fits(0, 101, 100));
    CHECK(range_fits(60, 40, 100));
    CHECK(!range_fits(60, 41, 100));
    CHECK(!range_fits(101, 0, 100));
    CHECK(!range_fits(8, UINT64_MAX - 4, 100)); // would wrap if added
    CHECK(!range_fits(UINT64_MAX, 2, 100));
    size_t src, dst;
    gpucoll_coll_args_t a = args(GPUCOLL_COLL_ALLGATHER, 10);
    direct_extent(a, 4, 4, &src, &dst);
    CHECK(src == 40 && dst == 160);
    a.kind = GPUCOLL_COLL_REDUCE_SCATTER_BLOCK;
    direct_extent(a, 4, 4, &src, &dst);
    CHECK(src == 160 && dst == 40);
    a.kind = GPUCOLL_COLL_ALLREDUCE;
    direct_extent(a, 4, 8, &src, &dst);
    CHECK(src == 80 && dst == 80);
}

} // namespace

int main()
{
    test_same_calls_match();
    test_each_field_counts();
    test_vector_counts();
    test_alltoallv_pairs();
    test_ranges();
    std::printf("test_call_check: %d failures\n", failures);
    return failures ? 1 : 0;
}
