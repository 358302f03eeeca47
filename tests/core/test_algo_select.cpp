// The algorithm table and its sizing, without a GPU.
#include <set>
#include <string>
#include <cstdio>
#include <cstring>
#include <initializer_list>

#include "algo_select.hpp"
#include "algo_forcing.h"

using namespace gpucoll;

#include "../common/check.h"

static gpucoll_coll_args_t args(gpucoll_coll_kind_t kind, size_t count, gpucoll_dtype_t dt, gpucoll_op_t op)
{
    gpucoll_coll_args_t a{};
    a.kind = kind;
    a.count = count;
    a.dtype = dt;
    a.op = op;
    a.local_ok = 1;
    static const char input[1] = {0};
    a.sbuf = input; // not in place
    return a;
}

static void check_oneshot_twoshot(gpucoll_config_t &cfg, Plan &p)
{
    // auto: one-shot up to oneshot_max_bytes, two-shot above
    CHECK(make_plan(args(GPUCOLL_COLL_ALLREDUCE, cfg.oneshot_max_bytes / 4, GPUCOLL_FLOAT32, GPUCOLL_OP_SUM), 0, 4,
                    cfg, &p));
    CHECK(p.algo == PeerAlgo::AllreduceOneShot && p.scratch_blocks_per_step == 1);
    CHECK(make_plan(args(GPUCOLL_COLL_ALLREDUCE, cfg.oneshot_max_bytes / 4 + 1, GPUCOLL_FLOAT32, GPUCOLL_OP_SUM), 0,
                    4, cfg, &p));
    CHECK(p.algo == PeerAlgo::AllreduceTwoShot && p.scratch_blocks_per_step == 2);
    // forced by parameter
    force_algorithm(&cfg, GPUCOLL_COLL_ALLREDUCE, "allreduce_twoshot");
    CHECK(make_plan(args(GPUCOLL_COLL_ALLREDUCE, 1, GPUCOLL_FLOAT32, GPUCOLL_OP_SUM), 0, 2, cfg, &p));
    CHECK(p.algo == PeerAlgo::AllreduceTwoShot && !p.forced_refused);
    cfg.algorithm[GPUCOLL_COLL_ALLREDUCE] = 0;
}

static void check_zero_copy_of_style(const gpucoll_config_t &c, Plan &p)
{
    const size_t big = 64u << 20;
    bool push = c.direct_style == GPUCOLL_DIRECT_PUSH;
    // allreduce by stores: through the owners' scratch from 3 ranks and 16 MiB on
    CHECK(make_plan(args(GPUCOLL_COLL_ALLREDUCE, big, GPUCOLL_FLOAT32, GPUCOLL_OP_SUM), 0, 4, c, true, &p));
    CHECK(p.algo == (push ? PeerAlgo::AllreduceWrites : PeerAlgo::AllreduceDirect));
    CHECK(make_plan(args(GPUCOLL_COLL_ALLREDUCE, big, GPUCOLL_FLOAT32, GPUCOLL_OP_SUM), 0, 3, c, true, &p));
    CHECK(p.algo == (push ? PeerAlgo::AllreduceWrites : PeerAlgo::AllreduceDirect));
    CHECK(make_plan(args(GPUCOLL_COLL_ALLREDUCE, big, GPUCOLL_FLOAT32, GPUCOLL_OP_SUM), 0, 2, c, true, &p));
    CHECK(p.algo == (push ? PeerAlgo::AllreducePush : PeerAlgo::AllreduceDirect));
    CHECK(make_plan(args(GPUCOLL_COLL_ALLREDUCE, (8u << 20) / 4, GPUCOLL_FLOAT32, GPUCOLL_OP_SUM), 0, 4, c, true,
                    &p));
    CHECK(p.algo == (push ? PeerAlgo::AllreducePush : PeerAlgo::AllreduceDirect));
    CHECK(make_plan(args(GPUCOLL_COLL_ALLGATHER, big, GPUCOLL_UINT8, GPUCOLL_OP_NONE), 0, 4, c, true, &p));
    CHECK(p.algo == (push ? PeerAlgo::AllgatherPush : PeerAlgo::AllgatherDirect) && p.strided);
    CHECK(make_plan(args(GPUCOLL_COLL_BCAST, big, GPUCOLL_UINT8, GPUCOLL_OP_NONE), 0, 3, c, true, &p));
    CHECK(p.algo == (push ? PeerAlgo::BcastPush : PeerAlgo::BcastDirect));
    CHECK(make_plan(args(GPUCOLL_COLL_REDUCE_SCATTER_BLOCK, big, GPUCOLL_FLOAT32, GPUCOLL_OP_SUM), 0, 4, c, true,
                    &p));
    CHECK(p.algo == PeerAlgo::ReduceScatterDirect);
}

// the vector kinds: one zero-copy kernel each whatever the style, none without mapped buffers
static void check_zero_copy_vector_kinds(const gpucoll_config_t &c, Plan &p)
{
    const size_t big = 64u << 20;
    for (size_t n : {(size_t)1, big}) {
        CHECK(make_plan(args(GPUCOLL_COLL_ALLGATHERV, n, GPUCOLL_UINT8, GPUCOLL_OP_NONE), 0, 4, c, true, &p));
        CHECK(p.algo == PeerAlgo::VectorPush && !p.strided);
        CHECK(make_plan(args(GPUCOLL_COLL_ALLTOALLV, n, GPUCOLL_UINT8, GPUCOLL_OP_NONE), 1, 3, c, true, &p));
        CHECK(p.algo == PeerAlgo::VectorPush);
        CHECK(make_plan(args(GPUCOLL_COLL_REDUCE_SCATTER, n, GPUCOLL_FLOAT32, GPUCOLL_OP_MAX), 0, 2, c, true, &p));
        CHECK(p.algo == PeerAlgo::ReduceScatterDirect);
        for (gpucoll_coll_kind_t k : {GPUCOLL_COLL_ALLGATHERV, GPUCOLL_COLL_ALLTOALLV, GPUCOLL_COLL_REDUCE_SCATTER})
            CHECK(!make_plan(args(k, n, GPUCOLL_UINT8, GPUCOLL_OP_NONE), 0, 4, c, false, &p));
    }
    // moving bytes takes no op, reducing needs a valid one
    CHECK(!make_plan(args(GPUCOLL_COLL_ALLGATHERV, 8, GPUCOLL_FLOAT32, GPUCOLL_OP_SUM), 0, 2, c, true, &p));
    CHECK(!make_plan(args(GPUCOLL_COLL_REDUCE_SCATTER, 8, GPUCOLL_FLOAT32, GPUCOLL_OP_BAND), 0, 2, c, true, &p));
    CHECK(is_direct(PeerAlgo::VectorPush) && moves_bytes(PeerAlgo::VectorPush) &&
          !moves_bytes(PeerAlgo::ReduceScatterDirect));
}

// without mapped buffers the style does not matter: bcast through scratch forwards from
// 4 MiB with 3 ranks or more, 64 MiB with 2, where this rank has its GPU to itself
static void check_unmapped_any_style(const gpucoll_config_t &c, Plan &p)
{
    const size_t big = 64u << 20;
    CHECK(make_plan(args(GPUCOLL_COLL_BCAST, big, GPUCOLL_UINT8, GPUCOLL_OP_NONE), 0, 3, c, false, &p));
    CHECK(p.algo == PeerAlgo::BcastForward);
    for (bool queued : {false, true}) {
        CHECK(make_plan(args(GPUCOLL_COLL_BCAST, 4u << 20, GPUCOLL_UINT8, GPUCOLL_OP_NONE), 1, 4, c, false, &p,
                        GpuShare{132, 1}, queued) &&
              p.algo == PeerAlgo::BcastForward);
        CHECK(make_plan(args(GPUCOLL_COLL_BCAST, (4u << 20) - 1, GPUCOLL_UINT8, GPUCOLL_OP_NONE), 1, 4, c, false, &p,
                        GpuShare{132, 1}, queued) &&
              p.algo == PeerAlgo::Bcast);
        CHECK(make_plan(args(GPUCOLL_COLL_BCAST, big, GPUCOLL_UINT8, GPUCOLL_OP_NONE), 1, 2, c, false, &p,
                        GpuShare{132, 1}, queued) &&
              p.algo == PeerAlgo::BcastForward);
        CHECK(make_plan(args(GPUCOLL_COLL_BCAST, big - 1, GPUCOLL_UINT8, GPUCOLL_OP_NONE), 1, 2, c, false, &p,
                        GpuShare{132, 1}, queued) &&
              p.algo == PeerAlgo::Bcast);
        CHECK(make_plan(args(GPUCOLL_COLL_BCAST, big, GPUCOLL_UINT8, GPUCOLL_OP_NONE), 0, 4, c, false, &p,
                        GpuShare{132, 4}, queued) &&
              p.algo == PeerAlgo::Bcast);
        // two ranks on this rank's GPU: not measured, not taken
        CHECK(make_plan(args(GPUCOLL_COLL_BCAST, big, GPUCOLL_UINT8, GPUCOLL_OP_NONE), 0, 4, c, false, &p,
                        GpuShare{132, 2}, queued) &&
              p.algo == PeerAlgo::Bcast);
    }
    CHECK(make_plan(args(GPUCOLL_COLL_ALLREDUCE, big, GPUCOLL_FLOAT32, GPUCOLL_OP_SUM), 0, 4, c, false, &p));
    CHECK(p.algo == PeerAlgo::AllreduceTwoShot);
    CHECK(is_direct(PeerAlgo::AllreducePush) && is_direct(PeerAlgo::BcastPush) && moves_bytes(PeerAlgo::BcastPush) &&
          !moves_bytes(PeerAlgo::AllreducePush));
}

// zero-copy by loads or by stores, as direct_style says; reduce_scatter_block only pulls
static void check_zero_copy_styles(const gpucoll_config_t &cfg, Plan &p)
{
    gpucoll_config_t c = cfg;
    for (gpucoll_direct_style_t style : {GPUCOLL_DIRECT_PULL, GPUCOLL_DIRECT_PUSH}) {
        c.direct_style = style;
        check_zero_copy_of_style(c, p);
        check_zero_copy_vector_kinds(c, p);
        check_unmapped_any_style(c, p);
    }
}

// writes forced: zero-copy where mapped, else the automatic choice (one-shot at this size)
static void check_forced_writes(gpucoll_config_t &cfg, Plan &p)
{
    force_algorithm(&cfg, GPUCOLL_COLL_ALLREDUCE, "allreduce_writes");
    CHECK(make_plan(args(GPUCOLL_COLL_ALLREDUCE, 64, GPUCOLL_FLOAT32, GPUCOLL_OP_SUM), 0, 2, cfg, true, &p));
    CHECK(p.algo == PeerAlgo::AllreduceWrites);
    CHECK(make_plan(args(GPUCOLL_COLL_ALLREDUCE, 64, GPUCOLL_FLOAT32, GPUCOLL_OP_SUM), 0, 2, cfg, false, &p));
    CHECK(p.algo == PeerAlgo::AllreduceOneShot && p.forced_refused);
    cfg.algorithm[GPUCOLL_COLL_ALLREDUCE] = 0;
}

static void check_ops_by_type(const gpucoll_config_t &cfg, Plan &p)
{
    // ops MPI does not allow on the type are refused
    CHECK(!make_plan(args(GPUCOLL_COLL_ALLREDUCE, 10, GPUCOLL_FLOAT32, GPUCOLL_OP_BXOR), 0, 2, cfg, &p));
    CHECK(make_plan(args(GPUCOLL_COLL_ALLREDUCE, 10, GPUCOLL_INT32, GPUCOLL_OP_BXOR), 0, 2, cfg, &p));
    // data movement takes no op; reductions need one
    CHECK(make_plan(args(GPUCOLL_COLL_ALLGATHER, 10, GPUCOLL_UINT8, GPUCOLL_OP_NONE), 0, 3, cfg, &p));
    CHECK(p.algo == PeerAlgo::Allgather && p.strided);
    CHECK(!make_plan(args(GPUCOLL_COLL_BCAST, 10, GPUCOLL_UINT8, GPUCOLL_OP_SUM), 0, 3, cfg, &p));
    CHECK(!make_plan(args(GPUCOLL_COLL_REDUCE, 10, GPUCOLL_FLOAT32, GPUCOLL_OP_NONE), 0, 3, cfg, &p));
}

// per-rank areas for reduce_scatter_block and alltoall
static void check_per_rank_areas(const gpucoll_config_t &cfg, Plan &p)
{
    for (int n = 1; n <= 8; n++) {
        CHECK(make_plan(args(GPUCOLL_COLL_REDUCE_SCATTER_BLOCK, 7, GPUCOLL_FLOAT64, GPUCOLL_OP_SUM), 0, n, cfg, &p));
        CHECK(p.scratch_blocks_per_step == n);
        CHECK(make_plan(args(GPUCOLL_COLL_ALLTOALL, 7, GPUCOLL_UINT8, GPUCOLL_OP_NONE), 0, n, cfg, &p));
        CHECK(p.scratch_blocks_per_step == n);
        // chunks fit a half and keep 16-byte alignment, for every element size
        for (size_t elt : {1, 2, 4, 8}) {
            size_t c = max_chunk_elems(p, 32u << 20, elt);
            CHECK(c % 16 == 0 && c * elt * (size_t)n <= (32u << 20) && c > 0);
        }
        int b = blocks_for(p, 1, cfg, n);
        CHECK(b >= 1 && b <= cfg.max_blocks && b <= kMaxBlocks);
    }
}

// empty calls and too many ranks have no plan
static void check_no_plan(const gpucoll_config_t &cfg, Plan &p)
{
    CHECK(!make_plan(args(GPUCOLL_COLL_ALLREDUCE, 0, GPUCOLL_FLOAT32, GPUCOLL_OP_SUM), 0, 2, cfg, &p));
    CHECK(!make_plan(args(GPUCOLL_COLL_ALLREDUCE, 5, GPUCOLL_FLOAT32, GPUCOLL_OP_SUM), 0, kMaxPeers + 1, cfg, &p));
}

// Leaves cfg.kernels_at_once 0 (the default) for check_blocks_under_threads,
// and p the plan check_block_bytes resizes.
static void check_blocks_by_size_and_kernels_at_once(gpucoll_config_t &cfg, Plan &p)
{
    // a tiny message uses one block, a large one the cap
    CHECK(make_plan(args(GPUCOLL_COLL_ALLREDUCE, 2, GPUCOLL_FLOAT32, GPUCOLL_OP_SUM), 0, 4, cfg, &p));
    CHECK(blocks_for(p, 4, cfg, 4) == 1);
    p.chunk = 64u << 20;
    // Two communicators' kernels may wait at once (kernels_at_once, default
    // 2): the first one's grid leaves the second an SM (SMs unknown:
    // kMaxBlocks), which is all the second needs to progress.
    CHECK(calls_at_once(cfg) == GPUCOLL_DEFAULT_KERNELS_AT_ONCE);
    CHECK(blocks_for(p, 4, cfg, 4) == kMaxBlocks - 1);
    CHECK(blocks_for(p, 4, cfg, 4, GpuShare{132, 1}) == cfg.max_blocks);
    CHECK(blocks_for(p, 4, cfg, 4, GpuShare{128, 1}) == 127);
    cfg.kernels_at_once = 1; // one call at a time, ever: whole-GPU grids
    CHECK(calls_at_once(cfg) == 1 && blocks_for(p, 4, cfg, 4, GpuShare{132, 1}) == cfg.max_blocks);
    cfg.kernels_at_once = 3;
    CHECK(calls_at_once(cfg) == 3 && blocks_for(p, 4, cfg, 4, GpuShare{132, 1}) == 65);
    cfg.kernels_at_once = 0; // not filled in: the default
    CHECK(calls_at_once(cfg) == GPUCOLL_DEFAULT_KERNELS_AT_ONCE);
}

// Leaves cfg.thread_calls 0 (not filled in) for every later check.
static void check_blocks_under_threads(gpucoll_config_t &cfg, const Plan &p)
{
    // under MPI_THREAD_MULTIPLE concurrent calls share the SMs: small grids only
    cfg.thread_multiple = 1;
    CHECK(blocks_for(p, 4, cfg, 4) == (kMaxBlocks - 1) / (GPUCOLL_DEFAULT_THREAD_CALLS - 1)); // SMs unknown
    // thread_calls: the calls at once that the grids leave room for, or
    // kernels_at_once where that is more
    cfg.thread_calls = 1; // one thread at a time (Horovod) ...
    CHECK(calls_at_once(cfg) == GPUCOLL_DEFAULT_KERNELS_AT_ONCE);
    cfg.kernels_at_once = 1; // ... and one call at a time: the grids of MPI_THREAD_SERIALIZED
    CHECK(calls_at_once(cfg) == 1 && blocks_for(p, 4, cfg, 4, GpuShare{132, 1}) == cfg.max_blocks);
    cfg.thread_calls = 2;
    CHECK(calls_at_once(cfg) == 2 && blocks_for(p, 4, cfg, 4, GpuShare{132, 1}) == cfg.max_blocks);
    CHECK(blocks_for(p, 4, cfg, 4, GpuShare{132, 2}) == 43); // two ranks on the GPU, two calls each
    cfg.thread_calls = 0; // not filled in: the default
    CHECK(calls_at_once(cfg) == GPUCOLL_DEFAULT_THREAD_CALLS);
    cfg.thread_multiple = 0;
    cfg.thread_calls = 4; // only under MPI_THREAD_MULTIPLE
    CHECK(calls_at_once(cfg) == 1 && blocks_for(p, 4, cfg, 4, GpuShare{132, 1}) == cfg.max_blocks);
    cfg.thread_calls = 0;
}

// Ranks sharing a GPU (MPS): every grid that may wait on another fits
// the SMs together, one block per SM at worst; the thread cap on top.
// Leaves cfg.kernels_at_once 1 (not the default 2) for every later check.
static void check_blocks_on_shared_gpu(gpucoll_config_t &cfg, const Plan &p)
{
    CHECK(blocks_for(p, 4, cfg, 4, GpuShare{132, 1}) == cfg.max_blocks);
    CHECK(blocks_for(p, 4, cfg, 4, GpuShare{132, 2}) == 66);
    CHECK(blocks_for(p, 4, cfg, 4, GpuShare{132, 4}) == 33);
    CHECK(blocks_for(p, 4, cfg, 4, GpuShare{16, 2}) == 8); // an MPS client limited to 16 SMs
    for (int at_once : {1, 2, 3})
        for (int sms : {1, 8, 66, 78, 114, 132, 144, 304})
            for (int ranks = 1; ranks <= kMaxPeers; ranks++)
                for (int tm = 0; tm < 2; tm++) {
                    cfg.thread_multiple = tm;
                    cfg.kernels_at_once = at_once;
                    int co = co_resident_blocks(GpuShare{sms, ranks}, calls_at_once(cfg));
                    int per_rank = tm && GPUCOLL_DEFAULT_THREAD_CALLS > at_once ? GPUCOLL_DEFAULT_THREAD_CALLS : at_once;
                    int calls = ranks * per_rank;
                    CHECK(co >= 1 && co <= kMaxBlocks, "sms %d ranks %d", sms, ranks);
                    // all ranks' kernels fit together; all but one leave an SM
                    CHECK(sms < ranks || co * ranks <= sms, "sms %d ranks %d: %d blocks each", sms, ranks, co);
                    CHECK(calls == 1 || sms <= calls - 1 || co * (calls - 1) <= sms - 1,
                          "sms %d ranks %d threads %d at once %d: %d blocks each", sms, ranks, tm, at_once, co);
                    CHECK(blocks_for(p, 4, cfg, 4, GpuShare{sms, ranks}) <= co);
                }
    cfg.kernels_at_once = 1;
    cfg.thread_multiple = 1;
    CHECK(blocks_for(p, 4, cfg, 4, GpuShare{132, 2}) == 8);
    cfg.thread_multiple = 0;
}

// Zero-copy alltoall: alltoallv's push kernel with equal blocks, whatever
// the style (there is no pull kernel); block p of our input goes to
// block `rank` of p's output.
static void check_zero_copy_alltoall(const gpucoll_config_t &cfg)
{
    Plan z;
    auto a2a = args(GPUCOLL_COLL_ALLTOALL, 1u << 20, GPUCOLL_UINT8, GPUCOLL_OP_NONE);
    CHECK(make_plan(a2a, 0, 4, cfg, true, &z) && z.algo == PeerAlgo::VectorPush && z.strided);
    gpucoll_config_t pull = cfg;
    pull.direct_style = GPUCOLL_DIRECT_PULL;
    CHECK(make_plan(a2a, 0, 4, pull, true, &z) && z.algo == PeerAlgo::VectorPush);
    CHECK(make_plan(a2a, 0, 4, cfg, false, &z) && z.algo == PeerAlgo::Alltoall);
    a2a.count = 1000;
    Piece piece = vector_piece(a2a, 1, 3, 4, 0);
    CHECK(piece.src_off == 3 * 1000 * 4 && piece.dst_off == 1 * 1000 * 4 && piece.bytes == 1000 * 4);
}

// All ranks on one GPU: a large zero-copy allreduce reads the inputs and
// pushes the results at any rank count; where the ranks have GPUs of
// their own (or only some share one), from 3 ranks it stores through
// the owners' scratch.
static void check_zero_copy_allreduce_on_one_gpu(const gpucoll_config_t &cfg)
{
    Plan z;
    auto big = args(GPUCOLL_COLL_ALLREDUCE, 16u << 20, GPUCOLL_FLOAT32, GPUCOLL_OP_SUM);
    CHECK(make_plan(big, 0, 4, cfg, true, &z, GpuShare{132, 4}) && z.algo == PeerAlgo::AllreducePush);
    CHECK(make_plan(big, 0, 3, cfg, true, &z, GpuShare{132, 3}) && z.algo == PeerAlgo::AllreducePush);
    CHECK(make_plan(big, 0, 4, cfg, true, &z, GpuShare{132, 1}) && z.algo == PeerAlgo::AllreduceWrites);
    CHECK(make_plan(big, 0, 4, cfg, true, &z, GpuShare{132, 2}) && z.algo == PeerAlgo::AllreduceWrites);
    CHECK(make_plan(big, 0, 2, cfg, true, &z, GpuShare{132, 2}) && z.algo == PeerAlgo::AllreducePush);
    gpucoll_config_t forced = cfg;
    forced.direct_style = GPUCOLL_DIRECT_PUSH; // a forced style wins
    CHECK(make_plan(big, 0, 4, forced, true, &z, GpuShare{132, 4}) && z.algo == PeerAlgo::AllreduceWrites);
}

// and small calls still take the LL kernels (they stalled under threads
// only while kernels were loaded lazily: kernels/peer_args.h)
static void check_ll_under_threads(gpucoll_config_t &cfg)
{
    cfg.ll_max_bytes = 65536;
    cfg.thread_multiple = 1; // (the shared-GPU checks before leave it at 0)
    Plan q;
    CHECK(make_plan(args(GPUCOLL_COLL_ALLREDUCE, 2, GPUCOLL_FLOAT32, GPUCOLL_OP_SUM), 0, 2, cfg, &q) && is_ll(q.algo));
    cfg.thread_multiple = 0;
    CHECK(make_plan(args(GPUCOLL_COLL_ALLREDUCE, 2, GPUCOLL_FLOAT32, GPUCOLL_OP_SUM), 0, 2, cfg, &q) && is_ll(q.algo));
    cfg.ll_max_bytes = 0;
}

// block_bytes overrides the algorithm's share per block (64 KiB of fp32 in 1 KiB blocks)
static void check_block_bytes(gpucoll_config_t &cfg, Plan &p)
{
    cfg.block_bytes = 1024;
    p.chunk = 16384;
    CHECK(blocks_for(p, 4, cfg, 4) == 64);
    cfg.block_bytes = 0;
    // LL calls on their own choice: 2 KiB a block, a thread per 8-byte line
    gpucoll_config_t c = cfg;
    c.ll_max_bytes = GPUCOLL_DEFAULT_LL_MAX_BYTES;
    Plan q;
    const struct {
        size_t count;
        int blocks, threads;
    } rows[] = {{1, 1, 64}, {512, 1, 256}, {513, 2, 160}, {1024, 2, 256}, {16384, 32, 256}};
    for (const auto &r : rows) {
        CHECK(make_plan(args(GPUCOLL_COLL_ALLREDUCE, r.count, GPUCOLL_FLOAT32, GPUCOLL_OP_SUM), 0, 2, c, &q) &&
              is_ll(q.algo));
        const int b = blocks_for(q, 4, c, 2);
        CHECK(b == r.blocks && threads_for(q.algo, r.count * 4, b, c) == r.threads, "count %zu: %d blocks", r.count, b);
    }
}

// resident kernels: every scratch call up to resident_max_bytes on one
// grid, whatever its size (so that one kernel serves them all), but LL
// calls of up to 8 KiB on one block; zero-copy and larger calls, or
// resident_us = 0, size their own grid
// Threads per block: an LL kernel takes a thread per line of its rank's
// block (a multiple of 32, at least 64, at most threads_per_block) spread
// over its blocks; the other kernels take threads_per_block, or their
// row's cap where it is lower (reduce_stores).
static void check_threads(const gpucoll_config_t &cfg)
{
    gpucoll_config_t c = cfg;
    c.threads_per_block = 512;
    for (PeerAlgo ll : {PeerAlgo::AllreduceLL, PeerAlgo::BcastLL, PeerAlgo::ReduceLL, PeerAlgo::AllgatherLL,
                        PeerAlgo::AlltoallLL, PeerAlgo::ReduceScatterBlockLL}) {
        CHECK(threads_for(ll, 1, 1, c) == 64);
        CHECK(threads_for(ll, 8 * 64, 1, c) == 64);
        CHECK(threads_for(ll, 8 * 64 + 1, 1, c) == 96);
        CHECK(threads_for(ll, 8 * 200, 1, c) == 224);
        CHECK(threads_for(ll, 4096, 1, c) == 512);
        CHECK(threads_for(ll, 1u << 20, 1, c) == 512);
        CHECK(threads_for(ll, 8 * 512 * 4, 4, c) == 512);
        CHECK(threads_for(ll, 8 * 100 * 4, 4, c) == 128);
    }
    for (PeerAlgo other : {PeerAlgo::AllreduceOneShot, PeerAlgo::Bcast, PeerAlgo::AllreducePush,
                           PeerAlgo::ReducePush, PeerAlgo::ReduceTwoShot})
        CHECK(threads_for(other, 8, 1, c) == 512);
    // reduce_stores' row caps it at 128, whatever the size and grid.
    CHECK(threads_for(PeerAlgo::ReduceStores, 8, 1, c) == 128);
    CHECK(threads_for(PeerAlgo::ReduceStores, (size_t)1 << 30, 128, c) == 128);
    c.threads_per_block = 96; // below the row's cap: the parameter wins
    CHECK(threads_for(PeerAlgo::ReduceStores, (size_t)1 << 30, 128, c) == 96);
    c.threads_per_block = 32; // fewer than the LL floor: the parameter wins
    CHECK(threads_for(PeerAlgo::AllreduceLL, 8, 1, c) == 32);
    CHECK(threads_for(PeerAlgo::AllreduceLL, 4096, 1, c) == 32);
}

static void check_resident_kernels(const gpucoll_config_t &cfg, Plan &p)
{
    gpucoll_config_t c = cfg;
    c.resident_us = 50;
    c.resident_max_bytes = 1u << 20;
    c.resident_blocks = 32;
    c.ll_max_bytes = GPUCOLL_DEFAULT_LL_MAX_BYTES;
    for (size_t count : {1, 7, 1000, 2048, 2049, 65536, 262144}) {
        CHECK(make_plan(args(GPUCOLL_COLL_ALLREDUCE, count, GPUCOLL_FLOAT32, GPUCOLL_OP_SUM), 0, 4, c, &p));
        CHECK(is_ll(p.algo) == (count <= 65536), "count %zu: %s", count, algo_name(p.algo));
        const int want = count <= 2048 ? 1 : 32;
        CHECK(resident_serves(p, 4, 4, c) && blocks_for(p, 4, c, 4) == want);
    }
    // strided LL: all ranks' bytes count (8 ranks x 1 KiB: one block)
    CHECK(make_plan(args(GPUCOLL_COLL_ALLGATHER, 1024, GPUCOLL_UINT8, GPUCOLL_OP_NONE), 0, 8, c, &p) && is_ll(p.algo));
    CHECK(blocks_for(p, 1, c, 8) == 1);
    CHECK(make_plan(args(GPUCOLL_COLL_ALLGATHER, 1025, GPUCOLL_UINT8, GPUCOLL_OP_NONE), 0, 8, c, &p) && is_ll(p.algo));
    CHECK(blocks_for(p, 1, c, 8) == 32);
    CHECK(make_plan(args(GPUCOLL_COLL_ALLREDUCE, 262145, GPUCOLL_FLOAT32, GPUCOLL_OP_SUM), 0, 4, c, &p));
    CHECK(!resident_serves(p, 4, 4, c) && blocks_for(p, 4, c, 4) != 32);
    // strided: all ranks' blocks count (4 x 65536 x 4 B = 1 MiB serves, one more element does not)
    CHECK(make_plan(args(GPUCOLL_COLL_ALLGATHER, 65536, GPUCOLL_FLOAT32, GPUCOLL_OP_NONE), 0, 4, c, &p));
    CHECK(resident_serves(p, 4, 4, c));
    CHECK(make_plan(args(GPUCOLL_COLL_ALLGATHER, 65552, GPUCOLL_FLOAT32, GPUCOLL_OP_NONE), 0, 4, c, &p));
    CHECK(!resident_serves(p, 4, 4, c));
    CHECK(make_plan(args(GPUCOLL_COLL_BCAST, 64, GPUCOLL_UINT8, GPUCOLL_OP_NONE), 0, 4, c, true, &p));
    CHECK(!resident_serves(p, 1, 4, c)); // zero-copy
    CHECK(make_plan(args(GPUCOLL_COLL_ALLREDUCE, 1000, GPUCOLL_FLOAT32, GPUCOLL_OP_SUM), 0, 4, c, &p));
    c.resident_us = 0; // the LL kernels' own 2 KiB a block
    CHECK(!resident_serves(p, 4, 4, c) && blocks_for(p, 4, c, 4) == 2);
    // the defaults: 1 MiB, 32 blocks; a negative idle time is off
    gpucoll_config_t d{};
    d.resident_us = -5;
    gpucoll_config_fill_defaults(&d);
    CHECK(d.resident_us == 0 && d.resident_max_bytes == GPUCOLL_DEFAULT_RESIDENT_MAX_BYTES &&
          d.resident_blocks == GPUCOLL_DEFAULT_RESIDENT_BLOCKS);
}

// c has LL on: each kind's LL kernel up to ll_max_bytes, its scratch kernel above.
static void check_ll_by_kind(const gpucoll_config_t &c, Plan &p)
{
    struct { gpucoll_coll_kind_t kind; gpucoll_op_t op; PeerAlgo ll, above; bool strided; } kinds[] = {
        {GPUCOLL_COLL_ALLREDUCE, GPUCOLL_OP_SUM, PeerAlgo::AllreduceLL, PeerAlgo::AllreduceOneShot, false},
        {GPUCOLL_COLL_REDUCE_SCATTER_BLOCK, GPUCOLL_OP_MAX, PeerAlgo::ReduceScatterBlockLL,
         PeerAlgo::ReduceScatterBlock, true},
        {GPUCOLL_COLL_ALLGATHER, GPUCOLL_OP_NONE, PeerAlgo::AllgatherLL, PeerAlgo::Allgather, true},
        {GPUCOLL_COLL_BCAST, GPUCOLL_OP_NONE, PeerAlgo::BcastLL, PeerAlgo::Bcast, false},
        {GPUCOLL_COLL_REDUCE, GPUCOLL_OP_PROD, PeerAlgo::ReduceLL, PeerAlgo::Reduce, false},
        {GPUCOLL_COLL_ALLTOALL, GPUCOLL_OP_NONE, PeerAlgo::AlltoallLL, PeerAlgo::Alltoall, true},
    };
    for (const auto &k : kinds) {
        gpucoll_dtype_t dt = k.op == GPUCOLL_OP_NONE ? GPUCOLL_UINT8 : GPUCOLL_FLOAT32;
        size_t elt = dt == GPUCOLL_UINT8 ? 1 : 4;
        for (int n : {1, 2, 3, 8}) {
            CHECK(make_plan(args(k.kind, 1, dt, k.op), 0, n, c, &p) && p.algo == k.ll && is_ll(p.algo));
            CHECK(p.strided == k.strided);
            CHECK(make_plan(args(k.kind, 65536 / elt, dt, k.op), 0, n, c, &p) && p.algo == k.ll);
            CHECK(make_plan(args(k.kind, 65536 / elt + 1, dt, k.op), 0, n, c, &p) && p.algo == k.above);
            // zero-copy wins where it was asked for (direct_min_bytes below
            // ll_max_bytes); at 2 ranks, a GPU each, the strided kinds from
            // 4 x direct_min_bytes of all blocks (strided_scratch_when_mapped)
            if (k.kind != GPUCOLL_COLL_ALLREDUCE && k.kind != GPUCOLL_COLL_REDUCE && k.kind != GPUCOLL_COLL_ALLTOALL) {
                const size_t count = n == 2 && k.strided ? 2 * c.direct_min_bytes / elt : 16;
                CHECK(make_plan(args(k.kind, count, dt, k.op), 0, n, c, true, &p) && is_direct(p.algo));
                if (n == 2 && k.strided) {
                    CHECK(make_plan(args(k.kind, count - 1, dt, k.op), 0, n, c, true, &p) && p.algo == k.above);
                    GpuShare one_gpu{};
                    one_gpu.ranks = 2;
                    CHECK(make_plan(args(k.kind, 16, dt, k.op), 0, n, c, true, &p, one_gpu) && is_direct(p.algo));
                }
            }
        }
    }
}

static void check_ll_exceptions_and_grid(gpucoll_config_t &c, Plan &p)
{
    // in-place alltoall stays on the scratch kernel; the others go LL in place too
    gpucoll_coll_args_t in_place = args(GPUCOLL_COLL_ALLTOALL, 8, GPUCOLL_UINT8, GPUCOLL_OP_NONE);
    in_place.sbuf = nullptr;
    CHECK(make_plan(in_place, 0, 4, c, &p) && p.algo == PeerAlgo::Alltoall);
    in_place.kind = GPUCOLL_COLL_ALLGATHER;
    CHECK(make_plan(in_place, 0, 4, c, &p) && p.algo == PeerAlgo::AllgatherLL);
    // a bad op still has no plan
    CHECK(!make_plan(args(GPUCOLL_COLL_ALLREDUCE, 4, GPUCOLL_FLOAT32, GPUCOLL_OP_BAND), 0, 4, c, &p));
    // forced algorithms take precedence
    force_algorithm(&c, GPUCOLL_COLL_ALLREDUCE, "allreduce_oneshot");
    CHECK(make_plan(args(GPUCOLL_COLL_ALLREDUCE, 4, GPUCOLL_FLOAT32, GPUCOLL_OP_SUM), 0, 4, c, &p));
    CHECK(p.algo == PeerAlgo::AllreduceOneShot);
    c.algorithm[GPUCOLL_COLL_ALLREDUCE] = 0;
    // one thread per 8-byte line: 64 KiB of fp32 on 16 blocks of 512 threads
    CHECK(make_plan(args(GPUCOLL_COLL_ALLREDUCE, 16384, GPUCOLL_FLOAT32, GPUCOLL_OP_SUM), 0, 4, c, &p));
    CHECK(blocks_for(p, 4, c, 4) * c.threads_per_block * 8 >= 65536);
}

// the area: 32 bytes per byte of ll_max_bytes; the parameter is capped
static void check_ll_area()
{
    CHECK(ll_slot_bytes_for(65536) == 131072 && ll_area_bytes(65536) == 2 * kMaxPeers * 131072);
    CHECK(ll_slot_bytes_for(1) == 32);
    gpucoll_config_t d{};
    d.ll_max_bytes = 64u << 20;
    gpucoll_config_fill_defaults(&d);
    CHECK(d.ll_max_bytes == GPUCOLL_LL_MAX_BYTES_CAP);
    CHECK(GPUCOLL_DEFAULT_LL_MAX_BYTES <= GPUCOLL_LL_MAX_BYTES_CAP);
}

// flag-in-data (LL) kernels: off when ll_max_bytes is 0 (what a hand-filled
// config has); on, they serve allreduce, reduce_scatter_block, allgather
// and bcast up to ll_max_bytes per rank through scratch, never a call
// that runs zero-copy or a forced allreduce algorithm
static void check_ll_kernels(const gpucoll_config_t &cfg, Plan &p)
{
    gpucoll_config_t c = cfg;
    CHECK(c.ll_max_bytes == 0);
    CHECK(make_plan(args(GPUCOLL_COLL_BCAST, 8, GPUCOLL_UINT8, GPUCOLL_OP_NONE), 0, 4, c, &p));
    CHECK(p.algo == PeerAlgo::Bcast);
    c.ll_max_bytes = 65536;
    check_ll_by_kind(c, p);
    check_ll_exceptions_and_grid(c, p);
    check_ll_area();
}

// threads per block: whole warps in 32..what the kernels launch with, whatever is asked for
static void check_threads_per_block()
{
    for (int asked : {1, 31, 33, 100, 512, 1000, 1024, 4096}) {
        gpucoll_config_t c{};
        c.threads_per_block = asked;
        gpucoll_config_fill_defaults(&c);
        int want = asked < 32 ? 32 : asked > GPUCOLL_MAX_THREADS_PER_BLOCK ? GPUCOLL_MAX_THREADS_PER_BLOCK : asked / 32 * 32;
        CHECK(c.threads_per_block == want);
    }
}

// the datatype x op table
static void check_op_table()
{
    int valid = 0;
    for (int d = 0; d < GPUCOLL_DTYPE_COUNT; d++)
        for (int o = 0; o < GPUCOLL_OP_COUNT; o++) valid += gpucoll_op_valid((gpucoll_op_t)o, (gpucoll_dtype_t)d);
    CHECK(valid == 8 * 10 + 4 * 4);
}

// The table: every algorithm has one name and a protocol that agrees with
// what the kernels test (is_direct, is_ll, moves_bytes); every kind has rows,
// and every row make_plan can pick for a kind is one of that kind's rows.
// (test_algo_forcing checks the rows against the forcing parameters.)
static void check_algorithm_table(const gpucoll_config_t &cfg)
{
    std::set<std::string> names;
    for (int i = 0; i <= (int)PeerAlgo::AlltoallLL; i++) {
        PeerAlgo al = (PeerAlgo)i;
        std::string n = algo_name(al);
        CHECK(n != "?", "algorithm %d has no row", i);
        CHECK(names.insert(n).second, "name %s twice", n.c_str());
        Protocol pr = algo_protocol(al);
        CHECK(is_direct(al) == (pr == Protocol::ZeroCopyPull || pr == Protocol::ZeroCopyPush), "%s", n.c_str());
        CHECK(is_ll(al) == (pr == Protocol::LL), "%s", n.c_str());
    }
    for (int k = GPUCOLL_COLL_ALLREDUCE; k <= GPUCOLL_COLL_ALLTOALLV; k++) {
        PeerAlgo rows[16];
        int n = algo_rows((gpucoll_coll_kind_t)k, rows, 16);
        CHECK(n >= 1, "kind %d has no algorithm", k);
        for (bool direct : {false, true})
            for (size_t count : {(size_t)1, (size_t)1000, (size_t)1 << 22}) {
                gpucoll_coll_args_t a = args((gpucoll_coll_kind_t)k, count, GPUCOLL_FLOAT32, GPUCOLL_OP_SUM);
                size_t counts[4] = {count, count, count, count}, displs[4] = {0, count, 2 * count, 3 * count};
                a.counts = counts;
                a.displs = displs;
                a.rcounts = counts;
                a.rdispls = displs;
                bool moves = k == GPUCOLL_COLL_BCAST || k == GPUCOLL_COLL_ALLGATHER || k == GPUCOLL_COLL_ALLTOALL ||
                             k == GPUCOLL_COLL_ALLGATHERV || k == GPUCOLL_COLL_ALLTOALLV;
                if (moves) {
                    a.dtype = GPUCOLL_UINT8;
                    a.op = GPUCOLL_OP_NONE;
                }
                Plan p;
                if (!make_plan(a, 0, 4, cfg, direct, &p)) continue;
                bool listed = false;
                for (int r = 0; r < n; r++) listed |= rows[r] == p.algo;
                CHECK(listed, "kind %d picked %s, not one of its rows", k, algo_name(p.algo));
                CHECK(moves_bytes(p.algo) == moves, "%s", algo_name(p.algo));
            }
    }
}

// Queued calls (nonblocking, persistent, stream-ordered: no host agreement)
// without mapped buffers: never zero-copy, whatever the size, rank count,
// root or direct_style; otherwise the blocking call's algorithm, the one-way
// LL kernels of bcast and reduce included, with their senders told to wait
// for the peers' acknowledgements (kernels/ll_lines.cuh), which blocking
// plans are not.
static void check_queued_kernels(const gpucoll_config_t &cfg, const gpucoll_config_t &lcfg, Plan &p)
{
    const gpucoll_coll_kind_t kinds[] = {GPUCOLL_COLL_ALLREDUCE, GPUCOLL_COLL_REDUCE, GPUCOLL_COLL_BCAST,
                                         GPUCOLL_COLL_ALLGATHER, GPUCOLL_COLL_REDUCE_SCATTER_BLOCK,
                                         GPUCOLL_COLL_ALLTOALL};
    const size_t sizes[] = {1, 4, lcfg.ll_max_bytes / 4, lcfg.ll_max_bytes / 4 + 1, cfg.oneshot_max_bytes / 4 + 1,
                            cfg.direct_min_bytes / 4 + 1, (64u << 20) / 4};
    int ll_seen = 0;
    for (int style : {GPUCOLL_DIRECT_AUTO, GPUCOLL_DIRECT_PUSH, GPUCOLL_DIRECT_PULL})
        for (gpucoll_coll_kind_t k : kinds)
            for (size_t n : sizes)
                for (int ranks = 1; ranks <= 8; ranks++)
                    for (bool one_gpu : {false, true}) {
                        gpucoll_config_t c = lcfg;
                        c.direct_style = style;
                        const bool reduces = k == GPUCOLL_COLL_ALLREDUCE || k == GPUCOLL_COLL_REDUCE ||
                                             k == GPUCOLL_COLL_REDUCE_SCATTER_BLOCK;
                        gpucoll_coll_args_t a = args(k, n, reduces ? GPUCOLL_FLOAT32 : GPUCOLL_UINT8,
                                                     reduces ? GPUCOLL_OP_SUM : GPUCOLL_OP_NONE);
                        a.root = ranks - 1;
                        GpuShare share{132, one_gpu ? ranks : 1};
                        bool got = make_plan(a, 0, ranks, c, false, &p, share, true);
                        CHECK(got, "kind %d, %zu elements, %d ranks", (int)k, n, ranks);
                        if (!got) continue;
                        CHECK(!is_direct(p.algo) && p.wait_acks == ll_one_way(p.algo),
                              "kind %d, %zu elements, %d ranks: %s", (int)k, n, ranks, algo_name(p.algo));
                        ll_seen += p.algo == PeerAlgo::BcastLL || p.algo == PeerAlgo::ReduceLL;
                        Plan b{};
                        CHECK(make_plan(a, 0, ranks, c, false, &b, share) && b.algo == p.algo && !b.wait_acks,
                              "kind %d, %zu elements, %d ranks: blocking %s, queued %s", (int)k, n, ranks,
                              algo_name(b.algo), algo_name(p.algo));
                    }
    CHECK(ll_seen > 0, "queued bcast and reduce do not take their LL kernels");
}

// A persistent plan whose buffers every rank has mapped (direct)
// runs the blocking call's zero-copy kernel: those begin and end with
// a barrier of every rank.
static void check_persistent_zero_copy(const gpucoll_config_t &lcfg)
{
    for (gpucoll_coll_kind_t k : {GPUCOLL_COLL_ALLREDUCE, GPUCOLL_COLL_BCAST, GPUCOLL_COLL_ALLGATHER,
                                  GPUCOLL_COLL_REDUCE_SCATTER_BLOCK, GPUCOLL_COLL_ALLTOALL})
        for (int ranks = 2; ranks <= 8; ranks++) {
            const bool reduces = k == GPUCOLL_COLL_ALLREDUCE || k == GPUCOLL_COLL_REDUCE_SCATTER_BLOCK;
            gpucoll_coll_args_t a = args(k, (64u << 20) / 4, reduces ? GPUCOLL_FLOAT32 : GPUCOLL_UINT8,
                                         reduces ? GPUCOLL_OP_SUM : GPUCOLL_OP_NONE);
            Plan q{}, b{};
            // (Two-rank bcast stays on scratch below 256 MiB: check_two_rank_bcast.)
            const bool scratch = k == GPUCOLL_COLL_BCAST && ranks == 2;
            CHECK(make_plan(a, 0, ranks, lcfg, true, &q, GpuShare{}, true) &&
                      make_plan(a, 0, ranks, lcfg, true, &b) && q.algo == b.algo && is_direct(q.algo) != scratch,
                  "kind %d, %d ranks: queued %s, blocking %s", (int)k, ranks, algo_name(q.algo), algo_name(b.algo));
        }
}

// Two ranks, a GPU each: bcast on mapped buffers takes the scratch plans
// from 4 MiB up to 256 MiB, zero-copy outside that range; three ranks, one
// GPU for both, or a forced style keep zero-copy.
static void check_two_rank_bcast(const gpucoll_config_t &lcfg)
{
    const struct {
        size_t bytes;
        int ranks, share, style;
        const char *want;
    } rows[] = {
        {1u << 20, 2, 1, GPUCOLL_DIRECT_AUTO, "bcast_push"},
        {4u << 20, 2, 1, GPUCOLL_DIRECT_AUTO, "bcast"},
        {64u << 20, 2, 1, GPUCOLL_DIRECT_AUTO, "bcast_forward"},
        {(256u << 20) - 1, 2, 0, GPUCOLL_DIRECT_AUTO, "bcast_forward"},
        {256u << 20, 2, 1, GPUCOLL_DIRECT_AUTO, "bcast_push"},
        {64u << 20, 3, 1, GPUCOLL_DIRECT_AUTO, "bcast_push"},
        {64u << 20, 2, 2, GPUCOLL_DIRECT_AUTO, "bcast_spread"},
        {64u << 20, 2, 1, GPUCOLL_DIRECT_PUSH, "bcast_push"},
        {64u << 20, 2, 1, GPUCOLL_DIRECT_PULL, "bcast_direct"},
    };
    for (const auto &r : rows) {
        gpucoll_config_t c = lcfg;
        c.direct_style = r.style;
        Plan p{};
        CHECK(make_plan(args(GPUCOLL_COLL_BCAST, r.bytes, GPUCOLL_UINT8, GPUCOLL_OP_NONE), 0, r.ranks, c, true, &p,
                        GpuShare{132, r.share}) &&
                  std::string(algo_name(p.algo)) == r.want,
              "%zu bytes, %d ranks, %d on the GPU, style %d: %s, not %s", r.bytes, r.ranks, r.share, r.style,
              algo_name(p.algo), r.want);
    }
}

// Small bcast and reduce take LL queued or not; only the queued plan waits
// for acknowledgements.
static void check_queued_one_way_ll(const gpucoll_config_t &lcfg, Plan &p)
{
    CHECK(make_plan(args(GPUCOLL_COLL_BCAST, 64, GPUCOLL_UINT8, GPUCOLL_OP_NONE), 0, 2, lcfg, false, &p) &&
          p.algo == PeerAlgo::BcastLL && !p.wait_acks);
    CHECK(make_plan(args(GPUCOLL_COLL_BCAST, 64, GPUCOLL_UINT8, GPUCOLL_OP_NONE), 0, 2, lcfg, false, &p, GpuShare{},
                    true) &&
          p.algo == PeerAlgo::BcastLL && p.wait_acks);
    CHECK(make_plan(args(GPUCOLL_COLL_REDUCE, 16, GPUCOLL_FLOAT32, GPUCOLL_OP_SUM), 0, 2, lcfg, false, &p, GpuShare{},
                    true) &&
          p.algo == PeerAlgo::ReduceLL && p.wait_acks);
}

// The two-shot reduce: 4 ranks from 4 MiB, 3 from 16 MiB (the root's time,
// session 33), in every mode, the resident kernels included; reduce_stores
// at 2 ranks.
static void check_twoshot_reduce(const gpucoll_config_t &cfg)
{
    Plan p{};
    const gpucoll_coll_args_t big = args(GPUCOLL_COLL_REDUCE, (4u << 20) / 4, GPUCOLL_FLOAT32, GPUCOLL_OP_SUM);
    CHECK(make_plan(big, 0, 4, cfg, false, &p, GpuShare{}, true) && p.algo == PeerAlgo::ReduceTwoShot);
    CHECK(make_plan(big, 0, 4, cfg, false, &p) && p.algo == PeerAlgo::ReduceTwoShot);
    CHECK(make_plan(big, 0, 3, cfg, false, &p) && p.algo == PeerAlgo::Reduce);
    const gpucoll_coll_args_t sixteen = args(GPUCOLL_COLL_REDUCE, (16u << 20) / 4, GPUCOLL_FLOAT32, GPUCOLL_OP_SUM);
    CHECK(make_plan(sixteen, 0, 3, cfg, false, &p) && p.algo == PeerAlgo::ReduceTwoShot);
    // Two ranks, a GPU each: by stores into the root's scratch from 8 MiB,
    // an area per rank but the root (so one); the one-shot below and where
    // the ranks share a GPU.
    CHECK(make_plan(sixteen, 0, 2, cfg, false, &p) && p.algo == PeerAlgo::ReduceStores);
    const gpucoll_coll_args_t four = args(GPUCOLL_COLL_REDUCE, (4u << 20) / 4, GPUCOLL_FLOAT32, GPUCOLL_OP_SUM);
    CHECK(make_plan(four, 0, 2, cfg, false, &p) && p.algo == PeerAlgo::Reduce);
    const gpucoll_coll_args_t huge = args(GPUCOLL_COLL_REDUCE, (64u << 20) / 4, GPUCOLL_FLOAT32, GPUCOLL_OP_SUM);
    CHECK(make_plan(huge, 0, 2, cfg, false, &p) && p.algo == PeerAlgo::ReduceStores && p.scratch_blocks_per_step == 1);
    CHECK(make_plan(huge, 1, 2, cfg, false, &p, GpuShare{}, true) && p.algo == PeerAlgo::ReduceStores);
    GpuShare shared{};
    shared.ranks = 2;
    CHECK(make_plan(huge, 0, 2, cfg, false, &p, shared) && p.algo == PeerAlgo::Reduce);
    const gpucoll_coll_args_t below = args(GPUCOLL_COLL_REDUCE, (4u << 20) / 4 - 4, GPUCOLL_FLOAT32, GPUCOLL_OP_SUM);
    CHECK(make_plan(below, 0, 4, cfg, false, &p, GpuShare{}, true) && p.algo == PeerAlgo::Reduce);
    gpucoll_config_t forced = cfg;
    forced.algorithm[GPUCOLL_COLL_REDUCE] = 4; // reduce_ll, reduce, reduce_push, reduce_twoshot
    CHECK(std::strcmp(forced_algorithm(GPUCOLL_COLL_REDUCE, forced), "reduce_twoshot") == 0);
    gpucoll_config_t stores = cfg;
    stores.algorithm[GPUCOLL_COLL_REDUCE] = 5;
    CHECK(std::strcmp(forced_algorithm(GPUCOLL_COLL_REDUCE, stores), "reduce_stores") == 0);
    for (int n = 1; n <= 8; n++) // forced at any size: an area for each rank but the root
        CHECK(make_plan(huge, 0, n, stores, false, &p) && p.algo == PeerAlgo::ReduceStores &&
              p.scratch_blocks_per_step == (n > 1 ? n - 1 : 1));
    const gpucoll_coll_args_t small = args(GPUCOLL_COLL_REDUCE, 1024, GPUCOLL_FLOAT32, GPUCOLL_OP_SUM);
    CHECK(make_plan(small, 0, 3, forced, false, &p, GpuShare{}, true) && p.algo == PeerAlgo::ReduceTwoShot &&
          !p.forced_refused);
    gpucoll_config_t resident = forced;
    resident.resident_us = 100;
    CHECK(make_plan(small, 0, 3, resident, false, &p) && p.algo == PeerAlgo::ReduceTwoShot &&
          resident_serves(p, 4, 3, resident));
}

static void check_queued_calls(const gpucoll_config_t &cfg, Plan &p)
{
    gpucoll_config_t lcfg = cfg; // fill_defaults leaves LL off: the MCA default turns it on
    lcfg.ll_max_bytes = GPUCOLL_DEFAULT_LL_MAX_BYTES;
    check_queued_kernels(cfg, lcfg, p);
    check_persistent_zero_copy(lcfg);
    check_two_rank_bcast(lcfg);
    check_queued_one_way_ll(lcfg, p);
    check_twoshot_reduce(cfg);
}

// The parameters every rank must share: equal configs agree, a change
// of any one of them shows, the local ones do not enter.
static void check_config_fingerprint()
{
    gpucoll_config_t base{};
    gpucoll_config_fill_defaults(&base);
    const uint64_t fp = plan_config_fingerprint(base);
    gpucoll_config_t same = base;
    CHECK(plan_config_fingerprint(same) == fp);
    auto differs = [&](const char *what, void (*change)(gpucoll_config_t &)) {
        gpucoll_config_t c = base;
        change(c);
        CHECK(plan_config_fingerprint(c) != fp, "%s does not enter the fingerprint", what);
    };
    differs("algorithm", [](gpucoll_config_t &c) { c.algorithm[GPUCOLL_COLL_BCAST] = 2; });
    differs("oneshot_max_bytes", [](gpucoll_config_t &c) { c.oneshot_max_bytes += 16; });
    differs("scratch_bytes", [](gpucoll_config_t &c) { c.scratch_bytes /= 2; });
    differs("block_bytes", [](gpucoll_config_t &c) { c.block_bytes = 4096; });
    differs("direct_min_bytes", [](gpucoll_config_t &c) { c.direct_min_bytes *= 2; });
    differs("resident_max_bytes", [](gpucoll_config_t &c) { c.resident_max_bytes /= 2; });
    differs("ll_max_bytes", [](gpucoll_config_t &c) { c.ll_max_bytes = 1024; });
    differs("max_blocks", [](gpucoll_config_t &c) { c.max_blocks = 8; });
    differs("busy_max_blocks", [](gpucoll_config_t &c) { c.busy_max_blocks = 32; });
    differs("threads_per_block", [](gpucoll_config_t &c) { c.threads_per_block = 256; });
    differs("direct_style", [](gpucoll_config_t &c) { c.direct_style = c.direct_style ? 0 : 1; });
    differs("resident_us on", [](gpucoll_config_t &c) { c.resident_us = 50; });
    differs("resident_blocks", [](gpucoll_config_t &c) { c.resident_blocks = 16; });
    differs("thread level", [](gpucoll_config_t &c) { c.thread_multiple = 1; });
    differs("auto_windows", [](gpucoll_config_t &c) { c.auto_windows = !c.auto_windows; });
    gpucoll_config_t tm = base;
    tm.thread_multiple = 1;
    gpucoll_config_t tm1 = tm;
    tm1.thread_calls = 1;
    CHECK(plan_config_fingerprint(tm1) != plan_config_fingerprint(tm), "thread_calls under THREAD_MULTIPLE");
    gpucoll_config_t local = base;
    local.verbose = 100;
    local.timeout_ms = 5;
    local.ipc_cache_entries = 3;
    local.order = GPUCOLL_ORDER_NONE;
    local.kernel_launch = 1;
    local.stream_priority = GPUCOLL_STREAM_PRIORITY_HIGH;
    local.thread_calls = 3; // without MPI_THREAD_MULTIPLE it changes nothing
    CHECK(plan_config_fingerprint(local) == fp, "a local parameter entered the fingerprint");
}

int main()
{
    // cfg and p pass from one check to the next as they did when the checks
    // were one function: the grid checks leave kernels_at_once 1 and
    // thread_calls 0 for every check after them, and check_block_bytes
    // resizes the plan check_blocks_by_size_and_kernels_at_once made.
    gpucoll_config_t cfg{};
    gpucoll_config_fill_defaults(&cfg);
    Plan p{};

    check_oneshot_twoshot(cfg, p);
    check_zero_copy_styles(cfg, p);
    check_forced_writes(cfg, p);
    check_ops_by_type(cfg, p);
    check_per_rank_areas(cfg, p);
    check_no_plan(cfg, p);
    check_blocks_by_size_and_kernels_at_once(cfg, p);
    check_blocks_under_threads(cfg, p);
    check_blocks_on_shared_gpu(cfg, p);
    check_zero_copy_alltoall(cfg);
    check_zero_copy_allreduce_on_one_gpu(cfg);
    check_ll_under_threads(cfg);
    check_block_bytes(cfg, p);
    check_resident_kernels(cfg, p);
    check_threads(cfg);
    check_ll_kernels(cfg, p);
    check_threads_per_block();
    check_op_table();
    check_algorithm_table(cfg);
    check_queued_calls(cfg, p);
    check_config_fingerprint();

    std::printf("algo_select: %d failed\n", failures);
    return failures ? 1 : 0;
}
