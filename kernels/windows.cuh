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

// Rank r's buffer of descriptor d as this GPU maps it. An export's row may
// be filled while this kernel runs (core/auto_windows.cpp writes the row,
// then its number): its number is read first.
__device__ inline char *resolve_post(const WindowTable *tb, int r, uint64_t d, uint64_t bytes)
{
    if (is_export_desc(d)) {
        const volatile uint64_t *seq = &tb->xseq[r][export_slot(d)];
        if (!export_seq_matches(*seq, d)) return nullptr;
        __threadfence();
    }
    return window_resolve(*tb, r, d, bytes);
}

// Exports are mapped by each rank on its own time, so the ranks' tables
// may differ where registered windows cannot: block 0 posts whether this
// rank resolved every post (into every rank's scratch, after the posts it
// waited for), every block waits for every rank's vote. 1: all could, 0:
// some could not, -1: a wait gave up. A rank's next vote in a slot comes
// from its next call, which starts after this call's barriers, which come
// after every block's reading of this one.
__device__ inline int vote_windows(const PeerArgs &a, bool resolved)
{
    const int t = threadIdx.x;
    const uint64_t mine = a.epoch0 << 1 | (resolved ? 1 : 0);
    if (blockIdx.x == 0 && t < a.nranks) gpu_store_release_sys(&window_post(a.scratch[t], a.rank)->vote, mine);
    int failed = 0, no = 0;
    if (t < a.nranks) {
        const uint64_t *v = &window_post(a.scratch[a.rank], t)->vote;
        if (!wait_flag(a, v, a.epoch0 << 1)) failed = 1;
        else no = !(gpu_load_acquire_sys(v) & 1);
    }
    if (gpu_block_any(failed)) return -1;
    return gpu_block_any(no) ? 0 : 1;
}

// The strided zero-copy kernels take pointers at the blocks they move, as
// the host sets them for mapped buffers of a blocking call (place_pieces,
// core/team.cpp), for the two kinds windows serve: a reduce-scatter reads its
// block of every rank's input; an alltoall writes block p of its input to
// block `rank` of rank p's output. Blocks are 16-byte multiples
// (zero_copy_candidate), so vector_ok holds.
__device__ inline void point_at_blocks(const PeerArgs &a, PeerArgs *s)
{
    if (s->algo == PeerAlgo::ReduceScatterDirect) {
        const uint64_t block = a.window_dst_bytes;
        for (int r = 0; r < a.nranks; r++) s->peer_src[r] += a.rank * block;
    } else if (s->algo == PeerAlgo::VectorPush) {
        const uint64_t block = a.window_src_bytes / a.nranks;
        for (int r = 0; r < a.nranks; r++) {
            s->peer_src[r] = a.src + r * block;
            s->peer_dst[r] += a.rank * block;
            s->vbytes[r] = block;
        }
    }
}

// Block 0 posts this rank's descriptors to every rank (one thread per
// rank); every block then waits for every rank's post of this call in its
// own scratch. Waiting on block 0 of the peers (not block b) keeps the
// progress rule of peer_barrier: a kernel's blocks start in index order and
// block 0 posts before it waits for anything, so a peer kernel that has any
// block on an SM has posted (and votes once it has read every post). Fills
// *s (shared memory) with the zero-copy plan's arguments when the verdict
// is kRunZeroCopy.
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
    int failed = 0, missing = 0, exported = 0;
    if (t < a.nranks) {
        WindowPost *p = window_post(a.scratch[a.rank], t);
        if (!wait_flag(a, &p->call, a.epoch0)) {
            failed = 1;
        } else {
            // A later call's post cannot be here yet (see WindowPost); were it,
            // no rank could have read this call's, so none takes the windows.
            const volatile WindowPost *v = p;
            const bool same = v->call == a.epoch0;
            const uint64_t sd = v->src, dd = v->dst;
            exported = same && (is_export_desc(sd) || is_export_desc(dd));
            srcs[t] = same ? resolve_post(a.windows, t, sd, v->src_bytes) : nullptr;
            dsts[t] = same ? resolve_post(a.windows, t, dd, v->dst_bytes) : nullptr;
            missing = !srcs[t] || !dsts[t];
        }
    }
    if (gpu_block_any(failed)) return kRunNothing;
    // Every rank read the same posts, so every rank votes or none does.
    if (gpu_block_any(exported)) {
        const int all = vote_windows(a, !gpu_block_any(missing));
        if (all < 0) return kRunNothing;
        if (!all) return kRunPlanned;
    } else if (gpu_block_any(missing)) {
        return kRunPlanned;
    }
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
        point_at_blocks(a, s);
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
