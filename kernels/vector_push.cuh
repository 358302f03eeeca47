// Zero-copy Allgatherv and Alltoallv by stores: rank r writes vbytes[p]
// bytes from peer_src[p] (in its own input) to peer_dst[p] (in rank p's
// mapped output). The host resolves the counts and displacements of the MPI
// call into those pointers, so one kernel serves both: Allgatherv sends the
// same block to every peer, Alltoallv a block of its own to each.
#pragma once
#include "peer_sync.cuh"

namespace gpucoll {

__device__ inline void vector_push(const PeerArgs &a)
{
    // Every peer's output is free to be written (its earlier work is done).
    if (!peer_barrier(a, 0, a.epoch0)) return;
    for (int i = 0; i < a.nranks; i++) {
        int p = (a.rank + i) % a.nranks; // stagger so ranks do not all write one peer at once
        const char *s = a.peer_src[p];
        char *d = a.peer_dst[p];
        size_t n = a.vbytes[p];
        if (n == 0 || d == s) continue; // in place, our own block is already there
        uintptr_t mis = (uintptr_t)s | (uintptr_t)d;
        // Displacements are in elements, so pieces are often only 4- or 8-byte aligned.
        if ((mis | n) % 4 == 0)
            copy_elems(reinterpret_cast<uint32_t *>(d), reinterpret_cast<const uint32_t *>(s), n / 4, mis % 16 == 0);
        else
            copy_elems(d, s, n, mis % 16 == 0);
    }
    peer_barrier(a, 1, a.epoch0); // every peer's stores into our output are done
}

} // namespace gpucoll
