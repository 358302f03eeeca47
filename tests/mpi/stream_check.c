/* coll/gpu's stream-ordered collectives (coll_gpu_<coll>_enqueue, the end of
 * include/coll_gpu_ext.h) on device buffers, every result checked exactly
 * against a host reference (integers, and floats that hold small integers).
 *
 *   stream_check [--quick] [--parts LETTERS] [--replays N] [--timeout S]
 *                [--one-gpu] [--verbose]
 *
 *   a. every enqueued kind (allreduce, reduce, bcast, allgather,
 *      reduce_scatter_block, alltoall) x type (int, float, double, int64,
 *      uint8, char for data movement only, and coll_gpu_ext's fp16 / bf16
 *      with their ops) x op (sum, max, min, prod; band, bor, bxor on
 *      integers) x in place or not (where MPI allows it) x count (1 to
 *      2^20 + 5; --quick stops at 65539) x root (0 and the last rank), on a
 *      cudaStreamNonBlocking stream. Per call, all on that stream with no
 *      host synchronisation between: an 8 MiB device copy (keeps the stream
 *      busy), the inputs and a poisoned output copied in from pinned host
 *      memory, the enqueued call, the output copied back; then one
 *      cudaStreamSynchronize and the check. A collective that does not wait
 *      for the stream's earlier work reads the previous call's inputs; one
 *      that later work does not wait for leaves the poison;
 *   b. a chain of about 200 enqueued calls on 8 buffers (int64 and double,
 *      1 to 262147 elements), each in place on the last call's output
 *      (allreduce, or reduce to a root then bcast from it: each multiplies
 *      by the rank count), one synchronisation at the end;
 *   c. CUDA graphs: allreduces (8 B to 64 KiB, in place and not, fp16
 *      included), allgathers, reduce_scatter_blocks, a bcast, a reduce and an
 *      alltoall captured (cudaStreamCaptureModeGlobal) and replayed --replays
 *      times (default 1000), new inputs copied in before each launch (outside
 *      the graph), every replay's outputs checked; then a counter graph (an
 *      allreduce whose input on rank 0 is the last launch's output, plus a
 *      captured device copy) launched 100 times back to back, checked once;
 *   d. an ordinary MPI_Allreduce on device buffers between enqueued calls
 *      (reading an enqueued result, its result read by an enqueued call), and
 *      one while enqueued work is still pending; enqueued calls on a dup of
 *      MPI_COMM_WORLD interleaved with calls on MPI_COMM_WORLD on one stream,
 *      then on two streams in a different order on odd ranks;
 *      coll_gpu_stream_status; MPI_Comm_free of the dup right after an
 *      enqueued call on it (the free must wait for it);
 *   e. the fallback: MPI_2INT with MPI_MAXLOC / MPI_MINLOC and a user op,
 *      enqueued outside a capture, must give the right results; a bcast of
 *      a non-contiguous type must fail with MPI_ERR_TYPE on every rank and
 *      change nothing; the same reductions while capturing must return an error,
 *      the capture is then ended and discarded and the stream works again.
 *
 *   g. senders that wait for nobody, ahead of a late rank: 12 calls enqueued
 *      in turn, bcast from rank 0 and reduce to the last rank (1 to 408
 *      ints: the LL kernels), while the last rank sleeps before it enqueues
 *      any. Bcast's root and reduce's senders end their kernels without
 *      hearing from it; their third call must wait for its acknowledgement
 *      of the first (kernels/ll_lines.cuh) rather than store over lines it
 *      has not read. One synchronisation, every output checked;
 *
 *   f. only with --parts f (and a short coll_gpu_timeout_ms): rank 0
 *      enqueues a call on a dup that no other rank makes; its kernel gives
 *      up; the others' kernels end at once from their second call on; the
 *      dup's status and later calls then fail on every rank, the dup frees,
 *      MPI_COMM_WORLD's enqueued calls still work.
 *
 * A process without coll/gpu (every call MPI_ERR_UNSUPPORTED_OPERATION)
 * fails. Each part runs under a watchdog alarm (--timeout, default 120 s): a
 * rank that checks no result for that long says "deadlock" and exits. Prints
 * each failure with its rank ("FAIL"), one summary line at rank 0, exits 1 on
 * any failure, 77 without a GPU. --one-gpu: every rank on GPU 0 (else rank i
 * of a node takes GPU i % count). --verbose: each part's time at rank 0. */
#define _GNU_SOURCE
#include <cuda_runtime.h>
#include <mpi.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test_gpu.h"
#include "test_watchdog.h"

#include "coll_gpu_ext.h"

static int rank, size, failures, checks, quick, verbose, replays = 1000;
static coll_gpu_ext_t ext;
static cudaStream_t st; /* the non-blocking stream of every part */

/* ---- failures ---------------------------------------------------------------- */
enum { kMaxPrinted = 40 }; /* per rank: a broken build would print thousands */

static void fail(const char *fmt, ...)
{
    failures++;
    if (failures > kMaxPrinted) {
        if (failures == kMaxPrinted + 1) fprintf(stderr, "rank %d FAIL: further failures not printed\n", rank);
        return;
    }
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "rank %d FAIL %s\n", rank, msg);
}

static int cu(cudaError_t e, const char *what)
{
    if (e == cudaSuccess) return 1;
    fail("%s: %s", what, cudaGetErrorString(e));
    return 0;
}

static int mpi_ok(int rc, const char *what)
{
    if (rc == MPI_SUCCESS) return 1;
    char s[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(rc, s, &len) != MPI_SUCCESS) snprintf(s, sizeof s, "?");
    fail("%s returned %d (%s)", what, rc, s);
    return 0;
}

static int timeout_s = 120; /* --timeout: the watchdog's (test_watchdog.h) */

/* ---- memory ------------------------------------------------------------------ */
static void *dev_alloc(size_t bytes) { return test_mem_alloc(1, -1, bytes); }
static void *pin_alloc(size_t bytes)
{
    void *p = NULL;
    if (bytes < 16) bytes = 16;
    if (cudaMallocHost(&p, bytes) != cudaSuccess) {
        fprintf(stderr, "rank %d: cudaMallocHost of %zu bytes failed\n", rank, bytes);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return p;
}

/* An 8 MiB device-to-device copy queued first: the stream is still busy when
 * the collective is enqueued, so one that does not wait for it is caught. */
static void *busy_a, *busy_b;
static const size_t busy_bytes = 8u << 20;
static void keep_busy(cudaStream_t s)
{
    cu(cudaMemcpyAsync(busy_a, busy_b, busy_bytes, cudaMemcpyDeviceToDevice, s), "busy copy");
}

/* ---- element types ------------------------------------------------------------ */
enum kind { K_SIGNED, K_UNSIGNED, K_FLOAT, K_DOUBLE, K_HALF, K_BF16 };
typedef struct {
    const char *name;
    MPI_Datatype mpi;
    size_t size;
    enum kind kind;
    int reduce;      /* reductions too (else data movement only) */
    uint64_t range;  /* data movement values: 0 .. range-1, all exact in the type */
} dtype_t;
enum { D_INT, D_FLOAT, D_DOUBLE, D_INT64, D_UINT8, D_CHAR, D_FP16, D_BF16, kDtypes };
static dtype_t dtypes[kDtypes];

static int is_int(const dtype_t *d) { return d->kind == K_SIGNED || d->kind == K_UNSIGNED; }

static void put(void *buf, const dtype_t *d, size_t i, double v)
{
    char *p = (char *)buf + i * d->size;
    int64_t iv = (int64_t)v;
    switch (d->kind) {
    case K_FLOAT: {
        float f = (float)v;
        memcpy(p, &f, 4);
        break;
    }
    case K_DOUBLE: memcpy(p, &v, 8); break;
    case K_HALF: {
        uint16_t h = coll_gpu_ext_float_to_half((float)v);
        memcpy(p, &h, 2);
        break;
    }
    case K_BF16: {
        uint16_t h = coll_gpu_ext_float_to_bf16((float)v);
        memcpy(p, &h, 2);
        break;
    }
    default: memcpy(p, &iv, d->size); break; /* little endian: the low bytes, i.e. wrap */
    }
}

static double get(const void *buf, const dtype_t *d, size_t i)
{
    const char *p = (const char *)buf + i * d->size;
    switch (d->kind) {
    case K_FLOAT: {
        float f;
        memcpy(&f, p, 4);
        return f;
    }
    case K_DOUBLE: {
        double v;
        memcpy(&v, p, 8);
        return v;
    }
    case K_HALF: {
        uint16_t h;
        memcpy(&h, p, 2);
        return coll_gpu_ext_half_to_float(h);
    }
    case K_BF16: {
        uint16_t h;
        memcpy(&h, p, 2);
        return coll_gpu_ext_bf16_to_float(h);
    }
    default: break;
    }
    uint64_t u = 0;
    memcpy(&u, p, d->size);
    if (d->kind == K_SIGNED && d->size < 8 && (u >> (d->size * 8 - 1)) & 1) u |= ~0ull << (d->size * 8);
    return d->kind == K_SIGNED ? (double)(int64_t)u : (double)u;
}

/* The reference as the type stores it (so that wrap-around matches). */
static double as_stored(const dtype_t *d, double v)
{
    char tmp[8];
    put(tmp, d, 0, v);
    return get(tmp, d, 0);
}

/* ---- ops ---------------------------------------------------------------------- */
enum opid { O_SUM, O_MAX, O_MIN, O_PROD, O_BAND, O_BOR, O_BXOR, kOps, O_USER = kOps };
/* Input values: 1..5 (sum, max, min, the user op), 1..2 (prod), 0..255 (bitwise). */
enum vkind { V_SMALL, V_PROD, V_BITS, V_MOVE };
typedef struct {
    const char *name;
    enum opid id;
    MPI_Op op;
    int int_only;
    enum vkind vk;
} op_t;
static op_t ops[kOps + 1]; /* + the user op of part e */

/* a + b + 1: associative and commutative, and not MPI_SUM (the sum of n
 * inputs plus n - 1). */
static void user_sum_plus_one(void *in, void *inout, int *len, MPI_Datatype *t)
{
    (void)t;
    const int *a = in;
    int *b = inout;
    for (int i = 0; i < *len; i++) b[i] = a[i] + b[i] + 1;
}

static double combine(const op_t *o, double a, double b)
{
    uint64_t x = (uint64_t)a, y = (uint64_t)b;
    switch (o->id) {
    case O_SUM: return a + b;
    case O_MAX: return a > b ? a : b;
    case O_MIN: return a < b ? a : b;
    case O_PROD: return a * b;
    case O_BAND: return (double)(x & y);
    case O_BOR: return (double)(x | y);
    case O_BXOR: return (double)(x ^ y);
    default: return a + b + 1;
    }
}

/* fp16 / bf16 reduce with coll_gpu_ext's ops (the reference uses the predefined meaning). */
static MPI_Op mpi_op(const dtype_t *d, const op_t *o)
{
    if (d->kind != K_HALF && d->kind != K_BF16) return o->op;
    int bf = d->kind == K_BF16;
    switch (o->id) {
    case O_SUM: return bf ? ext.bfloat16_sum : ext.float16_sum;
    case O_PROD: return bf ? ext.bfloat16_prod : ext.float16_prod;
    case O_MAX: return bf ? ext.bfloat16_max : ext.float16_max;
    default: return bf ? ext.bfloat16_min : ext.float16_min;
    }
}

/* Rank r's input element i under seed: distinct per rank and element. */
static double in_value(const dtype_t *d, enum vkind vk, unsigned seed, int r, size_t i)
{
    size_t s = seed, ru = (size_t)r;
    switch (vk) {
    case V_PROD: return 1 + (double)((ru + i + s) % 2);
    case V_BITS: return (double)((ru * 37 + i * 11 + s * 101) % 256);
    case V_MOVE: return (double)(((uint64_t)ru * 1000003u + (uint64_t)i * 7u + (uint64_t)s * 131u) % d->range);
    default: return 1 + (double)((ru * 3 + i * 7 + s) % 5);
    }
}

/* Compares n elements of host memory h with ref(ctx, j), as the type stores it. */
typedef double (*ref_fn)(const void *ctx, size_t j);
static void compare(const char *what, const dtype_t *d, const void *h, size_t n, ref_fn ref, const void *ctx)
{
    checks++;
    still_moving();
    for (size_t j = 0; j < n; j++) {
        double want = as_stored(d, ref(ctx, j)), got = get(h, d, j);
        if (got != want) {
            fail("%s: element %zu is %g, expected %g", what, j, got, want);
            return;
        }
    }
}

/* ---- one enqueued collective: buffers, inputs, call, output, reference ------------ */
enum ckind { C_ALLREDUCE, C_REDUCE, C_BCAST, C_ALLGATHER, C_RSB, C_ALLTOALL };
static const char *const cnames[] = {"allreduce", "reduce", "bcast", "allgather", "reduce_scatter_block", "alltoall"};

typedef struct {
    enum ckind kind;
    const dtype_t *d;
    const op_t *o; /* NULL: data movement */
    size_t n;      /* count (per block) */
    int root, in_place;
    MPI_Comm comm;
    cudaStream_t stream;
    void *ds, *dr; /* device send, receive: n * size elements each */
    char *hs, *hr; /* pinned host staging, as large */
    unsigned seed;
    int owned;     /* buffers allocated by case_alloc */
} ccase_t;

/* This rank passes MPI_IN_PLACE (reduce: at the root only). */
static int ip(const ccase_t *c) { return c->in_place && (c->kind != C_REDUCE || rank == c->root); }
static enum vkind vkind_of(const ccase_t *c) { return c->o ? c->o->vk : V_MOVE; }
static size_t all_elems(const ccase_t *c) { return c->n * (size_t)size; }
static size_t send_elems(const ccase_t *c)
{
    if (c->kind == C_BCAST || ip(c)) return 0;
    return c->kind == C_RSB || c->kind == C_ALLTOALL ? all_elems(c) : c->n;
}
static size_t recv_elems(const ccase_t *c) /* what is copied in */
{
    if (c->kind == C_ALLGATHER || c->kind == C_ALLTOALL || (c->kind == C_RSB && ip(c))) return all_elems(c);
    return c->n;
}
static size_t out_elems(const ccase_t *c) /* what is checked */
{
    return c->kind == C_ALLGATHER || c->kind == C_ALLTOALL ? all_elems(c) : c->n;
}
static int has_result(const ccase_t *c) { return c->kind != C_REDUCE || rank == c->root; }

static ccase_t case_new(enum ckind kind, int di, int oi, size_t n, int root, int in_place, MPI_Comm comm,
                        cudaStream_t s)
{
    ccase_t c = {kind, &dtypes[di], oi < 0 ? NULL : &ops[oi], n, root < 0 ? size - 1 : root, in_place, comm, s,
                 NULL, NULL, NULL, NULL, 0, 1};
    size_t bytes = n * (size_t)size * c.d->size;
    c.ds = dev_alloc(bytes);
    c.dr = dev_alloc(bytes);
    c.hs = pin_alloc(bytes);
    c.hr = pin_alloc(bytes);
    return c;
}
static void case_free(ccase_t *c)
{
    if (!c->owned) return;
    cudaFree(c->ds);
    cudaFree(c->dr);
    cudaFreeHost(c->hs);
    cudaFreeHost(c->hr);
    c->ds = c->dr = NULL;
    c->hs = c->hr = NULL;
}

static void case_label(const ccase_t *c, const char *part, char *buf, size_t len)
{
    char root[24] = "";
    if (c->kind == C_BCAST || c->kind == C_REDUCE) snprintf(root, sizeof root, " root %d", c->root);
    snprintf(buf, len, "%s: %s %s%s%s%s%s count %zu%s (seed %u)", part, cnames[c->kind], c->d->name, c->o ? " " : "",
             c->o ? c->o->name : "", c->in_place ? " in place" : "", root, c->n,
             c->comm == MPI_COMM_WORLD ? "" : " (dup)", c->seed);
}

/* Queues on the case's stream: the inputs of seed, the output poisoned
 * (0x7b bytes) where the call must write it. */
static void case_stage(ccase_t *c, unsigned seed)
{
    const dtype_t *d = c->d;
    enum vkind vk = vkind_of(c);
    size_t sn = send_elems(c), rn = recv_elems(c), n = c->n;
    c->seed = seed;
    if (sn) {
        for (size_t j = 0; j < sn; j++) put(c->hs, d, j, in_value(d, vk, seed, rank, j));
        cu(cudaMemcpyAsync(c->ds, c->hs, sn * d->size, cudaMemcpyHostToDevice, c->stream), "copying the input in");
    }
    memset(c->hr, 0x7b, rn * d->size);
    if (c->kind == C_BCAST) {
        if (rank == c->root)
            for (size_t j = 0; j < n; j++) put(c->hr, d, j, in_value(d, vk, seed, rank, j));
    } else if (ip(c)) {
        if (c->kind == C_ALLGATHER)
            for (size_t j = 0; j < n; j++) put(c->hr, d, (size_t)rank * n + j, in_value(d, vk, seed, rank, j));
        else
            for (size_t j = 0; j < rn; j++) put(c->hr, d, j, in_value(d, vk, seed, rank, j));
    }
    cu(cudaMemcpyAsync(c->dr, c->hr, rn * d->size, cudaMemcpyHostToDevice, c->stream), "copying the output in");
}

static int case_enqueue(const ccase_t *c)
{
    MPI_Datatype t = c->d->mpi;
    int n = (int)c->n;
    const void *s = ip(c) ? MPI_IN_PLACE : c->ds;
    MPI_Op op = c->o ? mpi_op(c->d, c->o) : MPI_OP_NULL;
    void *strm = (void *)c->stream;
    switch (c->kind) {
    case C_ALLREDUCE: return coll_gpu_allreduce_enqueue(s, c->dr, n, t, op, c->comm, strm);
    case C_REDUCE: return coll_gpu_reduce_enqueue(s, c->dr, n, t, op, c->root, c->comm, strm);
    case C_BCAST: return coll_gpu_bcast_enqueue(c->dr, n, t, c->root, c->comm, strm);
    case C_ALLGATHER: return coll_gpu_allgather_enqueue(s, n, t, c->dr, n, t, c->comm, strm);
    case C_RSB: return coll_gpu_reduce_scatter_block_enqueue(s, c->dr, n, t, op, c->comm, strm);
    case C_ALLTOALL: return coll_gpu_alltoall_enqueue(s, n, t, c->dr, n, t, c->comm, strm);
    }
    return MPI_ERR_OTHER;
}

/* Queues the copy of the output back on the case's stream. */
static void case_fetch(ccase_t *c)
{
    if (!has_result(c)) return;
    cu(cudaMemcpyAsync(c->hr, c->dr, out_elems(c) * c->d->size, cudaMemcpyDeviceToHost, c->stream),
       "copying the output back");
}

static double fold(const ccase_t *c, size_t i)
{
    enum vkind vk = vkind_of(c);
    double acc = in_value(c->d, vk, c->seed, 0, i);
    for (int p = 1; p < size; p++) acc = combine(c->o, acc, in_value(c->d, vk, c->seed, p, i));
    return acc;
}
static double want_elem(const void *ctx, size_t j)
{
    const ccase_t *c = ctx;
    size_t n = c->n;
    enum vkind vk = vkind_of(c);
    switch (c->kind) {
    case C_ALLREDUCE:
    case C_REDUCE: return fold(c, j);
    case C_RSB: return fold(c, (size_t)rank * n + j);
    case C_BCAST: return in_value(c->d, vk, c->seed, c->root, j);
    case C_ALLGATHER: return in_value(c->d, vk, c->seed, (int)(j / n), j % n);
    case C_ALLTOALL: return in_value(c->d, vk, c->seed, (int)(j / n), (size_t)rank * n + j % n);
    }
    return -1;
}

/* After the stream's synchronisation: the output against the reference. */
static void case_check(const ccase_t *c, const char *part)
{
    if (!has_result(c)) return;
    char what[192];
    case_label(c, part, what, sizeof what);
    compare(what, c->d, c->hr, out_elems(c), want_elem, c);
}

/* Stage, enqueue, fetch, synchronise, check: one call of part a (or after). */
static unsigned next_seed = 1;
static void run_case(ccase_t *c, const char *part)
{
    char what[192];
    keep_busy(c->stream);
    case_stage(c, next_seed++);
    case_label(c, part, what, sizeof what);
    int ok = mpi_ok(case_enqueue(c), what);
    case_fetch(c);
    ok &= cu(cudaStreamSynchronize(c->stream), "cudaStreamSynchronize");
    if (ok) case_check(c, part);
}

/* ---- a. the sweep ------------------------------------------------------------ */
static void part_sweep(void)
{
    static const size_t counts[] = {1, 2, 3, 7, 31, 1000, 4097, 65536 + 3, (1u << 20) + 5};
    size_t ncounts = sizeof counts / sizeof counts[0] - (quick ? 1 : 0);
    size_t maxn = counts[ncounts - 1], bytes = maxn * (size_t)size * 8;
    int roots[2] = {0, size - 1}, nroots = size > 1 ? 2 : 1;
    ccase_t c = {0};
    c.comm = MPI_COMM_WORLD;
    c.stream = st;
    c.ds = dev_alloc(bytes);
    c.dr = dev_alloc(bytes);
    c.hs = pin_alloc(bytes);
    c.hr = pin_alloc(bytes);
    for (size_t ci = 0; ci < ncounts; ci++) {
        char part[64];
        snprintf(part, sizeof part, "a: every kind, type and op, count %zu", counts[ci]);
        begin_part(part);
        c.n = counts[ci];
        for (int di = 0; di < kDtypes; di++) {
            c.d = &dtypes[di];
            if (!c.d->reduce) continue;
            for (int oi = 0; oi < kOps; oi++) {
                c.o = &ops[oi];
                if (c.o->int_only && !is_int(c.d)) continue;
                /* --quick: prod, band and bor on int only */
                if (quick && di != D_INT && (oi == O_PROD || oi == O_BAND || oi == O_BOR)) continue;
                for (int inp = 0; inp < 2; inp++) {
                    c.in_place = inp;
                    c.kind = C_ALLREDUCE;
                    run_case(&c, "a");
                    c.kind = C_RSB;
                    run_case(&c, "a");
                    c.kind = C_REDUCE;
                    for (int ri = 0; ri < nroots; ri++) {
                        c.root = roots[ri];
                        run_case(&c, "a");
                    }
                }
            }
        }
        c.o = NULL;
        for (int di = 0; di < kDtypes; di++) {
            c.d = &dtypes[di];
            c.in_place = 0;
            c.kind = C_BCAST;
            for (int ri = 0; ri < nroots; ri++) {
                c.root = roots[ri];
                run_case(&c, "a");
            }
            for (int inp = 0; inp < 2; inp++) {
                c.in_place = inp;
                c.kind = C_ALLGATHER;
                run_case(&c, "a");
                c.kind = C_ALLTOALL;
                run_case(&c, "a");
            }
        }
        end_part();
    }
    cudaFree(c.ds);
    cudaFree(c.dr);
    cudaFreeHost(c.hs);
    cudaFreeHost(c.hr);
}

/* ---- b. a chain of enqueued calls, one synchronisation ----------------------- */
typedef struct {
    int b, rounds;
} chain_ctx;
static double chain_want(const void *ctx, size_t i)
{
    const chain_ctx *x = ctx;
    double v = 0;
    for (int p = 0; p < size; p++) v += 1 + (double)(((size_t)p * 3 + i * 7 + (size_t)x->b) % 5);
    for (int k = 1; k < x->rounds; k++) v *= size;
    return v;
}

static void part_chain(void)
{
    enum { B = 8 };
    static const size_t counts[B] = {1, 3, 7, 31, 1000, 4097, 65539, 262147};
    /* size^rounds * 5 below 2^52: exact in double and int64 */
    int rounds = 0;
    double grow = 1;
    while (rounds < 25 && 5.0 * grow * size < 4503599627370496.0) {
        grow *= size;
        rounds++;
    }
    char part[96];
    snprintf(part, sizeof part, "b: %d rounds of enqueued calls on %d buffers, one synchronisation", rounds, B);
    begin_part(part);
    void *dx[B];
    char *hx[B];
    const dtype_t *dt[B];
    for (int b = 0; b < B; b++) {
        dt[b] = &dtypes[b % 2 ? D_DOUBLE : D_INT64];
        dx[b] = dev_alloc(counts[b] * 8);
        hx[b] = pin_alloc(counts[b] * 8);
        for (size_t i = 0; i < counts[b]; i++) put(hx[b], dt[b], i, 1 + (double)(((size_t)rank * 3 + i * 7 + (size_t)b) % 5));
        cu(cudaMemcpyAsync(dx[b], hx[b], counts[b] * 8, cudaMemcpyHostToDevice, st), "b: copying the input in");
    }
    int calls = 0, errors = 0;
    for (int k = 0; k < rounds && !errors; k++)
        for (int b = 0; b < B && !errors; b++) {
            MPI_Datatype t = dt[b]->mpi;
            int n = (int)counts[b];
            if ((k + b) % 3 == 2 && size > 1) { /* reduce to a root, bcast from it: an allreduce too */
                int root = (k + b) % size;
                errors += !mpi_ok(coll_gpu_reduce_enqueue(rank == root ? MPI_IN_PLACE : dx[b], rank == root ? dx[b] : NULL,
                                                          n, t, MPI_SUM, root, MPI_COMM_WORLD, (void *)st),
                                  "b: reduce_enqueue");
                errors += !mpi_ok(coll_gpu_bcast_enqueue(dx[b], n, t, root, MPI_COMM_WORLD, (void *)st), "b: bcast_enqueue");
                calls += 2;
            } else {
                errors += !mpi_ok(coll_gpu_allreduce_enqueue(MPI_IN_PLACE, dx[b], n, t, MPI_SUM, MPI_COMM_WORLD, (void *)st),
                                  "b: allreduce_enqueue");
                calls++;
            }
        }
    for (int b = 0; b < B; b++)
        cu(cudaMemcpyAsync(hx[b], dx[b], counts[b] * 8, cudaMemcpyDeviceToHost, st), "b: copying the output back");
    int synced = cu(cudaStreamSynchronize(st), "b: cudaStreamSynchronize");
    for (int b = 0; b < B && synced && !errors; b++) {
        chain_ctx x = {b, rounds};
        char what[128];
        snprintf(what, sizeof what, "b: buffer %d (%s, count %zu) after %d enqueued calls", b, dt[b]->name, counts[b],
                 calls);
        compare(what, dt[b], hx[b], counts[b], chain_want, &x);
    }
    for (int b = 0; b < B; b++) {
        cudaFree(dx[b]);
        cudaFreeHost(hx[b]);
    }
    end_part();
}

/* ---- g. one-way senders ahead of a late rank (see the top) -------------------- */
typedef struct {
    int call, reduce;
} ahead_ctx;
static double ahead_in(int call, int r, size_t i) { return 1 + (double)(((size_t)call * 7 + (size_t)r * 13 + i) % 97); }
static double ahead_want(const void *ctx, size_t i)
{
    const ahead_ctx *x = ctx;
    if (!x->reduce) return ahead_in(x->call, 0, i);
    double s = 0;
    for (int p = 0; p < size; p++) s += ahead_in(x->call, p, i);
    return s;
}

static void part_one_way_ahead(void)
{
    enum { K = 12 };
    const char *part = "g: one-way senders ahead of a late rank";
    begin_part(part);
    const dtype_t *d = &dtypes[D_INT];
    const int late = size - 1;
    void *dx[K];
    int *hx[K];
    size_t n[K];
    for (int k = 0; k < K; k++) {
        n[k] = 1 + (size_t)k * 37;
        dx[k] = dev_alloc(n[k] * 4);
        hx[k] = pin_alloc(n[k] * 4);
        const int reduce = k % 2;
        for (size_t i = 0; i < n[k]; i++) hx[k][i] = reduce || rank == 0 ? (int)ahead_in(k, rank, i) : -7;
        cu(cudaMemcpyAsync(dx[k], hx[k], n[k] * 4, cudaMemcpyHostToDevice, st), "g: copying the input in");
    }
    cu(cudaStreamSynchronize(st), "g: cudaStreamSynchronize");
    if (rank == late) usleep(200 * 1000);
    int errors = 0;
    for (int k = 0; k < K && !errors; k++) {
        if (k % 2)
            errors += !mpi_ok(coll_gpu_reduce_enqueue(rank == late ? MPI_IN_PLACE : dx[k], rank == late ? dx[k] : NULL,
                                                      (int)n[k], MPI_INT, MPI_SUM, late, MPI_COMM_WORLD, (void *)st),
                              "g: reduce_enqueue");
        else
            errors += !mpi_ok(coll_gpu_bcast_enqueue(dx[k], (int)n[k], MPI_INT, 0, MPI_COMM_WORLD, (void *)st),
                              "g: bcast_enqueue");
    }
    for (int k = 0; k < K; k++)
        cu(cudaMemcpyAsync(hx[k], dx[k], n[k] * 4, cudaMemcpyDeviceToHost, st), "g: copying the output back");
    const int synced = cu(cudaStreamSynchronize(st), "g: cudaStreamSynchronize");
    for (int k = 0; k < K && synced && !errors; k++) {
        if (k % 2 && rank != late) continue;
        ahead_ctx x = {k, k % 2};
        char what[96];
        snprintf(what, sizeof what, "g: %s %zu ints, call %d of %d", k % 2 ? "reduce" : "bcast", n[k], k, K);
        compare(what, d, hx[k], n[k], ahead_want, &x);
    }
    for (int k = 0; k < K; k++) {
        cudaFree(dx[k]);
        cudaFreeHost(hx[k]);
    }
    end_part();
}

/* ---- c. CUDA graphs ---------------------------------------------------------- */
static int end_capture(cudaGraph_t *graph, const char *what)
{
    *graph = NULL;
    cudaError_t e = cudaStreamEndCapture(st, graph);
    if (e != cudaSuccess) {
        fail("%s: cudaStreamEndCapture: %s", what, cudaGetErrorString(e));
        if (*graph) cudaGraphDestroy(*graph);
        *graph = NULL;
        (void)cudaGetLastError();
        return 0;
    }
    return 1;
}

static void part_graph_replays(void)
{
    static const struct {
        enum ckind kind;
        int di, oi;
        size_t n;
        int root, in_place;
    } spec[] = {
        {C_ALLREDUCE, D_INT, O_SUM, 2, 0, 0},        /* 8 B */
        {C_ALLREDUCE, D_FLOAT, O_MAX, 1024, 0, 1},   /* 4 KiB */
        {C_ALLREDUCE, D_INT64, O_SUM, 8192, 0, 0},   /* 64 KiB */
        {C_ALLREDUCE, D_DOUBLE, O_SUM, 513, 0, 1},
        {C_ALLREDUCE, D_INT, O_BXOR, 4097, 0, 0},
        {C_ALLREDUCE, D_FP16, O_SUM, 100, 0, 1},
        {C_ALLGATHER, D_INT, -1, 1000, 0, 0},
        {C_ALLGATHER, D_FLOAT, -1, 33, 0, 1},
        {C_RSB, D_FLOAT, O_SUM, 777, 0, 0},
        {C_RSB, D_INT, O_MIN, 64, 0, 1},
        {C_BCAST, D_INT, -1, 4097, -1, 0},
        {C_REDUCE, D_DOUBLE, O_SUM, 3000, 0, 0},
        {C_ALLTOALL, D_INT, -1, 100, 0, 0},
    };
    enum { kSpec = sizeof spec / sizeof spec[0] };
    char part[96];
    snprintf(part, sizeof part, "c: a graph of %d enqueued calls replayed %d times", (int)kSpec, replays);
    begin_part(part);
    ccase_t c[kSpec];
    for (int i = 0; i < kSpec; i++)
        c[i] = case_new(spec[i].kind, spec[i].di, spec[i].oi, spec[i].n, spec[i].root, spec[i].in_place, MPI_COMM_WORLD,
                        st);
    cudaGraph_t graph = NULL;
    cudaGraphExec_t exec = NULL;
    int ok = cu(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal), "c: cudaStreamBeginCapture");
    if (ok) {
        for (int i = 0; i < kSpec; i++) {
            char what[192];
            case_label(&c[i], "c: captured", what, sizeof what);
            ok &= mpi_ok(case_enqueue(&c[i]), what);
        }
        ok &= end_capture(&graph, "c");
    }
    if (ok) ok = cu(cudaGraphInstantiateWithFlags(&exec, graph, 0), "c: cudaGraphInstantiate");
    for (int r = 0; r < replays && ok; r++) {
        for (int i = 0; i < kSpec; i++) case_stage(&c[i], 1000u + (unsigned)r * 31u + (unsigned)i);
        ok &= cu(cudaGraphLaunch(exec, st), "c: cudaGraphLaunch");
        for (int i = 0; i < kSpec; i++) case_fetch(&c[i]);
        ok &= cu(cudaStreamSynchronize(st), "c: cudaStreamSynchronize");
        if (!ok) break;
        char p[48];
        snprintf(p, sizeof p, "c: replay %d", r);
        for (int i = 0; i < kSpec; i++) case_check(&c[i], p); /* every rank replays alike, failed or not */
    }
    if (exec) cudaGraphExecDestroy(exec);
    if (graph) cudaGraphDestroy(graph);
    for (int i = 0; i < kSpec; i++) case_free(&c[i]);
    end_part();
}

/* A counter: rank 0 contributes the last launch's result, rank r > 0 the
 * constant (r + 1) * (i % 7 + 1); a captured device copy moves the sum back
 * into the input. After L launches: start + L * (i % 7 + 1) * sum(r + 1). */
static void part_graph_counter(void)
{
    const int launches = 100;
    const size_t n = 4097;
    char part[96];
    snprintf(part, sizeof part, "c: a counter graph launched %d times back to back", launches);
    begin_part(part);
    int64_t *hacc = pin_alloc(n * 8), *hcst = pin_alloc(n * 8);
    void *acc = dev_alloc(n * 8), *tmp = dev_alloc(n * 8), *cst = dev_alloc(n * 8);
    for (size_t i = 0; i < n; i++) {
        hacc[i] = 3 + 5 * (int64_t)(i % 1000);
        hcst[i] = (int64_t)(rank + 1) * (int64_t)(i % 7 + 1);
    }
    cu(cudaMemcpyAsync(acc, hacc, n * 8, cudaMemcpyHostToDevice, st), "c: copying in");
    cu(cudaMemcpyAsync(cst, hcst, n * 8, cudaMemcpyHostToDevice, st), "c: copying in");
    cudaGraph_t graph = NULL;
    cudaGraphExec_t exec = NULL;
    int ok = cu(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal), "c: counter: cudaStreamBeginCapture");
    if (ok) {
        ok &= mpi_ok(coll_gpu_allreduce_enqueue(rank == 0 ? acc : cst, tmp, (int)n, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD,
                                                (void *)st),
                     "c: counter: captured allreduce_enqueue");
        ok &= cu(cudaMemcpyAsync(acc, tmp, n * 8, cudaMemcpyDeviceToDevice, st), "c: counter: captured copy");
        ok &= end_capture(&graph, "c: counter");
    }
    if (ok) ok = cu(cudaGraphInstantiateWithFlags(&exec, graph, 0), "c: counter: cudaGraphInstantiate");
    for (int l = 0; l < launches && ok; l++) ok &= cu(cudaGraphLaunch(exec, st), "c: counter: cudaGraphLaunch");
    cu(cudaMemcpyAsync(hacc, acc, n * 8, cudaMemcpyDeviceToHost, st), "c: counter: copying back");
    ok &= cu(cudaStreamSynchronize(st), "c: counter: cudaStreamSynchronize");
    if (ok) {
        int64_t per = 0;
        for (int r = 1; r < size; r++) per += r + 1;
        checks++;
        still_moving();
        for (size_t i = 0; i < n; i++) {
            int64_t want = 3 + 5 * (int64_t)(i % 1000) + (int64_t)launches * (int64_t)(i % 7 + 1) * per;
            if (hacc[i] != want) {
                fail("c: counter graph after %d launches: element %zu is %lld, expected %lld", launches, i,
                     (long long)hacc[i], (long long)want);
                break;
            }
        }
    }
    if (exec) cudaGraphExecDestroy(exec);
    if (graph) cudaGraphDestroy(graph);
    cudaFree(acc);
    cudaFree(tmp);
    cudaFree(cst);
    cudaFreeHost(hacc);
    cudaFreeHost(hcst);
    end_part();
}

/* ---- d. interplay ------------------------------------------------------------ */
typedef struct {
    const ccase_t *c;
    double mult;
} scaled_ctx;
static double scaled_want(const void *ctx, size_t j)
{
    const scaled_ctx *x = ctx;
    return want_elem(x->c, j) * x->mult;
}

/* seed: the same on every rank for the same call */
static void enqueue_checked(ccase_t *c, const char *part, unsigned seed)
{
    char what[192];
    case_stage(c, seed);
    case_label(c, part, what, sizeof what);
    mpi_ok(case_enqueue(c), what);
}

static void part_interplay(void)
{
    const char *part = "d: blocking MPI_Allreduce between enqueued calls";
    begin_part(part);
    {
        const size_t n = 4097;
        const dtype_t *d = &dtypes[D_INT];
        ccase_t a = case_new(C_ALLREDUCE, D_INT, O_SUM, n, 0, 0, MPI_COMM_WORLD, st);
        void *b = dev_alloc(n * 4), *cc = dev_alloc(n * 4);
        char *hb = pin_alloc(n * 4), *hc = pin_alloc(n * 4);
        keep_busy(st);
        enqueue_checked(&a, part, next_seed++);
        cu(cudaStreamSynchronize(st), "d: cudaStreamSynchronize");
        /* ordinary, reading what the enqueued call wrote */
        mpi_ok(MPI_Allreduce(a.dr, b, (int)n, MPI_INT, MPI_SUM, MPI_COMM_WORLD), "d: MPI_Allreduce");
        /* enqueued, reading what the ordinary call wrote */
        mpi_ok(coll_gpu_allreduce_enqueue(b, cc, (int)n, MPI_INT, MPI_SUM, MPI_COMM_WORLD, (void *)st),
               "d: allreduce_enqueue after MPI_Allreduce");
        case_fetch(&a);
        cu(cudaMemcpyAsync(hb, b, n * 4, cudaMemcpyDeviceToHost, st), "d: copying back");
        cu(cudaMemcpyAsync(hc, cc, n * 4, cudaMemcpyDeviceToHost, st), "d: copying back");
        if (cu(cudaStreamSynchronize(st), "d: cudaStreamSynchronize")) {
            case_check(&a, part);
            scaled_ctx xb = {&a, size}, xc = {&a, (double)size * size};
            compare("d: MPI_Allreduce of an enqueued result", d, hb, n, scaled_want, &xb);
            compare("d: enqueued allreduce of MPI_Allreduce's result", d, hc, n, scaled_want, &xc);
        }
        case_free(&a);
        cudaFree(b);
        cudaFree(cc);
        cudaFreeHost(hb);
        cudaFreeHost(hc);
    }
    end_part();

    part = "d: blocking MPI_Allreduce while enqueued calls are pending";
    begin_part(part);
    {
        ccase_t e3 = case_new(C_ALLREDUCE, D_FLOAT, O_SUM, 65539, 0, 0, MPI_COMM_WORLD, st);
        ccase_t e4 = case_new(C_BCAST, D_INT, -1, 1000, -1, 0, MPI_COMM_WORLD, st);
        ccase_t blk = case_new(C_ALLREDUCE, D_INT, O_SUM, 1000, 0, 0, MPI_COMM_WORLD, st);
        keep_busy(st);
        enqueue_checked(&e3, part, next_seed++);
        /* unrelated buffers, written synchronously: no stream synchronisation */
        blk.seed = next_seed++;
        for (size_t j = 0; j < blk.n; j++) put(blk.hs, blk.d, j, in_value(blk.d, V_SMALL, blk.seed, rank, j));
        cu(cudaMemcpy(blk.ds, blk.hs, blk.n * 4, cudaMemcpyHostToDevice), "d: cudaMemcpy");
        mpi_ok(MPI_Allreduce(blk.ds, blk.dr, (int)blk.n, MPI_INT, MPI_SUM, MPI_COMM_WORLD),
               "d: MPI_Allreduce with enqueued work pending");
        cu(cudaMemcpy(blk.hr, blk.dr, blk.n * 4, cudaMemcpyDeviceToHost), "d: cudaMemcpy");
        case_check(&blk, "d: MPI_Allreduce with enqueued work pending");
        enqueue_checked(&e4, part, next_seed++);
        case_fetch(&e3);
        case_fetch(&e4);
        if (cu(cudaStreamSynchronize(st), "d: cudaStreamSynchronize")) {
            case_check(&e3, part);
            case_check(&e4, part);
        }
        case_free(&e3);
        case_free(&e4);
        case_free(&blk);
    }
    end_part();

    MPI_Comm dup;
    mpi_ok(MPI_Comm_dup(MPI_COMM_WORLD, &dup), "d: MPI_Comm_dup");
    part = "d: MPI_COMM_WORLD and a dup interleaved on one stream";
    begin_part(part);
    mpi_ok(coll_gpu_stream_init(dup), "d: coll_gpu_stream_init(dup)");
    {
        ccase_t c[4] = {
            case_new(C_ALLREDUCE, D_INT, O_SUM, 1000, 0, 0, MPI_COMM_WORLD, st),
            case_new(C_ALLGATHER, D_DOUBLE, -1, 31, 0, 0, dup, st),
            case_new(C_BCAST, D_UINT8, -1, 4097, 0, 0, MPI_COMM_WORLD, st),
            case_new(C_RSB, D_FLOAT, O_SUM, 1000, 0, 0, dup, st),
        };
        keep_busy(st);
        for (int i = 0; i < 4; i++) enqueue_checked(&c[i], part, next_seed++);
        for (int i = 0; i < 4; i++) case_fetch(&c[i]);
        if (cu(cudaStreamSynchronize(st), "d: cudaStreamSynchronize"))
            for (int i = 0; i < 4; i++) case_check(&c[i], part);
        for (int i = 0; i < 4; i++) case_free(&c[i]);
    }
    end_part();

    part = "d: MPI_COMM_WORLD and a dup on two streams, another order on odd ranks";
    begin_part(part);
    {
        cudaStream_t st2;
        cu(cudaStreamCreateWithFlags(&st2, cudaStreamNonBlocking), "d: cudaStreamCreateWithFlags");
        ccase_t w3 = case_new(C_ALLREDUCE, D_INT, O_SUM, 65539, 0, 0, MPI_COMM_WORLD, st);
        ccase_t w4 = case_new(C_BCAST, D_INT, -1, 1000, -1, 0, MPI_COMM_WORLD, st);
        ccase_t d3 = case_new(C_ALLREDUCE, D_DOUBLE, O_SUM, 4097, 0, 1, dup, st2);
        ccase_t d4 = case_new(C_ALLTOALL, D_INT, -1, 7, 0, 0, dup, st2);
        ccase_t *order_even[4] = {&w3, &d3, &w4, &d4}, *order_odd[4] = {&d3, &d4, &w3, &w4};
        ccase_t **order = rank % 2 ? order_odd : order_even;
        keep_busy(st);
        keep_busy(st2);
        /* seeds by call, not by the order this rank issues them in */
        unsigned base = next_seed;
        next_seed += 4;
        for (int i = 0; i < 4; i++) {
            ccase_t *x = order[i];
            enqueue_checked(x, part, base + (x == &w3 ? 0u : x == &d3 ? 1u : x == &w4 ? 2u : 3u));
        }
        for (int i = 0; i < 4; i++) case_fetch(order[i]);
        int ok = cu(cudaStreamSynchronize(st), "d: cudaStreamSynchronize");
        ok &= cu(cudaStreamSynchronize(st2), "d: cudaStreamSynchronize");
        if (ok)
            for (int i = 0; i < 4; i++) case_check(order[i], part);
        case_free(&w3);
        case_free(&w4);
        case_free(&d3);
        case_free(&d4);
        cudaStreamDestroy(st2);
    }
    checks += 2;
    mpi_ok(coll_gpu_stream_status(MPI_COMM_WORLD), "d: coll_gpu_stream_status(MPI_COMM_WORLD)");
    mpi_ok(coll_gpu_stream_status(dup), "d: coll_gpu_stream_status(dup)");
    end_part();

    part = "d: MPI_Comm_free of the dup right after an enqueued call on it";
    begin_part(part);
    {
        ccase_t f = case_new(C_ALLREDUCE, D_INT, O_SUM, quick ? 65539 : (1u << 20) + 5, 0, 0, dup, st);
        keep_busy(st);
        enqueue_checked(&f, part, next_seed++);
        case_fetch(&f);
        mpi_ok(MPI_Comm_free(&dup), "d: MPI_Comm_free with enqueued work");
        if (cu(cudaStreamSynchronize(st), "d: cudaStreamSynchronize")) case_check(&f, part);
        case_free(&f);
    }
    end_part();
}

/* ---- e. the fallback --------------------------------------------------------- */
/* MPI_2INT pairs: value (r * 7 + i * 3 + seed) % (size + 2), index r * 1000 + i % 1000. */
static int loc_value(int r, size_t i, unsigned seed) { return (int)(((size_t)r * 7 + i * 3 + seed) % (size_t)(size + 2)); }
static int loc_index(int r, size_t i) { return r * 1000 + (int)(i % 1000); }

static void loc_case(const char *part, int is_reduce, int maxloc, size_t n, int in_place, int root)
{
    char what[160];
    snprintf(what, sizeof what, "%s: %s MPI_2INT %s%s count %zu%s", part, is_reduce ? "reduce" : "allreduce",
             maxloc ? "MPI_MAXLOC" : "MPI_MINLOC", in_place ? " in place" : "", n, is_reduce ? " root last" : "");
    unsigned seed = next_seed++;
    int me_ip = in_place && (!is_reduce || rank == root);
    int *hs = pin_alloc(n * 8), *hr = pin_alloc(n * 8);
    void *ds = dev_alloc(n * 8), *dr = dev_alloc(n * 8);
    for (size_t i = 0; i < n; i++) {
        hs[2 * i] = loc_value(rank, i, seed);
        hs[2 * i + 1] = loc_index(rank, i);
    }
    keep_busy(st);
    cu(cudaMemcpyAsync(me_ip ? dr : ds, hs, n * 8, cudaMemcpyHostToDevice, st), "e: copying in");
    if (!me_ip) {
        memset(hr, 0x7b, n * 8);
        cu(cudaMemcpyAsync(dr, hr, n * 8, cudaMemcpyHostToDevice, st), "e: copying in");
    }
    MPI_Op op = maxloc ? MPI_MAXLOC : MPI_MINLOC;
    const void *s = me_ip ? MPI_IN_PLACE : ds;
    int rc = is_reduce ? coll_gpu_reduce_enqueue(s, dr, (int)n, MPI_2INT, op, root, MPI_COMM_WORLD, (void *)st)
                       : coll_gpu_allreduce_enqueue(s, dr, (int)n, MPI_2INT, op, MPI_COMM_WORLD, (void *)st);
    int ok = mpi_ok(rc, what);
    int mine = !is_reduce || rank == root;
    if (mine) cu(cudaMemcpyAsync(hr, dr, n * 8, cudaMemcpyDeviceToHost, st), "e: copying back");
    ok &= cu(cudaStreamSynchronize(st), "e: cudaStreamSynchronize");
    if (ok && mine) {
        checks++;
        still_moving();
        for (size_t i = 0; i < n; i++) {
            int bv = loc_value(0, i, seed), bi = loc_index(0, i);
            for (int p = 1; p < size; p++) {
                int v = loc_value(p, i, seed), x = loc_index(p, i);
                if ((maxloc ? v > bv : v < bv) || (v == bv && x < bi)) {
                    bv = v;
                    bi = x;
                }
            }
            if (hr[2 * i] != bv || hr[2 * i + 1] != bi) {
                fail("%s: element %zu is (%d, %d), expected (%d, %d)", what, i, hr[2 * i], hr[2 * i + 1], bv, bi);
                break;
            }
        }
    }
    cudaFree(ds);
    cudaFree(dr);
    cudaFreeHost(hs);
    cudaFreeHost(hr);
}

/* A bcast of one MPI_Type_vector(n, 1, 2, MPI_INT): data movement takes
 * only layouts that are one run of bytes, and a rank cannot know the
 * others' layouts (MPI lets them differ), so every rank refuses with
 * MPI_ERR_TYPE (docs/stream.md) and nothing is queued: no buffer changes. */
static void vector_bcast(const char *part, size_t n)
{
    char what[128];
    snprintf(what, sizeof what, "%s: bcast of a vector type (%zu ints, stride 2) root last", part, n);
    const size_t len = 2 * n - 1;
    int root = size - 1;
    unsigned seed = next_seed++;
    MPI_Datatype vec;
    MPI_Type_vector((int)n, 1, 2, MPI_INT, &vec);
    MPI_Type_commit(&vec);
    int *h = pin_alloc(len * 4);
    void *dbuf = dev_alloc(len * 4);
    for (size_t i = 0; i < len; i++) h[i] = rank == root ? 1 + (int)((i * 5 + seed) % 1000) : -1000 - rank;
    keep_busy(st);
    cu(cudaMemcpyAsync(dbuf, h, len * 4, cudaMemcpyHostToDevice, st), "e: copying in");
    int rc = coll_gpu_bcast_enqueue(dbuf, 1, vec, root, MPI_COMM_WORLD, (void *)st), cls = MPI_SUCCESS;
    if (rc != MPI_SUCCESS) MPI_Error_class(rc, &cls);
    checks++;
    /* One rank: a bcast moves nothing, whatever the layout. */
    const int want_cls = size == 1 ? MPI_SUCCESS : MPI_ERR_TYPE;
    if (cls != want_cls) fail("%s returned %d (class %d), expected class %d", what, rc, cls, want_cls);
    cu(cudaMemcpyAsync(h, dbuf, len * 4, cudaMemcpyDeviceToHost, st), "e: copying back");
    int ok = cu(cudaStreamSynchronize(st), "e: cudaStreamSynchronize");
    if (ok) {
        checks++;
        still_moving();
        for (size_t i = 0; i < len; i++) {
            int want = rank == root ? 1 + (int)((i * 5 + seed) % 1000) : -1000 - rank;
            if (h[i] != want) {
                fail("%s: element %zu is %d, expected %d", what, i, h[i], want);
                break;
            }
        }
    }
    cudaFree(dbuf);
    cudaFreeHost(h);
    MPI_Type_free(&vec);
}

/* The call while capturing: an error, and a capture that can be ended and
 * dropped, the stream no longer capturing. */
static void refused_in_capture(const char *part, int user)
{
    /* One rank: the result is the input, a copy on the stream, which a
     * capture takes (docs/stream.md); nothing to refuse. */
    if (size == 1) return;
    char what[160];
    snprintf(what, sizeof what, "%s: allreduce_enqueue of %s while capturing", part,
             user ? "MPI_INT with a user op" : "MPI_2INT with MPI_MAXLOC");
    const size_t n = 1000;
    void *ds = dev_alloc(n * 8), *dr = dev_alloc(n * 8);
    cu(cudaMemset(ds, 0, n * 8), "e: cudaMemset");
    cu(cudaMemset(dr, 0, n * 8), "e: cudaMemset");
    if (cu(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal), "e: cudaStreamBeginCapture")) {
        /* something captured before it */
        cu(cudaMemcpyAsync(dr, ds, n * 4, cudaMemcpyDeviceToDevice, st), "e: captured copy");
        int rc = user ? coll_gpu_allreduce_enqueue(ds, dr, (int)n, MPI_INT, ops[O_USER].op, MPI_COMM_WORLD, (void *)st)
                      : coll_gpu_allreduce_enqueue(ds, dr, (int)n, MPI_2INT, MPI_MAXLOC, MPI_COMM_WORLD, (void *)st);
        checks++;
        if (rc == MPI_SUCCESS)
            fail("%s returned MPI_SUCCESS: a call without a kernel cannot be captured and must return an error", what);
        else if (verbose && rank == 0 && rc != MPI_ERR_UNSUPPORTED_OPERATION)
            printf("stream_check: %s returned %d, not MPI_ERR_UNSUPPORTED_OPERATION (an error all the same)\n", what,
                   rc);
        cudaGraph_t g = NULL;
        cudaError_t e = cudaStreamEndCapture(st, &g); /* may say cudaErrorStreamCaptureInvalidated: acceptable */
        if (verbose && rank == 0 && e != cudaSuccess)
            printf("stream_check: %s: cudaStreamEndCapture: %s (accepted)\n", what, cudaGetErrorString(e));
        if (g) cudaGraphDestroy(g);
        (void)cudaGetLastError();
        enum cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
        cu(cudaStreamIsCapturing(st, &cs), "e: cudaStreamIsCapturing");
        checks++;
        if (cs != cudaStreamCaptureStatusNone) fail("%s: the stream is still capturing after cudaStreamEndCapture", what);
        still_moving();
    }
    cu(cudaStreamSynchronize(st), "e: cudaStreamSynchronize after the capture");
    (void)cudaGetLastError();
    cudaFree(ds);
    cudaFree(dr);
}

static void part_fallback(void)
{
    const char *part = "e: types and ops without a kernel, outside a capture";
    begin_part(part);
    loc_case(part, 0, 1, 1000, 0, 0);
    loc_case(part, 0, 1, 4097, 1, 0);
    loc_case(part, 1, 0, 31, 0, size - 1);
    loc_case(part, 1, 1, 1000, 1, size - 1);
    {
        ccase_t u[3] = {
            case_new(C_ALLREDUCE, D_INT, O_USER, 4097, 0, 0, MPI_COMM_WORLD, st),
            case_new(C_ALLREDUCE, D_INT, O_USER, 7, 0, 1, MPI_COMM_WORLD, st),
            case_new(C_RSB, D_INT, O_USER, 31, 0, 0, MPI_COMM_WORLD, st),
        };
        for (int i = 0; i < 3; i++) {
            run_case(&u[i], part);
            case_free(&u[i]);
        }
    }
    vector_bcast(part, 1000);
    end_part();

    part = "e: the same while capturing";
    begin_part(part);
    refused_in_capture(part, 0);
    refused_in_capture(part, 1);
    {
        /* the stream and the communicator still work */
        ccase_t after = case_new(C_ALLREDUCE, D_INT, O_SUM, 1000, 0, 0, MPI_COMM_WORLD, st);
        run_case(&after, "e: after the refused captures");
        case_free(&after);
    }
    end_part();
}

/* ---- main -------------------------------------------------------------------- */
static void setup_types(void)
{
    dtypes[D_INT] = (dtype_t){"int", MPI_INT, 4, K_SIGNED, 1, 1u << 30};
    dtypes[D_FLOAT] = (dtype_t){"float", MPI_FLOAT, 4, K_FLOAT, 1, 1u << 24};
    dtypes[D_DOUBLE] = (dtype_t){"double", MPI_DOUBLE, 8, K_DOUBLE, 1, 1ull << 40};
    dtypes[D_INT64] = (dtype_t){"int64", MPI_INT64_T, 8, K_SIGNED, 1, 1ull << 40};
    dtypes[D_UINT8] = (dtype_t){"uint8", MPI_UINT8_T, 1, K_UNSIGNED, 1, 256};
    dtypes[D_CHAR] = (dtype_t){"char", MPI_CHAR, 1, K_SIGNED, 0, 256};
    dtypes[D_FP16] = (dtype_t){"fp16", ext.float16, 2, K_HALF, 1, 2048};
    dtypes[D_BF16] = (dtype_t){"bf16", ext.bfloat16, 2, K_BF16, 1, 256};
    ops[O_SUM] = (op_t){"sum", O_SUM, MPI_SUM, 0, V_SMALL};
    ops[O_MAX] = (op_t){"max", O_MAX, MPI_MAX, 0, V_SMALL};
    ops[O_MIN] = (op_t){"min", O_MIN, MPI_MIN, 0, V_SMALL};
    ops[O_PROD] = (op_t){"prod", O_PROD, MPI_PROD, 0, V_PROD};
    ops[O_BAND] = (op_t){"band", O_BAND, MPI_BAND, 1, V_BITS};
    ops[O_BOR] = (op_t){"bor", O_BOR, MPI_BOR, 1, V_BITS};
    ops[O_BXOR] = (op_t){"bxor", O_BXOR, MPI_BXOR, 1, V_BITS};
    ops[O_USER] = (op_t){"user op a+b+1", O_USER, MPI_OP_NULL, 1, V_SMALL};
    MPI_Op_create(user_sum_plus_one, 1, &ops[O_USER].op);
}

/* f (only where asked for, with a short coll_gpu_timeout_ms): on a dup of
 * MPI_COMM_WORLD, rank 0 enqueues an allreduce that no other rank makes. Its
 * kernel must give up (the stream synchronises, no hang) and
 * coll_gpu_stream_status(dup) must then say so; the others' next enqueued
 * call on the dup must fail likewise (their kernels end at once on the
 * give-up word), the dup must free, and MPI_COMM_WORLD's enqueued calls
 * (a team of their own) must still be right. */
static void part_out_of_order(void)
{
    begin_part("f");
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN);
    mpi_ok(coll_gpu_stream_init(dup), "f: coll_gpu_stream_init(dup)");
    const size_t n = 256;
    int *d = dev_alloc(n * sizeof(int)), *h = pin_alloc(n * sizeof(int));
    for (size_t i = 0; i < n; i++) h[i] = rank + 1;
    cu(cudaMemcpyAsync(d, h, n * sizeof(int), cudaMemcpyHostToDevice, st), "f: copying in");
    if (rank == 0)
        mpi_ok(coll_gpu_allreduce_enqueue(MPI_IN_PLACE, d, (int)n, MPI_INT, MPI_SUM, dup, (void *)st),
               "f: the enqueue only rank 0 makes");
    cu(cudaStreamSynchronize(st), "f: synchronising after a kernel that must give up");
    still_moving();
    MPI_Barrier(MPI_COMM_WORLD); /* rank 0's kernel has given up */
    if (rank != 0) {
        /* The others' next calls: the first may meet rank 0's orphaned lines
         * (same position in the sequence) and end; the second finds no
         * peer and ends on the give-up word rank 0's kernel set, at once.
         * An error surfaces once a kernel of this rank has seen it. */
        for (int k = 0; k < 2; k++) {
            (void)coll_gpu_allreduce_enqueue(MPI_IN_PLACE, d, (int)n, MPI_INT, MPI_SUM, dup, (void *)st);
            cu(cudaStreamSynchronize(st), "f: synchronising after a kernel told to give up");
            still_moving();
        }
    }
    checks++;
    if (coll_gpu_stream_status(dup) == MPI_SUCCESS)
        fail("f: coll_gpu_stream_status(dup) is MPI_SUCCESS after %s", rank == 0 ? "its kernel gave up"
                                                                                 : "a peer's kernel gave up");
    checks++;
    if (coll_gpu_allreduce_enqueue(MPI_IN_PLACE, d, (int)n, MPI_INT, MPI_SUM, dup, (void *)st) == MPI_SUCCESS)
        fail("f: an enqueued call on the failed dup returned MPI_SUCCESS");
    cu(cudaStreamSynchronize(st), "f: synchronising");
    MPI_Comm_free(&dup);
    still_moving();
    /* MPI_COMM_WORLD's own enqueued calls are untouched. */
    for (size_t i = 0; i < n; i++) h[i] = rank + 1;
    cu(cudaMemcpyAsync(d, h, n * sizeof(int), cudaMemcpyHostToDevice, st), "f: copying in");
    mpi_ok(coll_gpu_allreduce_enqueue(MPI_IN_PLACE, d, (int)n, MPI_INT, MPI_SUM, MPI_COMM_WORLD, (void *)st),
           "f: an enqueue on MPI_COMM_WORLD after the dup failed");
    cu(cudaMemcpyAsync(h, d, n * sizeof(int), cudaMemcpyDeviceToHost, st), "f: copying back");
    if (cu(cudaStreamSynchronize(st), "f: synchronising")) {
        checks++;
        for (size_t i = 0; i < n; i++)
            if (h[i] != size * (size + 1) / 2) {
                fail("f: MPI_COMM_WORLD allreduce element %zu is %d, expected %d", i, h[i], size * (size + 1) / 2);
                break;
            }
    }
    cudaFree(d);
    cudaFreeHost(h);
    end_part();
}

int main(int argc, char **argv)
{
    int one_gpu = 0;
    const char *parts = "abcdeg";
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) quick = 1;
        else if (!strcmp(argv[i], "--one-gpu")) one_gpu = 1;
        else if (!strcmp(argv[i], "--verbose")) verbose = 1;
        else if (!strcmp(argv[i], "--timeout") && i + 1 < argc) timeout_s = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--replays") && i + 1 < argc) replays = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--parts") && i + 1 < argc) parts = argv[++i];
        else {
            if (rank == 0) fprintf(stderr, "stream_check: unknown argument %s\n", argv[i]);
            MPI_Finalize();
            return 2;
        }
    }
    if (size > 32) { /* sums of 1..5 over the ranks exact in bf16 and uint8 */
        if (rank == 0) fprintf(stderr, "stream_check: at most 32 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (test_select_gpu(one_gpu, NULL, NULL) < 0) {
        if (rank == 0) printf("stream_check: no GPU: skipped\n");
        MPI_Finalize();
        return 77;
    }
    watchdog_init("stream_check", rank, timeout_s, verbose);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    coll_gpu_ext_init(&ext);
    setup_types();
    busy_a = dev_alloc(busy_bytes);
    busy_b = dev_alloc(busy_bytes);
    cu(cudaMemset(busy_b, 0, busy_bytes), "cudaMemset");
    if (!cu(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking), "cudaStreamCreateWithFlags")) MPI_Abort(MPI_COMM_WORLD, 2);

    /* Without coll/gpu every call is MPI_ERR_UNSUPPORTED_OPERATION: that fails
     * (this is coll/gpu's test), and nothing else runs. */
    int rc = coll_gpu_stream_init(MPI_COMM_WORLD), missing = rc == MPI_ERR_UNSUPPORTED_OPERATION, any_missing = 0;
    if (missing)
        fail("coll_gpu_stream_init(MPI_COMM_WORLD) returned MPI_ERR_UNSUPPORTED_OPERATION: %s",
             dlsym(RTLD_DEFAULT, "coll_gpu_impl_stream_init")
                 ? "coll/gpu refused the stream-ordered calls"
                 : "coll/gpu is not loaded in this process (no symbol coll_gpu_impl_stream_init), so every enqueued "
                   "call would be refused: not tested");
    else
        mpi_ok(rc, "coll_gpu_stream_init(MPI_COMM_WORLD)");
    MPI_Allreduce(&missing, &any_missing, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);

    if (!any_missing) {
        if (strchr(parts, 'a')) part_sweep();
        if (strchr(parts, 'b')) part_chain();
        if (strchr(parts, 'c')) {
            part_graph_replays();
            part_graph_counter();
        }
        if (strchr(parts, 'd')) part_interplay();
        if (strchr(parts, 'e')) part_fallback();
        if (strchr(parts, 'g')) part_one_way_ahead();
        if (strchr(parts, 'f')) part_out_of_order(); /* not by default: it wants a short timeout_ms */
        checks++;
        mpi_ok(coll_gpu_stream_status(MPI_COMM_WORLD), "coll_gpu_stream_status(MPI_COMM_WORLD) at the end");
    }

    int total[2] = {0, 0}, mine[2] = {checks, failures};
    MPI_Allreduce(mine, total, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("stream_check: %d checks, %d failed\n", total[0], total[1]);
    cudaStreamDestroy(st);
    cudaFree(busy_a);
    cudaFree(busy_b);
    MPI_Op_free(&ops[O_USER].op);
    coll_gpu_ext_free(&ext);
    MPI_Finalize();
    return total[1] ? 1 : 0;
}
