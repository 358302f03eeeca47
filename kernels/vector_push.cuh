// Zero-copy Allgatherv and Alltoallv by stores: rank r writes vbytes[p]
// bytes from peer_src[p] (in its own input) to peer_dst[p] (in rank p's
// mapped output). The host resolves the counts and displacements of the MPI
// call into those pointers, so one kernel serves both: Allgatherv sends the
// same block to every peer, Alltoallv a block of its own to each.
#pragma once
#include "peer_sync.cuh"

namespace gpucoll {

// Piece p: from our input to rank p's output.
__device__ inline void push_piece(const PeerArgs &a, int p)
{
    const char *s = a.peer_src[p];
    char *d = a.peer_dst[p];
    const size_t n = a.vbytes[p];
    if (n == 0 || d == s) return; // in place, our own block is already there
    const uintptr_t mis = (uintptr_t)s | (uintptr_t)d;
    // Displacements are in elements, so pieces are often only 4- or 8-byte aligned.
    if ((mis | n) % 4 == 0)
        copy_elems(reinterpret_cast<uint32_t *>(d), reinterpret_cast<const uint32_t *>(s), n / 4, mis % 16 == 0);
    else
        copy_elems(d, s, n, mis % 16 == 0);
}

// Whether our own piece (a copy within this GPU) can go with peer p's in
// one loop: both there to move and 16-byte aligned.
__device__ inline bool pairs_with_own(const PeerArgs &a, int p)
{
    const int r = a.rank;
    if (a.vbytes[r] == 0 || a.vbytes[p] == 0 || a.peer_dst[r] == a.peer_src[r]) return false;
    const uintptr_t mis = (uintptr_t)a.peer_src[r] | (uintptr_t)a.peer_dst[r] | (uintptr_t)a.peer_src[p] |
                          (uintptr_t)a.peer_dst[p] | a.vbytes[r] | a.vbytes[p];
    return mis % 16 == 0;
}

__device__ inline void vector_push(const PeerArgs &a)
{
    // Every peer's output is free to be written (its earlier work is done).
    if (!peer_barrier(a, 0, a.epoch0)) return;
    // Our own piece moves beside the first peer's, its loads and stores in
    // flight with the stores over NVLink, rather than before them, when the
    // links stood idle: alone it added a local copy's time to the call.
    const int first = (a.rank + 1) % a.nranks;
    int i = 0;
    if (a.nranks > 1 && pairs_with_own(a, first)) {
        const size_t n0 = a.vbytes[a.rank] / 4, n1 = a.vbytes[first] / 4;
        copy_elems_pair(reinterpret_cast<uint32_t *>(a.peer_dst[a.rank]),
                        reinterpret_cast<const uint32_t *>(a.peer_src[a.rank]), n0,
                        reinterpret_cast<uint32_t *>(a.peer_dst[first]),
                        reinterpret_cast<const uint32_t *>(a.peer_src[first]), n1, true, n0 > n1 ? n0 : n1);
        i = 2;
    }
    // Staggered, so that ranks do not all write one peer at once.
    for (; i < a.nranks; i++) push_piece(a, (a.rank + i) % a.nranks);
    peer_barrier(a, 1, a.epoch0); // every peer's stores into our output are done
}

} // namespace gpucoll
