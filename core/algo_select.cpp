#include "algo_select.hpp"

namespace gpucoll {

namespace {

struct Entry {
    const char *name;   // what verbose output and the tests call it
    gpucoll_coll_kind_t kind;
    PeerAlgo algo;      // the kernel's entry (kernels/peer_kernels.cu dispatches on it)
    Protocol protocol;
    bool reduces;
    int areas_per_rank; // chunk-sized areas per rank: 0 = one in all, 1 = one per rank
    bool strided;
    // Some rank ends without waiting for the others (bcast's root, reduce's
    // senders): sound only when the host agreement of every blocking call
    // keeps ranks from running ahead, so queued calls never take it
    // (kernels/ll_lines.cuh).
    bool one_way = false;
};

constexpr auto kNoKind = (gpucoll_coll_kind_t)-1;

// The one table of algorithms. For each kind the first row whose condition
// holds serves (make_plan); zero-copy rows need every rank's buffers mapped.
constexpr Entry kTable[] = {
    {"allreduce_ll", GPUCOLL_COLL_ALLREDUCE, PeerAlgo::AllreduceLL, Protocol::LL, true, 0, false},
    {"allreduce_oneshot", GPUCOLL_COLL_ALLREDUCE, PeerAlgo::AllreduceOneShot, Protocol::Scratch, true, 0, false},
    {"allreduce_push", GPUCOLL_COLL_ALLREDUCE, PeerAlgo::AllreducePush, Protocol::ZeroCopyPush, true, 0, false},
    {"allreduce_writes", GPUCOLL_COLL_ALLREDUCE, PeerAlgo::AllreduceWrites, Protocol::ZeroCopyPush, true, 0, false},
    {"allreduce_direct", GPUCOLL_COLL_ALLREDUCE, PeerAlgo::AllreduceDirect, Protocol::ZeroCopyPull, true, 0, false},
    {"allreduce_twoshot", GPUCOLL_COLL_ALLREDUCE, PeerAlgo::AllreduceTwoShot, Protocol::Scratch, true, 0, false},
    {"reduce_ll", GPUCOLL_COLL_REDUCE, PeerAlgo::ReduceLL, Protocol::LL, true, 0, false, true},
    {"reduce", GPUCOLL_COLL_REDUCE, PeerAlgo::Reduce, Protocol::Scratch, true, 0, false},
    {"reduce_scatter_direct", GPUCOLL_COLL_REDUCE_SCATTER_BLOCK, PeerAlgo::ReduceScatterDirect, Protocol::ZeroCopyPull,
     true, 0, true},
    {"reduce_scatter_block_ll", GPUCOLL_COLL_REDUCE_SCATTER_BLOCK, PeerAlgo::ReduceScatterBlockLL, Protocol::LL, true,
     0, true},
    {"reduce_scatter_block", GPUCOLL_COLL_REDUCE_SCATTER_BLOCK, PeerAlgo::ReduceScatterBlock, Protocol::Scratch, true,
     1, true},
    {"allgather_push", GPUCOLL_COLL_ALLGATHER, PeerAlgo::AllgatherPush, Protocol::ZeroCopyPush, false, 0, true},
    {"allgather_direct", GPUCOLL_COLL_ALLGATHER, PeerAlgo::AllgatherDirect, Protocol::ZeroCopyPull, false, 0, true},
    {"allgather_ll", GPUCOLL_COLL_ALLGATHER, PeerAlgo::AllgatherLL, Protocol::LL, false, 0, true},
    {"allgather", GPUCOLL_COLL_ALLGATHER, PeerAlgo::Allgather, Protocol::Scratch, false, 0, true},
    {"bcast_push", GPUCOLL_COLL_BCAST, PeerAlgo::BcastPush, Protocol::ZeroCopyPush, false, 0, false},
    {"bcast_direct", GPUCOLL_COLL_BCAST, PeerAlgo::BcastDirect, Protocol::ZeroCopyPull, false, 0, false},
    {"bcast_ll", GPUCOLL_COLL_BCAST, PeerAlgo::BcastLL, Protocol::LL, false, 0, false, true},
    {"bcast", GPUCOLL_COLL_BCAST, PeerAlgo::Bcast, Protocol::Scratch, false, 0, false},
    // Zero-copy alltoall is alltoallv's kernel with equal blocks: each byte moves once, not in and out of
    // scratch (H100, 2 ranks under MPS, 128 MiB: see docs/performance.md).
    {"alltoall_push", GPUCOLL_COLL_ALLTOALL, PeerAlgo::VectorPush, Protocol::ZeroCopyPush, false, 0, true},
    {"alltoall_ll", GPUCOLL_COLL_ALLTOALL, PeerAlgo::AlltoallLL, Protocol::LL, false, 0, true},
    {"alltoall", GPUCOLL_COLL_ALLTOALL, PeerAlgo::Alltoall, Protocol::Scratch, false, 1, true},
    // The vector kinds run zero-copy or not at all (the caller stages them).
    {"vector_push", GPUCOLL_COLL_ALLGATHERV, PeerAlgo::VectorPush, Protocol::ZeroCopyPush, false, 0, false},
    {"reduce_scatter_direct", GPUCOLL_COLL_REDUCE_SCATTER, PeerAlgo::ReduceScatterDirect, Protocol::ZeroCopyPull, true,
     0, false},
    {"vector_push", GPUCOLL_COLL_ALLTOALLV, PeerAlgo::VectorPush, Protocol::ZeroCopyPush, false, 0, false},
    // No collective: MPI_Reduce_local and the inter-node reducer (core/local_reduce.cpp).
    {"local_reduce", kNoKind, PeerAlgo::LocalReduce, Protocol::Local, true, 0, false},
};

// Whether zero-copy `kind` runs by stores (push) or loads (pull).
// Auto pushes: on 4 x H200 at 256 MiB, push against pull, allgather 592 vs
// 676 us, bcast 818 vs 1322 us, allreduce see kWritesMinBytes
// (docs/performance.md). Reduce_scatter(_block) has only a pull kernel (a
// reduction reads all inputs), Allgatherv, Alltoall(v) only a push kernel.
bool direct_push(gpucoll_coll_kind_t kind, const gpucoll_config_t &cfg)
{
    if (kind == GPUCOLL_COLL_REDUCE_SCATTER_BLOCK || kind == GPUCOLL_COLL_REDUCE_SCATTER) return false;
    if (kind == GPUCOLL_COLL_ALLGATHERV || kind == GPUCOLL_COLL_ALLTOALLV || kind == GPUCOLL_COLL_ALLTOALL)
        return true;
    return cfg.direct_style != GPUCOLL_DIRECT_PULL;
}

// Zero-copy allreduce by stores: from 3 ranks and 16 MiB on, every byte as
// a store through the owners' scratch (4 x H200, 256 MiB: 1228 us against
// 1348 reading the inputs and pushing the results, 1328 pulling both; 64 MiB:
// 323, 358, 366); below that, or on 2 ranks (64 MiB: 227 against 259), the
// loads of the inputs cost less than the trip through scratch.
constexpr size_t kWritesMinBytes = 16u << 20;

// All ranks on one GPU (MPS), from this many on: zero-copy allreduce pulls
// both halves (H100, 4 ranks: 16 MiB 128 us against 170 by stores through
// scratch, 64 MiB 456 against 650, 256 MiB 1495 against 1915); on 2 ranks
// the pushed results cost less (64 MiB 148 against 245). docs/performance.md.
constexpr int kOneGpuPullMinRanks = 3;

// Allreduce: the size picks one-shot (latency) or a two-shot (bandwidth);
// the parameter can force either. Zero-copy when the buffers are mapped;
// flag-in-data (LL) when `ll` says the call may take it (make_plan).
PeerAlgo allreduce_algo(size_t bytes, int nranks, const gpucoll_config_t &cfg, bool direct, bool ll,
                        const GpuShare &share)
{
    const bool one_gpu_pull = share.ranks == nranks && nranks >= kOneGpuPullMinRanks &&
                              cfg.direct_style == GPUCOLL_DIRECT_AUTO;
    PeerAlgo zero_copy = !direct_push(GPUCOLL_COLL_ALLREDUCE, cfg) || one_gpu_pull ? PeerAlgo::AllreduceDirect
                         : nranks >= 3 && bytes >= kWritesMinBytes                ? PeerAlgo::AllreduceWrites
                                                                                  : PeerAlgo::AllreducePush;
    switch (cfg.allreduce_algorithm) {
    case GPUCOLL_ALLREDUCE_ONESHOT: return PeerAlgo::AllreduceOneShot;
    case GPUCOLL_ALLREDUCE_TWOSHOT: return PeerAlgo::AllreduceTwoShot;
    case GPUCOLL_ALLREDUCE_DIRECT: return direct ? zero_copy : PeerAlgo::AllreduceTwoShot;
    case GPUCOLL_ALLREDUCE_WRITES: return direct ? PeerAlgo::AllreduceWrites : PeerAlgo::AllreduceTwoShot;
    default:
        if (ll) return PeerAlgo::AllreduceLL;
        if (bytes <= cfg.oneshot_max_bytes) return PeerAlgo::AllreduceOneShot;
        return direct ? zero_copy : PeerAlgo::AllreduceTwoShot;
    }
}

} // namespace

bool make_plan(const gpucoll_coll_args_t &a, int rank, int nranks, const gpucoll_config_t &cfg, bool direct,
               Plan *plan, const GpuShare &share, bool queued)
{
    (void)rank;
    if (nranks < 1 || nranks > kMaxPeers || a.count == 0) return false;
    size_t elt = gpucoll_dtype_size(a.dtype);
    if (elt == 0) return false;
    // The flag-in-data kernels serve small messages through scratch; a
    // zero-copy call (direct_min_bytes set below ll_max_bytes) stays zero-copy.
    // In-place alltoall_ll could overwrite a block before it is sent.
    bool ll = !direct && a.count * elt <= cfg.ll_max_bytes &&
              (a.kind != GPUCOLL_COLL_ALLTOALL || a.sbuf);
    PeerAlgo want =
        a.kind == GPUCOLL_COLL_ALLREDUCE ? allreduce_algo(a.count * elt, nranks, cfg, direct, ll, share)
                                         : PeerAlgo::Bcast;
    bool push = direct && direct_push(a.kind, cfg);
    for (const Entry &e : kTable) {
        if (e.kind != a.kind || (a.kind == GPUCOLL_COLL_ALLREDUCE && e.algo != want)) continue;
        if (a.kind != GPUCOLL_COLL_ALLREDUCE &&
            (is_direct(e.algo) != direct || (direct && (e.protocol == Protocol::ZeroCopyPush) != push) ||
             (is_ll(e.algo) && !ll)))
            continue;
        if (queued && (e.one_way || (is_direct(e.algo) && !direct))) continue;
        if (e.reduces && !gpucoll_op_valid(a.op, a.dtype)) return false;
        if (!e.reduces && a.op != GPUCOLL_OP_NONE) return false;
        plan->algo = e.algo;
        // Areas in scratch start at multiples of the chunk: keep it a multiple
        // of 16 elements so that every area stays 16-byte aligned.
        plan->chunk = (a.count + 15) / 16 * 16;
        plan->scratch_blocks_per_step = e.areas_per_rank ? nranks : (e.algo == PeerAlgo::AllreduceTwoShot ? 2 : 1);
        plan->strided = e.strided;
        return true;
    }
    return false;
}

size_t max_chunk_elems(const Plan &plan, size_t half_bytes, size_t elt)
{
    return half_bytes / (elt * (size_t)plan.scratch_blocks_per_step) / 16 * 16;
}

namespace {
size_t plan_bytes(const Plan &plan, size_t elt, int nranks)
{
    return plan.chunk * elt * (plan.strided ? (size_t)nranks : 1);
}
} // namespace

bool resident_serves(const Plan &plan, size_t elt, int nranks, const gpucoll_config_t &cfg)
{
    return cfg.resident_us > 0 && !is_direct(plan.algo) && plan.algo != PeerAlgo::LocalReduce &&
           plan_bytes(plan, elt, nranks) <= cfg.resident_max_bytes;
}

int co_resident_blocks(const GpuShare &share, bool thread_multiple)
{
    const int calls = (share.ranks > 1 ? share.ranks : 1) * (thread_multiple ? kCallsAtOnce : 1);
    const int sms = share.sms > 0 ? share.sms : kMaxBlocks;
    const int cap = sms / calls;
    return cap < 1 ? 1 : cap > kMaxBlocks ? kMaxBlocks : cap;
}

int blocks_for(const Plan &plan, size_t elt, const gpucoll_config_t &cfg, int nranks, const GpuShare &share)
{
    size_t bytes = plan_bytes(plan, elt, nranks);
    // Below a few MiB the kernels wait on the links' latency, not their
    // bandwidth: many small blocks keep more loads in flight (4 ranks, H200:
    // a 64 KiB one-shot allreduce takes 33 us on 2 blocks, 19 us on 16).
    // Zero-copy kernels move large messages: 64 KiB per block, up to the cap
    // (128 blocks beat 64 by 3% at 256 MiB). docs/performance.md has the sweep.
    size_t per_block = cfg.block_bytes ? cfg.block_bytes : is_direct(plan.algo) ? 64 * 1024 : 4 * 1024;
    size_t want = (bytes + per_block - 1) / per_block;
    size_t cap = (size_t)cfg.max_blocks < (size_t)kMaxBlocks ? (size_t)cfg.max_blocks : (size_t)kMaxBlocks;
    // One grid for every size a resident kernel serves. 32 blocks cost small
    // calls nothing measurable over 1-16 and suit 256 KiB-1 MiB best (block
    // sweep, docs/performance.md).
    if (resident_serves(plan, elt, nranks, cfg)) want = (size_t)cfg.resident_blocks;
    const size_t co = (size_t)co_resident_blocks(share, cfg.thread_multiple != 0);
    if (cap > co) cap = co;
    if (want < 1) want = 1;
    return (int)(want < cap ? want : cap);
}

Piece vector_piece(const gpucoll_coll_args_t &a, int rank, int p, size_t elt, size_t peer_rdispl)
{
    if (a.kind == GPUCOLL_COLL_ALLGATHERV) // our block, to the same place in everyone's output
        return Piece{0, a.displs[rank] * elt, a.counts[rank] * elt};
    if (a.kind == GPUCOLL_COLL_ALLTOALL) // block p of our input, to block `rank` of p's output
        return Piece{p * a.count * elt, rank * a.count * elt, a.count * elt};
    return Piece{a.displs[p] * elt, peer_rdispl * elt, a.counts[p] * elt}; // alltoallv
}

void reduce_scatter_block_of(const gpucoll_coll_args_t &a, int rank, size_t *offset, size_t *count)
{
    if (a.kind == GPUCOLL_COLL_REDUCE_SCATTER_BLOCK) {
        *offset = (size_t)rank * a.count;
        *count = a.count;
        return;
    }
    *offset = 0;
    for (int r = 0; r < rank; r++) *offset += a.counts[r];
    *count = a.counts[rank];
}

const char *algo_name(PeerAlgo algo)
{
    for (const Entry &e : kTable)
        if (e.algo == algo) return e.name;
    return "?";
}

Protocol algo_protocol(PeerAlgo algo)
{
    for (const Entry &e : kTable)
        if (e.algo == algo) return e.protocol;
    return Protocol::Local;
}

int algo_rows(gpucoll_coll_kind_t kind, PeerAlgo *out, int max)
{
    int n = 0;
    for (const Entry &e : kTable)
        if (e.kind == kind && n < max) out[n++] = e.algo;
    return n;
}

} // namespace gpucoll
