#include "call_check.hpp"

#include <string.h>

namespace gpucoll {

CallKey call_key(const gpucoll_coll_args_t &a, int nranks)
{
    CallKey k;
    memset(&k, 0, sizeof k); // padding too: keys compare with memcmp
    k.kind = (uint32_t)a.kind;
    k.dtype = (uint32_t)a.dtype;
    k.op = (uint32_t)a.op;
    k.root = a.root;
    const bool own_counts = a.kind == GPUCOLL_COLL_ALLTOALLV;
    k.count = own_counts ? 0 : a.count;
    for (int r = 0; r < nranks && r < kMaxPeers; r++) {
        if (own_counts) {
            k.sends[r] = a.counts ? a.counts[r] : 0;
            k.recvs[r] = a.rcounts ? a.rcounts[r] : 0;
            continue;
        }
        if (a.counts) k.counts[r] = a.counts[r];
        if (a.displs) k.displs[r] = a.displs[r];
    }
    return k;
}

namespace {
// Everything but alltoallv's own counts.
bool same_call(const CallKey &x, const CallKey &y)
{
    return x.kind == y.kind && x.dtype == y.dtype && x.op == y.op && x.root == y.root && x.count == y.count &&
           memcmp(x.counts, y.counts, sizeof x.counts) == 0 && memcmp(x.displs, y.displs, sizeof x.displs) == 0;
}
} // namespace

KeyVerdict compare_keys(const CallKey *keys, int nranks, int me)
{
    const CallKey &mine = keys[me];
    bool mismatch = false, truncate = false;
    for (int r = 0; r < nranks; r++) {
        const CallKey &k = keys[r];
        if (same_call(k, mine)) continue;
        mismatch = true;
        if (k.kind != mine.kind) continue;
        // What a peer would send us that we did not make room for.
        if (k.count > mine.count) truncate = true;
        if (k.counts[me] > mine.counts[me]) truncate = true;
    }
    if (!mismatch && mine.kind == GPUCOLL_COLL_ALLTOALLV) {
        for (int i = 0; i < nranks; i++)
            for (int j = 0; j < nranks; j++) {
                if (keys[i].sends[j] == keys[j].recvs[i]) continue;
                mismatch = true;
                if (j == me && keys[i].sends[me] > mine.recvs[i]) truncate = true;
            }
    }
    return truncate ? KeyVerdict::Truncate : mismatch ? KeyVerdict::Mismatch : KeyVerdict::Match;
}

void direct_extent(const gpucoll_coll_args_t &a, int nranks, size_t elt, size_t *src_bytes, size_t *dst_bytes)
{
    const size_t block = a.count * elt, all = block * (size_t)nranks;
    switch (a.kind) {
    case GPUCOLL_COLL_ALLGATHER: *src_bytes = block; *dst_bytes = all; break;
    case GPUCOLL_COLL_REDUCE_SCATTER_BLOCK:
    case GPUCOLL_COLL_ALLTOALL: *src_bytes = all; *dst_bytes = a.kind == GPUCOLL_COLL_ALLTOALL ? all : block; break;
    default: *src_bytes = *dst_bytes = block; break;
    }
}

} // namespace gpucoll
