// Chunk, slice and block partitions of the peer-to-peer path, without a GPU.
//
// The host side (core/algo_select: make_plan, max_chunk_elems, blocks_for)
// is called directly. The device side is the real code of kernels/*.cuh,
// compiled for the host through kernel_host_shim.h: run_steps (the step
// loop), block_range (each block's share), twoshot_slice (each rank's
// slice) and, run block by block and thread by thread, copy_elems and
// reduce_elems, so that a partition bug shows up as a wrong or missing
// element and not only as a broken invariant.
#include "kernel_host_shim.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <vector>

#include "algo_select.hpp"
#include "peer_kernels.cuh"

using namespace gpucoll;

#include "../common/check.h"

// Sizes around every 16-element boundary, then large odd ones.
static std::vector<size_t> test_counts()
{
    std::vector<size_t> v;
    for (size_t n = 0; n <= 300; n++) v.push_back(n);
    for (size_t n : {1021ul, 4097ul, 65537ul, 999999ul, 1048577ul, 8388609ul, 33554431ul, 134217731ul})
        v.push_back(n);
    return v;
}

// ---- the step loop (run_steps) over the plan's chunk --------------------------
struct StepLog {
    size_t next_off;
    uint64_t next_epoch;
    size_t steps, max_n;
    bool in_order;
};
static StepLog step_log;
static bool record_step(const PeerArgs &, size_t off, size_t n, uint64_t epoch)
{
    StepLog &l = step_log;
    if (off != l.next_off || epoch != l.next_epoch || n == 0) l.in_order = false;
    l.next_off = off + n;
    l.next_epoch = epoch + 1;
    l.steps++;
    if (n > l.max_n) l.max_n = n;
    return true;
}

struct Call {
    gpucoll_coll_kind_t kind;
    gpucoll_op_t op;
};

// One plan: its chunk, its blocks for several caps, and the steps the kernel
// takes through each scratch size.
static void check_plan(Plan p, size_t count, size_t elt, int nranks, gpucoll_config_t cfg,
                       const std::vector<size_t> &halves)
{
    CHECK(p.chunk % 16 == 0 && p.chunk >= count && p.chunk < count + 16, "plan chunk %zu for count %zu", p.chunk,
          count);
    for (int max_blocks : {1, 7, 64, 1000}) {
        cfg.max_blocks = max_blocks;
        int cap = max_blocks < kMaxBlocks ? max_blocks : kMaxBlocks;
        int blocks = blocks_for(p, elt, cfg, nranks);
        CHECK(blocks >= 1 && blocks <= cap, "blocks %d cap %d", blocks, cap);
    }
    for (size_t half : halves) {
        // What team.cpp hands the kernel: scratch algorithms are cut to a
        // scratch half, zero-copy ones are not.
        size_t chunk = p.chunk;
        if (!is_direct(p.algo)) {
            size_t max_chunk = max_chunk_elems(p, half, elt);
            CHECK(max_chunk > 0 && max_chunk % 16 == 0, "max_chunk %zu", max_chunk);
            chunk = even_chunk_elems(chunk, max_chunk, elt);
            CHECK(chunk <= max_chunk && chunk % 16 == 0, "chunk %zu of max %zu", chunk, max_chunk);
            // As few steps as whole areas would take; the last not much
            // shorter than the others unless the chunk is a whole area.
            const size_t fewest = (count + max_chunk - 1) / max_chunk, got = (count + chunk - 1) / chunk;
            const size_t page = 4096 / elt, last = count - (got - 1) * chunk;
            CHECK(got <= fewest && (got == 1 || chunk == max_chunk || last + page * (got + 1) >= chunk),
                  "count %zu max %zu: %zu steps of %zu, fewest %zu", count, max_chunk, got, chunk, fewest);
            CHECK(got == 1 || chunk == max_chunk || chunk % page == 0, "chunk %zu not whole pages", chunk);
            CHECK(chunk * elt * (size_t)p.scratch_blocks_per_step <= half, "chunk %zu x %zu B x %d areas > half %zu",
                  chunk, elt, p.scratch_blocks_per_step, half);
        }
        CHECK(chunk % 16 == 0 || chunk >= count, "chunk %zu count %zu", chunk, count);
        size_t steps = (count + chunk - 1) / chunk;
        CHECK(steps * chunk >= count && (steps - 1) * chunk < count, "%zu steps of %zu for %zu", steps, chunk, count);
        if (steps > 20000) continue; // the loop below is linear in steps
        PeerArgs k{};
        k.count = count;
        k.chunk = chunk;
        k.epoch0 = 1000 + count;
        step_log = StepLog{0, k.epoch0, 0, 0, true};
        run_steps<record_step>(k);
        CHECK(step_log.in_order && step_log.next_off == count && step_log.max_n <= chunk,
              "steps of count %zu chunk %zu", count, chunk);
        CHECK(step_log.steps == steps, "%zu steps, want %zu", step_log.steps, steps);
    }
}

static void check_plans()
{
    const Call calls[] = {{GPUCOLL_COLL_ALLREDUCE, GPUCOLL_OP_SUM},          {GPUCOLL_COLL_REDUCE, GPUCOLL_OP_MAX},
                          {GPUCOLL_COLL_REDUCE_SCATTER_BLOCK, GPUCOLL_OP_SUM}, {GPUCOLL_COLL_ALLGATHER, GPUCOLL_OP_NONE},
                          {GPUCOLL_COLL_BCAST, GPUCOLL_OP_NONE},             {GPUCOLL_COLL_ALLTOALL, GPUCOLL_OP_NONE}};
    const gpucoll_dtype_t dtypes[] = {GPUCOLL_UINT8, GPUCOLL_FLOAT16, GPUCOLL_FLOAT32, GPUCOLL_FLOAT64};
    // Scratch sizes as the team cuts them: the default, and small ones that
    // force many steps (a half of 4 KiB holds 2048 fp16 elements at most).
    std::vector<size_t> halves;
    for (size_t scratch : {(size_t)GPUCOLL_DEFAULT_SCRATCH_BYTES, (size_t)1 << 20, kDataOffset + 2 * 4096})
        halves.push_back((scratch - kDataOffset) / 2 / 4096 * 4096);
    const std::vector<size_t> counts = test_counts();

    // Auto, then every algorithm of every kind forced.
    for (int forced_kind = -1; forced_kind < GPUCOLL_FORCEABLE_KINDS; forced_kind++) {
        const int rows = forced_kind < 0 ? 1 : algo_rows((gpucoll_coll_kind_t)forced_kind, nullptr, 0);
        for (int row = 1; row <= rows; row++) {
            gpucoll_config_t cfg{};
            if (forced_kind >= 0) cfg.algorithm[forced_kind] = row;
            gpucoll_config_fill_defaults(&cfg);
            for (const Call &c : calls) {
                // A forced algorithm only matters to its kind.
                if (forced_kind >= 0 && c.kind != forced_kind) continue;
                for (int nranks = 1; nranks <= kMaxPeers; nranks++)
                    for (gpucoll_dtype_t dt : dtypes)
                        for (bool direct : {false, true})
                            for (size_t count : counts) {
                                if (count == 0) continue;
                                gpucoll_coll_args_t a{};
                                a.kind = c.kind;
                                a.count = count;
                                a.dtype = dt;
                                a.op = c.op;
                                a.local_ok = 1;
                                Plan p{};
                                bool ok = make_plan(a, 0, nranks, cfg, direct, &p);
                                // Through scratch every pair has a plan; not every kind has a
                                // zero-copy one (test_algo_select covers which).
                                CHECK(ok || direct, "kind %d n %zu ranks %d: no plan", c.kind, count, nranks);
                                if (!ok) continue;
                                check_plan(p, count, gpucoll_dtype_size(dt), nranks, cfg, halves);
                            }
            }
        }
    }
}

// ---- block_range: blocks of a grid cut [0, n) into aligned, disjoint parts ----
static void check_block_ranges()
{
    for (size_t n : test_counts())
        for (size_t align : {16ul, 8ul, 4ul, 2ul}) // 16 bytes of 1-, 2-, 4- and 8-byte elements
            for (unsigned grid = 1; grid <= (unsigned)kMaxBlocks; grid += grid < 64 ? 1 : 64) {
                if (n > 100000 && grid % 8 != 1) continue; // keep large n cheap
                // span: the whole-kernel layout a last, shorter step keeps.
                for (size_t span : {(size_t)0, n + 1, (n + 15) / 16 * 16 + 32}) {
                    gridDim.x = grid;
                    size_t next = 0;
                    for (unsigned b = 0; b < grid; b++) {
                        blockIdx.x = b;
                        Range r = block_range(n, align, span);
                        CHECK(r.begin == next && r.end >= r.begin && r.end <= n,
                              "n %zu align %zu grid %u span %zu block %u: [%zu,%zu) after %zu", n, align, grid, span,
                              b, r.begin, r.end, next);
                        CHECK(r.begin == n || r.begin % align == 0, "unaligned begin %zu", r.begin);
                        // The same block owns the same addresses whatever n <= span.
                        Range whole = block_range(span > n ? span : n, align, span);
                        CHECK(r.begin == (whole.begin < n ? whole.begin : n) &&
                                  r.end == (whole.end < n ? whole.end : n),
                              "block %u moved between n %zu and span %zu", b, n, span);
                        next = r.end;
                    }
                    CHECK(next == n, "n %zu grid %u covered up to %zu", n, grid, next);
                }
            }
    blockIdx.x = 0;
    gridDim.x = 1;
}

// ---- twoshot_slice: the ranks' slices of one step --------------------------
template <class T> static void check_twoshot_slices_of()
{
    constexpr size_t V = 16 / sizeof(T);
    for (size_t n : test_counts())
        for (int nranks = 1; nranks <= kMaxPeers; nranks++) {
            size_t next = 0;
            for (int r = 0; r < nranks; r++) {
                Range s = twoshot_slice<T>(n, r, nranks);
                CHECK(s.begin == next && s.end >= s.begin && s.end <= n, "n %zu ranks %d rank %d: [%zu,%zu)", n,
                      nranks, r, s.begin, s.end);
                CHECK(s.begin == n || (s.begin * sizeof(T)) % 16 == 0, "slice start %zu not 16-byte aligned (V %zu)",
                      s.begin, V);
                next = s.end;
            }
            CHECK(next == n, "n %zu ranks %d: slices cover %zu", n, nranks, next);
        }
}

// ---- the element loops, run as a grid would run them ------------------------
// Every rank's data as the two-shot step sees it: rank j's element i.
static float src_value(int j, size_t i) { return (float)((i * 7 + (size_t)j * 13) % 1000) - 500.0f; }

template <class T> static T to_elem(float f);
template <> float to_elem<float>(float f) { return f; }
template <> bf16_t to_elem<bf16_t>(float f) { return Acc<bf16_t>::store(f); }
template <class T> static float from_elem(T v);
template <> float from_elem<float>(float v) { return v; }
template <> float from_elem<bf16_t>(bf16_t v) { return Acc<bf16_t>::load(v); }

// Reduces n elements of nranks inputs the two-shot way: each rank its slice,
// each slice over a grid of blocks and threads; checks every element once.
template <class T>
static void run_twoshot_reduce(size_t n, int nranks, unsigned grid, unsigned threads, bool vector_ok)
{
    const size_t pad = 16;
    std::vector<std::vector<T>> in(nranks, std::vector<T>(n + pad));
    for (int j = 0; j < nranks; j++)
        for (size_t i = 0; i < n; i++) in[j][i] = to_elem<T>(src_value(j, i));
    const T sentinel = to_elem<T>(12345.0f);
    std::vector<T> out(n + pad, sentinel), out2(n + pad, sentinel);
    for (int r = 0; r < nranks; r++) {
        Range s = twoshot_slice<T>(n, r, nranks);
        T *srcs[kMaxPeers];
        for (int j = 0; j < nranks; j++) srcs[j] = in[j].data() + s.begin;
        kernel_host_launch(grid, threads, [&] {
            reduce_elems<T, OpSum>(out.data() + s.begin, srcs, nranks, s.end - s.begin, vector_ok,
                                   out2.data() + s.begin);
        });
    }
    int bad = 0;
    for (size_t i = 0; i < n && bad < 3; i++) {
        // The kernel's order: rank 0's value, then ranks 1.. added in fp32.
        float acc = from_elem<T>(in[0][i]);
        for (int j = 1; j < nranks; j++) acc += from_elem<T>(in[j][i]);
        T want = to_elem<T>(acc);
        if (memcmp(&out[i], &want, sizeof(T)) || memcmp(&out2[i], &want, sizeof(T))) {
            CHECK(false, "%s n %zu ranks %d grid %u threads %u vec %d: element %zu", sizeof(T) == 4 ? "f32" : "bf16",
                  n, nranks, grid, threads, vector_ok, i);
            bad++;
        }
    }
    for (size_t i = n; i < n + pad; i++)
        CHECK(!memcmp(&out[i], &sentinel, sizeof(T)), "write past the end at %zu (n %zu)", i, n);
}

static void check_element_loops()
{
    for (size_t n : {0ul, 1ul, 15ul, 16ul, 17ul, 31ul, 100ul, 257ul, 1000ul, 4099ul})
        for (int nranks : {1, 2, 3, 5, 8})
            for (unsigned grid : {1u, 3u, 64u})
                for (unsigned threads : {1u, 32u})
                    for (bool vec : {false, true}) {
                        run_twoshot_reduce<float>(n, nranks, grid, threads, vec);
                        run_twoshot_reduce<bf16_t>(n, nranks, grid, threads, vec);
                    }
    // copy_elems with a span larger than n, as the last step of a chunked call.
    for (size_t n : {0ul, 5ul, 16ul, 33ul, 1001ul})
        for (unsigned grid : {1u, 4u, 64u}) {
            std::vector<uint16_t> src(n + 8), dst(n + 8, 0xdead);
            for (size_t i = 0; i < n; i++) src[i] = (uint16_t)(i * 3 + 1);
            kernel_host_launch(grid, 32, [&] { copy_elems(dst.data(), src.data(), n, true, n + 300); });
            bool same = true;
            for (size_t i = 0; i < n; i++) same = same && dst[i] == src[i];
            for (size_t i = n; i < n + 8; i++) same = same && dst[i] == 0xdead;
            CHECK(same, "copy_elems n %zu grid %u", n, grid);
        }
}

// ---- pipelined zero-copy kernels: slices cut into rounds ---------------------------------
// Every receiver's slice is cut into `rounds` aligned pieces that cover it
// exactly (a gap would be a byte nobody copies), and the round flags of one
// call stay below the next call's.
static void check_round_pieces()
{
    for (size_t n : test_counts())
        for (int nranks = 2; nranks <= kMaxPeers; nranks++)
            for (unsigned grid : {1u, 7u, 64u, 128u}) {
                gridDim.x = grid;
                int receivers = nranks - 1;
                int rounds = pipeline_rounds(twoshot_slice<char>(n, 0, receivers).end);
                CHECK(rounds >= 1 && rounds <= kMaxRounds, "n %zu: %d rounds", n, rounds);
                for (int j = 0; j < receivers; j++) {
                    Range s = twoshot_slice<char>(n, j, receivers);
                    size_t next = s.begin;
                    for (int k = 0; k < rounds; k++) {
                        Range p = round_piece<char>(s, k, rounds);
                        CHECK(p.begin == next && p.end >= p.begin && p.end <= s.end, "n %zu slice %d piece %d", n, j, k);
                        CHECK(p.begin == s.end || p.begin % 16 == 0, "piece at %zu not 16-byte aligned", p.begin);
                        next = p.end;
                    }
                    CHECK(next == s.end, "n %zu slice %d: pieces end at %zu of %zu", n, j, next, s.end);
                }
            }
    // 256 MiB on 4 ranks, 128 blocks: pipelined; 4 MiB: one round.
    gridDim.x = 128;
    CHECK(pipeline_rounds(twoshot_slice<char>(256u << 20, 0, 3).end) > 1, "no pipeline at 256 MiB");
    CHECK(pipeline_rounds(twoshot_slice<char>(4u << 20, 0, 3).end) == 1, "pipeline at 4 MiB");
    gridDim.x = 1;
    // The last round a call may count stays below the next call's first.
    for (uint64_t epoch : {1ull, 2ull, 1000ull, 1ull << 30})
        CHECK(round_flag(epoch, (1ull << kRoundBits) - 2) < round_flag(epoch + 1, 0) &&
                  round_flag(epoch, 0) > round_flag(epoch - 1, 1000),
              "round flags overlap at %llu", (unsigned long long)epoch);
}

// ---- the write-based allreduce: pieces in scratch slots ------------------------------------
// Every round's piece of every slice fits its slot, the slots of all writers
// and both parities fit the data area without overlapping, and the pieces
// cover each slice exactly.
template <class T> static void check_write_slots_of()
{
    for (size_t half : {size_t(65536), size_t(1) << 20, size_t(32) << 20})
        for (int nranks = 2; nranks <= kMaxPeers; nranks++)
            for (size_t n : {size_t(1), size_t(17), size_t(4096) + 3, (size_t(8) << 20) / sizeof(T) + 5,
                             (size_t(256) << 20) / sizeof(T)}) {
                gridDim.x = 128;
                PeerArgs a{};
                a.count = n;
                a.nranks = nranks;
                a.half_bytes = half;
                static char area[1];
                for (int r = 0; r < nranks; r++) a.scratch[r] = area;
                size_t slot = write_slot_bytes(a);
                CHECK(slot > 0 && slot % 16 == 0 && slot * kWriteSlots * nranks <= 2 * half, "slot %zu", slot);
                const char *base = area + kDataOffset;
                CHECK(reinterpret_cast<char *>(write_slot<T>(a, 0, nranks - 1, 1)) - base ==
                          (ptrdiff_t)(slot * (kWriteSlots * nranks - 1)),
                      "last slot misplaced");
                int rounds = write_rounds<T>(a);
                CHECK(rounds >= 1 && rounds < (1 << kRoundBits), "%d rounds", rounds);
                for (int j = 0; j < nranks; j++) {
                    Range s = twoshot_slice<T>(n, j, nranks);
                    size_t next = s.begin;
                    for (int k = 0; k < rounds; k++) {
                        Range p = round_piece<T>(s, k, rounds);
                        CHECK(p.begin == next && (p.end - p.begin) * sizeof(T) <= slot,
                              "n %zu nranks %d slice %d piece %d: %zu elements, slot %zu bytes", n, nranks, j, k,
                              p.end - p.begin, slot);
                        next = p.end;
                    }
                    CHECK(next == s.end, "n %zu slice %d not covered", n, j);
                }
            }
    gridDim.x = 1;
}

int main()
{
    check_plans();
    check_block_ranges();
    check_write_slots_of<uint8_t>();
    check_write_slots_of<float>();
    check_write_slots_of<double>();
    check_twoshot_slices_of<uint8_t>();
    check_twoshot_slices_of<half_t>();
    check_twoshot_slices_of<float>();
    check_twoshot_slices_of<double>();
    check_element_loops();
    check_round_pieces();
    std::printf("chunk_math: %d failed\n", failures);
    return failures ? 1 : 0;
}
