// Where a queued or stream-ordered call switched to zero-copy in windows
// points its strided kernels (point_at_blocks, kernels/windows.cuh, the real
// code compiled for the host through kernel_host_shim.h): at the same bytes
// of every rank's buffers as a blocking call's host does (vector_piece and
// reduce_scatter_block_of, core/algo_select), for reduce_scatter_block and
// alltoall at 2-8 ranks and several block sizes; other kinds untouched.
#include "kernel_host_shim.h"

#include <cstdio>
#include <initializer_list>

#include "algo_select.hpp"
#include "peer_kernels.cuh"

using namespace gpucoll;

#include "../common/check.h"

namespace {

// Rank r's buffers as rank `me` maps them: far apart, so that a pointer
// into the wrong one cannot match.
char *base_of(int r, bool dst) { return reinterpret_cast<char *>((uintptr_t)(r + 1) << 36 | (dst ? 1ull << 32 : 0)); }

// The kernel's view after take_windows filled the bases, for rank `me`.
PeerArgs switched(PeerAlgo algo, int me, int n, size_t src_bytes, size_t dst_bytes)
{
    PeerArgs a{};
    a.algo = algo;
    a.rank = me;
    a.nranks = n;
    a.src = base_of(me, false);
    a.dst = base_of(me, true);
    a.window_src_bytes = src_bytes;
    a.window_dst_bytes = dst_bytes;
    for (int r = 0; r < n; r++) {
        a.peer_src[r] = base_of(r, false);
        a.peer_dst[r] = base_of(r, true);
        a.vbytes[r] = 12345; // whatever the scratch plan had: the switch must set it
    }
    point_at_blocks(a, &a);
    return a;
}

void reduce_scatter(int me, int n, size_t count)
{
    gpucoll_coll_args_t c{};
    c.kind = GPUCOLL_COLL_REDUCE_SCATTER_BLOCK;
    c.count = count;
    const size_t elt = 4, block = count * elt;
    PeerArgs a = switched(PeerAlgo::ReduceScatterDirect, me, n, block * n, block);
    size_t off = 0, cnt = 0;
    reduce_scatter_block_of(c, me, &off, &cnt);
    for (int r = 0; r < n; r++)
        CHECK(a.peer_src[r] == base_of(r, false) + off * elt, "reduce_scatter rank %d of %d, count %zu: peer %d", me,
              n, count, r);
}

void alltoall(int me, int n, size_t count)
{
    gpucoll_coll_args_t c{};
    c.kind = GPUCOLL_COLL_ALLTOALL;
    c.count = count;
    const size_t elt = 4, block = count * elt;
    PeerArgs a = switched(PeerAlgo::VectorPush, me, n, block * n, block * n);
    for (int p = 0; p < n; p++) {
        const Piece piece = vector_piece(c, me, p, elt, 0);
        CHECK(a.peer_src[p] == base_of(me, false) + piece.src_off && a.peer_dst[p] == base_of(p, true) + piece.dst_off &&
                  a.vbytes[p] == piece.bytes,
              "alltoall rank %d of %d, count %zu: piece for %d", me, n, count, p);
    }
}

void others_untouched()
{
    for (PeerAlgo algo : {PeerAlgo::AllreduceDirect, PeerAlgo::AllgatherDirect, PeerAlgo::BcastDirect}) {
        PeerArgs a = switched(algo, 1, 4, 1 << 20, 4 << 20);
        for (int r = 0; r < 4; r++)
            CHECK(a.peer_src[r] == base_of(r, false) && a.peer_dst[r] == base_of(r, true), "%s: peer %d moved",
                  algo_name(algo), r);
    }
}

} // namespace

int main()
{
    for (int n = 2; n <= 8; n++)
        for (int me = 0; me < n; me++)
            for (size_t count : {4ul, 1024ul, 262144ul, 1048580ul}) {
                reduce_scatter(me, n, count);
                alltoall(me, n, count);
            }
    others_untouched();
    printf("test_window_blocks: %s\n", failures ? "FAILED" : "switched calls point at the blocking call's blocks");
    return failures ? 1 : 0;
}
