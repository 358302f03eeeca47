// The start of a queued kernel on a team with registered windows
// (kernels/windows.h): every rank posts where its buffers are and reads
// every rank's posts of the same call, so every rank takes the same plan:
// the zero-copy one where all buffers lie in windows, else the call's own.
#pragma once

#include "peer_sync.cuh"

namespace gpucoll {

__device__ inline WindowPost *window_post(char *scratch, int from)
{
    return reinterpret_cast<WindowPost *>(scratch + kWindowPostOffset) + from;
}

// What a peer kernel runs: the call as planned (its arguments where they
// are), the zero-copy kernel from shared memory, or nothing (a wait gave up).
enum ZeroCopyVerdict : int { kRunNothing = -1, kRunPlanned = 0, kRunZeroCopy = 1 };

// Block 0 posts this rank's descriptors to every rank (one thread per
// rank); every block then waits for every rank's post of this call in its
// own scratch. Waiting on block 0 of the peers (not block b) keeps the
// progress rule of peer_barrier: a kernel's blocks start in index order and
// block 0 posts before it waits for anything, so a peer kernel that has any
// block on an SM has posted. Fills *s (shared memory) with the zero-copy
// plan's arguments when the verdict is kRunZeroCopy.
__device__ inline int take_windows(const PeerArgs &a, PeerArgs *s)
{
    const int t = threadIdx.x;
    if (blockIdx.x == 0 && t < a.nranks) {
        WindowPost *p = window_post(a.scratch[t], a.rank);
        p->src = a.window_src;
        p->dst = a.window_dst;
        p->src_bytes = a.window_src_bytes;
        p->dst_bytes = a.window_dst_bytes;
        __threadfence_system();
        gpu_store_release_sys(&p->call, a.epoch0);
    }
    __shared__ const char *srcs[kMaxPeers];
    __shared__ char *dsts[kMaxPeers];
    int failed = 0, missing = 0;
    if (t < a.nranks) {
        WindowPost *p = window_post(a.scratch[a.rank], t);
        if (!wait_flag(a, &p->call, a.epoch0)) {
            failed = 1;
        } else {
            // A later call's post cannot be here yet (see WindowPost); were it,
            // no rank could have read this call's, so none takes the windows.
            const volatile WindowPost *v = p;
            const bool same = v->call == a.epoch0;
            srcs[t] = same ? window_resolve(*a.windows, t, v->src, v->src_bytes) : nullptr;
            dsts[t] = same ? window_resolve(*a.windows, t, v->dst, v->dst_bytes) : nullptr;
            missing = !srcs[t] || !dsts[t];
        }
    }
    if (gpu_block_any(failed)) return kRunNothing;
    if (gpu_block_any(missing)) return kRunPlanned;
    if (t == 0) {
        if (blockIdx.x == 0) atomicAdd(const_cast<unsigned long long *>(&a.windows->zero_copy_calls), 1ull);
        *s = a;
        s->algo = a.window_algo;
        s->windows = nullptr;
        s->vector_ok = 1; // every descriptor was made of 16-byte aligned buffers (core/windows.cpp)
        for (int r = 0; r < a.nranks; r++) {
            s->peer_src[r] = r == a.rank ? a.src : srcs[r];
            s->peer_dst[r] = r == a.rank ? a.dst : dsts[r];
        }
    }
    __syncthreads();
    return kRunZeroCopy;
}

// The arguments of a zero-copy kernel, in shared memory (one copy of each
// zero-copy body serves both its callers): a call planned zero-copy as it
// is; a queued call on a team with windows as take_windows decides.
__device__ inline int zero_copy_args(const PeerArgs &a, PeerArgs *s)
{
    if (a.windows) return take_windows(a, s);
    if (threadIdx.x == 0) *s = a;
    __syncthreads();
    return kRunZeroCopy;
}

} // namespace gpucoll
