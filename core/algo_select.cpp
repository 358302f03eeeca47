#include "algo_select.hpp"

#include <initializer_list>

namespace gpucoll {

namespace {

// What a call offers the rows of the table (make_plan fills it in).
struct Call {
    size_t bytes; // count x type size
    int nranks;
    const gpucoll_config_t &cfg;
    bool direct; // every rank's buffers are mapped by the others
    bool ll;     // the flag-in-data kernels may serve: small enough, not zero-copy, not alltoall in place
    const GpuShare &share;
};

// Measured thresholds of the automatic choice that are not parameters. The
// defaults of the ones that are (oneshot_max_bytes, ll_max_bytes,
// direct_min_bytes) are GPUCOLL_DEFAULT_* in common/gpucoll_config.h, with
// their measurements.

// Zero-copy allreduce by stores: from 3 ranks and 16 MiB on, every byte as
// a store through the owners' scratch (4 x H200, 256 MiB: 1228 us against
// 1348 reading the inputs and pushing the results, 1328 pulling both; 64 MiB:
// 323, 358, 366); below that, or on 2 ranks (64 MiB: 227 against 259), the
// loads of the inputs cost less than the trip through scratch.
constexpr size_t kWritesMinBytes = 16u << 20;
constexpr int kWritesMinRanks = 3;

// All ranks on one GPU (MPS): zero-copy allreduce reads the inputs and
// pushes the results at every rank count and size, neither pulling both
// halves nor storing through the owners' scratch (H100, 64 MiB: 4 ranks
// 224 us against 405 pulling and 628 by stores through scratch; 3 ranks
// 179, 301, 461; 16 MiB, 4 ranks: 83, 115, 168; docs/performance.md,
// session 13). Session 10 chose pulling from 3 ranks on, measured against
// the stores through scratch only.
constexpr bool on_one_gpu(const Call &c) { return c.nranks > 1 && c.share.ranks == c.nranks; }

// Conditions of the automatic choice (Entry::chosen_when).
constexpr bool always(const Call &) { return true; }
// A call whose buffers are all mapped runs zero-copy; allreduce's one-shot
// is the exception (below).
constexpr bool not_mapped(const Call &c) { return !c.direct; }
// Zero-copy by stores or by loads, where a kind has both. Auto stores: on
// 4 x H200 at 256 MiB, push against pull, allgather 592 vs 676 us, bcast
// 818 vs 1322 us (docs/performance.md).
constexpr bool style_pushes(const Call &c) { return c.cfg.direct_style != GPUCOLL_DIRECT_PULL; }
constexpr bool style_pulls(const Call &c) { return !style_pushes(c); }
constexpr bool allreduce_pushes(const Call &c) { return style_pushes(c); }
constexpr bool allreduce_writes(const Call &c)
{
    const bool one_gpu_push = on_one_gpu(c) && c.cfg.direct_style == GPUCOLL_DIRECT_AUTO;
    return c.nranks >= kWritesMinRanks && c.bytes >= kWritesMinBytes && !one_gpu_push;
}
// All ranks on one GPU: bcast with a slice for the root too (H100 under
// MPS, 64 MiB: see docs/performance.md, session 14); bcast_push leaves the
// root's SMs idle.
constexpr bool bcast_spreads(const Call &c) { return on_one_gpu(c) && c.cfg.direct_style == GPUCOLL_DIRECT_AUTO; }
// Bcast through scratch with each byte leaving the root once, the receivers
// forwarding it: from 4 MiB with 3 ranks or more, from 64 MiB with 2, each
// rank on a GPU of its own (4 x H200, 20 calls a size, nonblocking / enqueued
// / graph, us; session 24). 4 ranks: 256 MiB 904 / 904 / 902 against 2247 /
// 2239 / 2239 for `bcast`; 64 MiB 299 / 291 / 290 against 589 / 603 / 601;
// 4 MiB 38 / 31 / 29 against 42 / 49 / 47; 1 MiB (session 20) 28 / 25 / 23
// against 23 / 24 / 22. 2 ranks: 256 MiB 764 / 755 / 753 against 787 / 782 /
// 780; 64 MiB 219 / 216 / 213 against 224 / 223 / 222; 16 MiB 66 / 63 / 61
// against 43 / 61 / 59. Not measured with ranks sharing a GPU: not taken there.
constexpr size_t kForwardMinBytes = 4u << 20;
constexpr size_t kForwardMinBytesTwoRanks = 64u << 20;
// Two ranks, a GPU each: the root's stores into the receiver's buffer
// (bcast_push) took longer than the scratch plans below 256 MiB, even with
// the buffers mapped (2 x H200, session 31, the slower rank's time, two
// runs: 4 MiB 30-33 us against 27-28 for `bcast`, 16 MiB 65-67 against
// 63-65, 64 MiB 272-277 against 216-221 for `bcast_forward`; 256 MiB
// 756-766 against 759; 1 GiB, session 28: 2884 against 2927). Registered
// windows switch at the same size for the same reason (core/windows.cpp).
// Below 4 MiB (direct_min_bytes lowered) not measured: zero-copy as before.
constexpr size_t kBcastZeroCopyMinBytesTwoRanks = 256u << 20;
constexpr size_t kBcastScratchWhenMappedFrom = 4u << 20;
constexpr bool bcast_scratch_when_mapped(const Call &c)
{
    return c.direct && c.nranks == 2 && c.share.ranks <= 1 && c.cfg.direct_style == GPUCOLL_DIRECT_AUTO &&
           c.bytes >= kBcastScratchWhenMappedFrom && c.bytes < kBcastZeroCopyMinBytesTwoRanks;
}
constexpr bool bcast_on_scratch(const Call &c) { return not_mapped(c) || bcast_scratch_when_mapped(c); }
// Two ranks, a GPU each: zero-copy allgather, alltoall and reduce_scatter
// lost to their scratch plans below 16 MiB of all ranks' blocks, whose
// copies cost less than mapping the buffers and agreeing on them (2 x H200,
// blocking, 300 calls a size, two runs, us, zero-copy against scratch: 4
// MiB 26.3 / 24.2, 25.8 / 24.8, 26.6 / 23.4; 8 MiB 32.6 / 31.1, 33.5 /
// 32.4, 34.7 / 30.4; 16 MiB 44.5 / 46.3, 45.4 / 54.3, 46.7 / 49.4;
// session 38). Ranks sharing a GPU were not measured: zero-copy as before.
constexpr bool strided_scratch_when_mapped(const Call &c)
{
    return c.direct && c.nranks == 2 && c.share.ranks <= 1 && c.cfg.direct_style == GPUCOLL_DIRECT_AUTO &&
           c.bytes * (size_t)c.nranks < 4 * c.cfg.direct_min_bytes;
}
constexpr bool strided_on_scratch(const Call &c) { return not_mapped(c) || strided_scratch_when_mapped(c); }
constexpr bool bcast_forwards(const Call &c)
{
    if (!bcast_on_scratch(c) || c.nranks < 2 || c.share.ranks > 1) return false; // as measured: a GPU per rank
    return c.bytes >= (c.nranks == 2 ? kForwardMinBytesTwoRanks : kForwardMinBytes);
}
// Reduce's times are the root's (the slowest rank's: the one-shot's other
// ranks only copy in and leave, so their average flatters it; session 32
// chose these sizes on averages and set them 16x too high). 4 x H200, the
// root's time, us, session 33:
// - through scratch in two shots (the non-roots reduce, the root copies
//   out) rather than one (the root reads every rank's copy), a GPU per
//   rank: 4 ranks from 4 MiB (nonblocking 4 MiB 45 against 51 for
//   `reduce`, 16 MiB 110 against 159, 64 MiB 373 against 617; 1 MiB 27
//   against 26), 3 from 16 MiB (nonblocking / enqueued 16 MiB 103 / 99
//   against 115 / 110, 64 MiB 360 / 357 against 527 / 457; 4 MiB level).
//   With ranks sharing a GPU it was slower (3 under MPS: 16 MiB 124 against
//   111). Every mode takes it, stream-ordered and resident calls included.
constexpr size_t kReduceTwoShotMinBytes = 4u << 20;
constexpr size_t kReduceTwoShotMinBytesThreeRanks = 16u << 20;
constexpr bool reduce_twoshots(const Call &c)
{
    if (c.nranks < 3 || c.share.ranks > 1) return false;
    return c.bytes >= (c.nranks == 3 ? kReduceTwoShotMinBytesThreeRanks : kReduceTwoShotMinBytes);
}
// - zero-copy (reduce_push) from 3 ranks and direct_min_bytes (4 MiB):
//   4 ranks, blocking 4 MiB 38 against 52, 16 MiB 86 against 160, 64 MiB
//   272 against 617; 3 ranks 4 MiB 37 against 40, 16 MiB 79 against 122,
//   64 MiB 286 against 525; 3 under MPS on one H200: 4 MiB 25 against 32,
//   16 MiB 55 against 112. With 2 ranks the one-shot's root takes the message in only
//   once, and it stays ahead (2 x H200: 4 MiB 27 against 34, 16 MiB 70
//   against 76, 64 MiB 243 against 280, 256 MiB 836 against 838).
constexpr int kReducePushMinRanks = 3;
// - by stores into the root's scratch (reduce_stores) with 2 ranks, a GPU
//   each, from 8 MiB: the other rank's stores cross the link and the root
//   reads only its own memory. 2 x H200, the root's time blocking /
//   enqueued, us, against the one-shot (session 39, steps of even size,
//   even_chunk_elems): 8 MiB 41 / 31 against 42 / 33, 16 MiB 67 / 56
//   against 72 / 65, 64 MiB 217 / 203 against 250 / 242, 128 MiB 409 / 396
//   against 462 / 456; 4 MiB 30 / 19 against 29 / 21. (Session 38, before
//   the even steps, found 16 MiB slower: a full step and one of a few
//   elements.)
constexpr size_t kReduceStoresMinBytes = 8u << 20;
constexpr bool reduce_stores(const Call &c)
{
    return !c.direct && c.nranks == 2 && c.share.ranks <= 1 && c.bytes >= kReduceStoresMinBytes;
}
// One-shot (latency) up to oneshot_max_bytes, mapped or not: 4 x H200,
// 512 KiB: 23.9 us against 31.1 for the two-shot (gpucoll_config.h).
constexpr bool allreduce_oneshot_fits(const Call &c) { return c.bytes <= c.cfg.oneshot_max_bytes; }

// How many chunk-sized areas a step takes in one scratch half.
enum class Areas {
    One,          // one in all
    Two,          // the step's inputs and its result after them (the two-shot kernels)
    PerRank,      // one per rank
    PerOtherRank, // one per rank but the root (reduce_stores: the root reduces from its own input)
};

struct Entry {
    const char *name;   // what verbose output, the tests and coll_gpu_<kind>_algorithm call it
    gpucoll_coll_kind_t kind;
    PeerAlgo algo;      // the kernel's entry (kernels/peer_kernels.cu dispatches on it)
    Protocol protocol;
    bool reduces;
    Areas areas;        // the chunk-sized areas a step takes in one scratch half
    bool strided;
    // The automatic choice: the first row of the kind that may serve the
    // call (serves_not) and whose condition holds.
    bool (*chosen_when)(const Call &);
    int most_threads = 0; // threads per block at most (threads_for); 0: threads_per_block
};

constexpr auto kNoKind = (gpucoll_coll_kind_t)-1;

// The one table of algorithms. For each kind the automatic choice takes
// the first row that may serve the call and whose condition holds
// (make_plan); coll_gpu_<kind>_algorithm forces a row by its name.
constexpr Entry kTable[] = {
    {"allreduce_ll", GPUCOLL_COLL_ALLREDUCE, PeerAlgo::AllreduceLL, Protocol::LL, true, Areas::One, false, always},
    {"allreduce_oneshot", GPUCOLL_COLL_ALLREDUCE, PeerAlgo::AllreduceOneShot, Protocol::Scratch, true, Areas::One,
     false, allreduce_oneshot_fits},
    {"allreduce_push", GPUCOLL_COLL_ALLREDUCE, PeerAlgo::AllreducePush, Protocol::ZeroCopyPush, true, Areas::One, false,
     [](const Call &c) { return allreduce_pushes(c) && !allreduce_writes(c); }},
    {"allreduce_writes", GPUCOLL_COLL_ALLREDUCE, PeerAlgo::AllreduceWrites, Protocol::ZeroCopyPush, true, Areas::One,
     false, [](const Call &c) { return allreduce_pushes(c) && allreduce_writes(c); }},
    {"allreduce_direct", GPUCOLL_COLL_ALLREDUCE, PeerAlgo::AllreduceDirect, Protocol::ZeroCopyPull, true, Areas::One,
     false, [](const Call &c) { return !allreduce_pushes(c); }},
    {"allreduce_twoshot", GPUCOLL_COLL_ALLREDUCE, PeerAlgo::AllreduceTwoShot, Protocol::Scratch, true, Areas::Two,
     false, not_mapped},
    {"reduce_ll", GPUCOLL_COLL_REDUCE, PeerAlgo::ReduceLL, Protocol::LL, true, Areas::One, false, always},
    {"reduce", GPUCOLL_COLL_REDUCE, PeerAlgo::Reduce, Protocol::Scratch, true, Areas::One, false,
     [](const Call &c) { return not_mapped(c) && !reduce_twoshots(c) && !reduce_stores(c); }},
    // After the older rows so that their forcing values stay. reduce_push:
    // wherever the buffers are mapped (there is no pull kernel).
    {"reduce_push", GPUCOLL_COLL_REDUCE, PeerAlgo::ReducePush, Protocol::ZeroCopyPush, true, Areas::One, false, always},
    {"reduce_twoshot", GPUCOLL_COLL_REDUCE, PeerAlgo::ReduceTwoShot, Protocol::Scratch, true, Areas::Two, false,
     [](const Call &c) { return not_mapped(c) && reduce_twoshots(c); }},
    // 128 threads a block: enqueued 1-3% faster than 256 (the most its
    // kernel, of 255 registers, launches), blocking level to 1% faster from
    // 64 MiB (16 MiB: 2.6% slower in one run); 512 (a kernel of this
    // algorithm alone, 128 registers) 11-20% slower, 384 5% (2 x H200,
    // session 41, docs/performance_history.md).
    {"reduce_stores", GPUCOLL_COLL_REDUCE, PeerAlgo::ReduceStores, Protocol::Scratch, true, Areas::PerOtherRank, false,
     reduce_stores, 128},
    // Reduce_scatter(_block) has only a pull kernel (a reduction reads all inputs).
    {"reduce_scatter_direct", GPUCOLL_COLL_REDUCE_SCATTER_BLOCK, PeerAlgo::ReduceScatterDirect, Protocol::ZeroCopyPull,
     true, Areas::One, true, [](const Call &c) { return !strided_scratch_when_mapped(c); }},
    {"reduce_scatter_block_ll", GPUCOLL_COLL_REDUCE_SCATTER_BLOCK, PeerAlgo::ReduceScatterBlockLL, Protocol::LL, true,
     Areas::One, true, always},
    {"reduce_scatter_block", GPUCOLL_COLL_REDUCE_SCATTER_BLOCK, PeerAlgo::ReduceScatterBlock, Protocol::Scratch, true,
     Areas::PerRank, true, strided_on_scratch},
    {"allgather_push", GPUCOLL_COLL_ALLGATHER, PeerAlgo::AllgatherPush, Protocol::ZeroCopyPush, false, Areas::One, true,
     [](const Call &c) { return style_pushes(c) && !strided_scratch_when_mapped(c); }},
    {"allgather_direct", GPUCOLL_COLL_ALLGATHER, PeerAlgo::AllgatherDirect, Protocol::ZeroCopyPull, false, Areas::One,
     true, style_pulls},
    {"allgather_ll", GPUCOLL_COLL_ALLGATHER, PeerAlgo::AllgatherLL, Protocol::LL, false, Areas::One, true, always},
    {"allgather", GPUCOLL_COLL_ALLGATHER, PeerAlgo::Allgather, Protocol::Scratch, false, Areas::One, true,
     strided_on_scratch},
    {"bcast_spread", GPUCOLL_COLL_BCAST, PeerAlgo::BcastSpread, Protocol::ZeroCopyPush, false, Areas::One, false,
     bcast_spreads},
    {"bcast_push", GPUCOLL_COLL_BCAST, PeerAlgo::BcastPush, Protocol::ZeroCopyPush, false, Areas::One, false,
     [](const Call &c) { return style_pushes(c) && !bcast_scratch_when_mapped(c); }},
    {"bcast_direct", GPUCOLL_COLL_BCAST, PeerAlgo::BcastDirect, Protocol::ZeroCopyPull, false, Areas::One, false,
     style_pulls},
    {"bcast_ll", GPUCOLL_COLL_BCAST, PeerAlgo::BcastLL, Protocol::LL, false, Areas::One, false, always},
    {"bcast", GPUCOLL_COLL_BCAST, PeerAlgo::Bcast, Protocol::Scratch, false, Areas::One, false,
     [](const Call &c) { return bcast_on_scratch(c) && !bcast_forwards(c); }},
    // Through scratch with each byte leaving the root once (kernels/bcast_forward.cuh).
    {"bcast_forward", GPUCOLL_COLL_BCAST, PeerAlgo::BcastForward, Protocol::Scratch, false, Areas::One, false,
     bcast_forwards},
    // Zero-copy alltoall is alltoallv's kernel with equal blocks: each byte moves once, not in and out of
    // scratch (H100, 2 ranks under MPS, 128 MiB: see docs/performance.md). There is no pull kernel.
    {"alltoall_push", GPUCOLL_COLL_ALLTOALL, PeerAlgo::VectorPush, Protocol::ZeroCopyPush, false, Areas::One, true,
     [](const Call &c) { return !strided_scratch_when_mapped(c); }},
    {"alltoall_ll", GPUCOLL_COLL_ALLTOALL, PeerAlgo::AlltoallLL, Protocol::LL, false, Areas::One, true, always},
    {"alltoall", GPUCOLL_COLL_ALLTOALL, PeerAlgo::Alltoall, Protocol::Scratch, false, Areas::PerRank, true,
     strided_on_scratch},
    // The vector kinds run zero-copy or not at all (the caller stages them).
    {"vector_push", GPUCOLL_COLL_ALLGATHERV, PeerAlgo::VectorPush, Protocol::ZeroCopyPush, false, Areas::One, false,
     always},
    {"reduce_scatter_direct", GPUCOLL_COLL_REDUCE_SCATTER, PeerAlgo::ReduceScatterDirect, Protocol::ZeroCopyPull, true,
     Areas::One, false, always},
    {"vector_push", GPUCOLL_COLL_ALLTOALLV, PeerAlgo::VectorPush, Protocol::ZeroCopyPush, false, Areas::One, false,
     always},
    // No collective: MPI_Reduce_local and the inter-node reducer (core/local_reduce.cpp).
    {"local_reduce", kNoKind, PeerAlgo::LocalReduce, Protocol::Local, true, Areas::One, false, always},
};

static_assert(GPUCOLL_FORCEABLE_KINDS == GPUCOLL_COLL_ALLGATHERV,
              "config.algorithm[] has a slot for every kind before the vector kinds");

constexpr bool zero_copy(Protocol p) { return p == Protocol::ZeroCopyPull || p == Protocol::ZeroCopyPush; }

// Why row `e` cannot serve the call (nullptr: it can). Forced or not, a
// row serves only calls it is sound for.
const char *serves_not(const Entry &e, const Call &c)
{
    if (zero_copy(e.protocol) && !c.direct)
        return "not every rank's buffers are mapped for zero-copy (size, alignment, in place, or an allocation "
               "that cannot be exported)";
    if (e.protocol == Protocol::LL && !c.ll)
        return c.direct ? "a zero-copy call" : "larger than ll_max_bytes per rank, or an alltoall in place";
    return nullptr;
}

// The first row of `algo`, or nullptr. An algorithm that serves several
// kinds has a row for each; their protocol and thread cap are alike.
const Entry *row_of(PeerAlgo algo)
{
    for (const Entry &e : kTable)
        if (e.algo == algo) return &e;
    return nullptr;
}

// The row coll_gpu_<kind>_algorithm forces, or nullptr (auto, or a value
// that names no row of the kind).
const Entry *forced_row(gpucoll_coll_kind_t kind, const gpucoll_config_t &cfg)
{
    if (kind < 0 || kind >= GPUCOLL_FORCEABLE_KINDS || cfg.algorithm[kind] <= 0) return nullptr;
    int left = cfg.algorithm[kind];
    for (const Entry &e : kTable)
        if (e.kind == kind && --left == 0) return &e;
    return nullptr;
}

// Bytes per thread block (block_bytes = 0). Below a few MiB the kernels
// wait on the links' latency, not their bandwidth: many small blocks keep
// more loads in flight (4 ranks, H200: a 64 KiB one-shot allreduce takes
// 33 us on 2 blocks, 19 us on 16). Zero-copy kernels move large messages:
// 64 KiB per block, up to the cap (128 blocks beat 64 by 3% at 256 MiB).
// docs/performance.md has the sweep.
constexpr size_t kScratchBlockBytes = 4 * 1024;
// LL calls: 2 KiB per block (256 lines, a thread each). Enqueued and
// graph-replayed 4-256 KiB calls took 0.1-0.8 us less than on 4 KiB blocks
// (allreduce graph 4 KiB 5.4 against 6.0 us, 256 KiB 7.1 against 7.7; 1 KiB
// alike, 512 B slower again: 2 x H200, session 31, docs/performance.md).
constexpr size_t kLLBlockBytes = 2 * 1024;
// LL calls up to this (all ranks' bytes where strided: 1 KiB each from 8)
// run on one block when a resident kernel serves them.
constexpr size_t kResidentOneBlockBytes = 8 * 1024;
constexpr size_t kZeroCopyBlockBytes = 64 * 1024;

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
    const bool ll = !direct && a.count * elt <= cfg.ll_max_bytes && (a.kind != GPUCOLL_COLL_ALLTOALL || a.sbuf);
    const Call call{a.count * elt, nranks, cfg, direct, ll, share};
    const Entry *row = forced_row(a.kind, cfg);
    plan->forced_refused = row ? serves_not(*row, call) : nullptr;
    if (!row || plan->forced_refused) {
        row = nullptr;
        for (const Entry &e : kTable)
            if (e.kind == a.kind && !serves_not(e, call) && e.chosen_when(call)) {
                row = &e;
                break;
            }
    }
    if (!row) return false;
    if (row->reduces && !gpucoll_op_valid(a.op, a.dtype)) return false;
    if (!row->reduces && a.op != GPUCOLL_OP_NONE) return false;
    plan->algo = row->algo;
    plan->name = row->name;
    // Areas in scratch start at multiples of the chunk: keep it a multiple
    // of 16 elements so that every area stays 16-byte aligned.
    plan->chunk = (a.count + 15) / 16 * 16;
    plan->scratch_blocks_per_step = row->areas == Areas::PerRank        ? nranks
                                    : row->areas == Areas::PerOtherRank ? (nranks > 1 ? nranks - 1 : 1)
                                    : row->areas == Areas::Two          ? 2
                                                                        : 1;
    plan->strided = row->strided;
    plan->wait_acks = queued && ll_one_way(row->algo);
    return true;
}

const char *forced_algorithm(gpucoll_coll_kind_t kind, const gpucoll_config_t &cfg)
{
    const Entry *e = forced_row(kind, cfg);
    return e ? e->name : nullptr;
}

bool zero_copy_candidate(const gpucoll_coll_args_t &a, const gpucoll_config_t &cfg, int nranks)
{
    const size_t bytes = a.count * gpucoll_dtype_size(a.dtype);
    // What the zero-copy kernels of the kind need of the call: 16-byte
    // aligned blocks for the strided ones; not in place where a block would
    // be overwritten before its owner has sent it.
    bool shape_ok = false;
    // Large enough for the automatic choice (all ranks' blocks for the strided kinds).
    bool size_ok = false;
    switch (a.kind) {
    case GPUCOLL_COLL_ALLREDUCE:
        shape_ok = true;
        size_ok = bytes > cfg.oneshot_max_bytes && bytes >= cfg.direct_min_bytes;
        break;
    case GPUCOLL_COLL_REDUCE_SCATTER_BLOCK:
    case GPUCOLL_COLL_ALLTOALL:
        shape_ok = a.sbuf != nullptr && bytes % 16 == 0;
        size_ok = bytes * nranks >= cfg.direct_min_bytes;
        break;
    case GPUCOLL_COLL_ALLGATHER:
        shape_ok = bytes % 16 == 0;
        size_ok = bytes * nranks >= cfg.direct_min_bytes;
        break;
    case GPUCOLL_COLL_REDUCE:
        shape_ok = true;
        size_ok = nranks >= kReducePushMinRanks && bytes >= cfg.direct_min_bytes;
        break;
    case GPUCOLL_COLL_BCAST:
        shape_ok = true;
        size_ok = bytes >= cfg.direct_min_bytes;
        break;
    default: return false;
    }
    // A forced row decides by its protocol, at every size.
    if (const Entry *f = forced_row(a.kind, cfg)) return shape_ok && zero_copy(f->protocol);
    return shape_ok && size_ok;
}

size_t max_chunk_elems(const Plan &plan, size_t half_bytes, size_t elt)
{
    return half_bytes / (elt * (size_t)plan.scratch_blocks_per_step) / 16 * 16;
}

// 2 x H200, reduce_stores at 16 MiB when it kept an area for the root too
// (two of just under 16 MiB in a 64 MiB scratch's half): 71 us enqueued in a
// full step and one of 16 elements, 56 in two even steps, 54 in one (a
// scratch twice as large); session 39. Whole pages: an area that starts
// mid-page costs the copies. Up to 16 steps, where one step's barriers
// weigh: reduce_stores at 1 GiB (65 steps) took 3,083-3,097 us in even steps
// against 3,003 in full ones (session 38), not understood; at 256 MiB (17
// steps) 751 against 770. Session 40, full areas past 16 steps: 2,973.
constexpr size_t kEvenStepsMax = 16;
size_t even_chunk_elems(size_t chunk, size_t max, size_t elt)
{
    if (chunk <= max || max == 0) return chunk < max ? chunk : max;
    const size_t steps = (chunk + max - 1) / max;
    const size_t page = elt && 4096 % elt == 0 && 4096 / elt % 16 == 0 ? 4096 / elt : 16; // elements
    if (steps > kEvenStepsMax) return max;
    const size_t even = ((chunk + steps - 1) / steps + page - 1) / page * page;
    return even <= max ? even : max;
}

namespace {
size_t plan_bytes(const Plan &plan, size_t elt, int nranks)
{
    return plan.chunk * elt * (plan.strided ? (size_t)nranks : 1);
}
} // namespace

bool resident_serves(const Plan &plan, size_t elt, int nranks, const gpucoll_config_t &cfg)
{
    return cfg.resident_us > 0 && !is_direct(plan.algo) &&
           plan.algo != PeerAlgo::LocalReduce &&
           plan_bytes(plan, elt, nranks) <= cfg.resident_max_bytes;
}

int calls_at_once(const gpucoll_config_t &cfg)
{
    // A config not filled in takes the defaults.
    const int queued = cfg.kernels_at_once > 0 ? cfg.kernels_at_once : GPUCOLL_DEFAULT_KERNELS_AT_ONCE;
    if (!cfg.thread_multiple) return queued;
    const int threads = cfg.thread_calls > 0 ? cfg.thread_calls : GPUCOLL_DEFAULT_THREAD_CALLS;
    return threads > queued ? threads : queued;
}

int co_resident_blocks(const GpuShare &share, int calls_at_once)
{
    const int ranks = share.ranks > 1 ? share.ranks : 1;
    const int kernels = ranks * (calls_at_once > 1 ? calls_at_once : 1);
    const int sms = share.sms > 0 ? share.sms : kMaxBlocks;
    // Every rank on the GPU runs its kernel at once (none spins on a peer
    // that waits for an SM) ...
    int cap = sms / ranks;
    // ... and whatever all but one of the kernels hold, the last still finds
    // an SM: with blocks paired by index that is enough for progress.
    if (kernels > 1 && (sms - 1) / (kernels - 1) < cap) cap = (sms - 1) / (kernels - 1);
    return cap < 1 ? 1 : cap > kMaxBlocks ? kMaxBlocks : cap;
}

int blocks_for(const Plan &plan, size_t elt, const gpucoll_config_t &cfg, int nranks, const GpuShare &share)
{
    size_t bytes = plan_bytes(plan, elt, nranks);
    size_t per_block = cfg.block_bytes          ? cfg.block_bytes
                       : is_direct(plan.algo) ? kZeroCopyBlockBytes
                       : is_ll(plan.algo)     ? kLLBlockBytes
                                              : kScratchBlockBytes;
    size_t want = (bytes + per_block - 1) / per_block;
    size_t cap = (size_t)cfg.max_blocks < (size_t)kMaxBlocks ? (size_t)cfg.max_blocks : (size_t)kMaxBlocks;
    // One grid for the sizes a resident kernel serves, so that one kernel
    // serves most of them: 32 blocks suit 256 KiB-1 MiB best (block sweep,
    // docs/performance.md). LL calls up to 8 KiB take one: a grid of more
    // would pass every call from block 0 to the others through
    // device memory and report 32 done words to the host.
    if (resident_serves(plan, elt, nranks, cfg))
        want = is_ll(plan.algo) && bytes <= kResidentOneBlockBytes ? 1 : (size_t)cfg.resident_blocks;
    const size_t co = (size_t)co_resident_blocks(share, calls_at_once(cfg));
    if (cap > co) cap = co;
    if (want < 1) want = 1;
    return (int)(want < cap ? want : cap);
}

// A call of a few lines on 512 threads took 1.3-3.5 us longer per enqueued
// or graph-replayed call than on 64 (2 x H200, 2 ranks, 8-512 B, session
// 30: graph bcast 8.9 against 5.3 us, allgather 9.1-9.5 against 5.6-6.0,
// allreduce 7.0 against 5.6; 256 threads 6.6-7.3). Fewer than 64 were not
// measured.
constexpr int kLLMinThreads = 64;

int threads_for(PeerAlgo algo, size_t block_bytes, int blocks, const gpucoll_config_t &cfg)
{
    int most = cfg.threads_per_block;
    const Entry *row = row_of(algo);
    if (row && row->most_threads > 0 && row->most_threads < most) most = row->most_threads;
    if (!is_ll(algo) || blocks < 1) return most;
    const size_t lines = (block_bytes + 7) / 8, per_block = (lines + (size_t)blocks - 1) / (size_t)blocks;
    const size_t want = (per_block + 31) / 32 * 32;
    if (want >= (size_t)most) return most;
    return (int)(want < (size_t)kLLMinThreads ? (kLLMinThreads < most ? kLLMinThreads : most) : want);
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
    const Entry *row = row_of(algo);
    return row ? row->name : "?";
}

Protocol algo_protocol(PeerAlgo algo)
{
    const Entry *row = row_of(algo);
    return row ? row->protocol : Protocol::Local;
}

namespace {
struct Fnv {
    uint64_t h = 1469598103934665603ull;
    void add(uint64_t v)
    {
        for (int i = 0; i < 8; i++, v >>= 8) h = (h ^ (v & 0xff)) * 1099511628211ull;
    }
};
} // namespace

uint64_t plan_config_fingerprint(const gpucoll_config_t &cfg)
{
    Fnv f;
    for (int k = 0; k < GPUCOLL_FORCEABLE_KINDS; k++) f.add((uint64_t)cfg.algorithm[k]);
    for (size_t v : {cfg.oneshot_max_bytes, cfg.scratch_bytes, cfg.block_bytes, cfg.direct_min_bytes,
                     cfg.resident_max_bytes, cfg.ll_max_bytes, cfg.window_move_min_bytes})
        f.add(v);
    for (int v : {cfg.max_blocks, cfg.busy_max_blocks, cfg.threads_per_block, cfg.direct_style, cfg.resident_us > 0 ? 1 : 0,
                  cfg.resident_blocks, calls_at_once(cfg), cfg.auto_windows ? 1 : 0})
        f.add((uint64_t)(int64_t)v);
    return f.h;
}

int algo_rows(gpucoll_coll_kind_t kind, PeerAlgo *out, int max)
{
    int n = 0;
    for (const Entry &e : kTable)
        if (e.kind == kind) {
            if (n < max) out[n] = e.algo;
            n++;
        }
    return n;
}

} // namespace gpucoll

extern "C" int gpucoll_algorithm_names(gpucoll_coll_kind_t kind, const char **names, int max)
{
    int n = 0;
    for (const gpucoll::Entry &e : gpucoll::kTable)
        if (e.kind == kind) {
            if (n < max) names[n] = e.name;
            n++;
        }
    return n;
}
