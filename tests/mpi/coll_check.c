/* Every collective coll/gpu wraps, against a host reference.
 *
 *   coll_check [--mem host|device|mixed|otherdev] [--quick] [--one-gpu]
 *              [--mode blocking|nonblocking|persistent|all]
 *
 * host: plain host buffers (proves host behaviour is unchanged);
 * device: cudaMalloc'ed buffers on each rank's GPU; mixed: even ranks device,
 * odd ranks host; otherdev: buffers on a GPU other than the current one.
 * --one-gpu: every rank on GPU 0 (else rank i of a node takes GPU i % count).
 * --mode, how each collective is called: blocking (the default) MPI_<coll>,
 * the main sweep then again as MPI_I<coll> + MPI_Wait; nonblocking: every
 * call MPI_I<coll> + MPI_Wait; persistent: every call MPI_<coll>_init (MPIX_
 * in Open MPI 4.1), started and waited twice with new inputs written before
 * the second start, both results checked, then freed; all: the three in turn.
 * Device modes exit 77 (skip) without a GPU, persistent without persistent
 * collectives in the MPI. Prints each failure and exits 1. */
#include <cuda_runtime.h>
#include <mpi.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(OPEN_MPI) && MPI_VERSION < 4
#include <mpi-ext.h>
#endif

#include "test_gpu.h"

#include "coll_gpu_ext.h"

enum mem_mode { MEM_HOST, MEM_DEVICE, MEM_MIXED, MEM_OTHERDEV };
static enum mem_mode mode = MEM_HOST;
static int rank, size, failures, checks, on_device, quick, one_gpu;
static int alloc_dev = -1; /* otherdev: buffers live on this GPU, another is current */
static coll_gpu_ext_t ext;

/* How a collective is called (--mode); F_ALL only names the option. */
enum form { F_BLOCKING, F_NONBLOCKING, F_PERSISTENT, F_ALL };
static const char *const form_names[] = {"blocking", "nonblocking", "persistent", "all"};

/* Which start of a persistent request runs: 0, then 1 (always 0 in the other
 * forms). Every input value depends on it, so that the second start is
 * checked against data the first never saw. */
static int gen;

/* ---- element types --------------------------------------------------------- */
enum kind { K_SIGNED, K_UNSIGNED, K_FLOAT, K_DOUBLE, K_HALF, K_BF16 };
typedef struct {
    const char *name;
    MPI_Datatype mpi;
    size_t size;
    enum kind kind;
} dtype_t;

static dtype_t dtypes[16];
static int ndtypes;

static void add_dtype(const char *n, MPI_Datatype t, size_t s, enum kind k)
{
    dtypes[ndtypes++] = (dtype_t){n, t, s, k};
}

static void put(void *buf, const dtype_t *d, size_t i, double v)
{
    char *p = (char *)buf + i * d->size;
    int64_t iv = (int64_t)v;
    switch (d->kind) {
    case K_FLOAT: { float f = (float)v; memcpy(p, &f, 4); break; }
    case K_DOUBLE: memcpy(p, &v, 8); break;
    case K_HALF: { uint16_t h = coll_gpu_ext_float_to_half((float)v); memcpy(p, &h, 2); break; }
    case K_BF16: { uint16_t h = coll_gpu_ext_float_to_bf16((float)v); memcpy(p, &h, 2); break; }
    default: memcpy(p, &iv, d->size); break; /* little endian: low bytes, i.e. wrap */
    }
}

static double get(const void *buf, const dtype_t *d, size_t i)
{
    const char *p = (const char *)buf + i * d->size;
    switch (d->kind) {
    case K_FLOAT: { float f; memcpy(&f, p, 4); return f; }
    case K_DOUBLE: { double v; memcpy(&v, p, 8); return v; }
    case K_HALF: { uint16_t h; memcpy(&h, p, 2); return coll_gpu_ext_half_to_float(h); }
    case K_BF16: { uint16_t h; memcpy(&h, p, 2); return coll_gpu_ext_bf16_to_float(h); }
    default: break;
    }
    uint64_t u = 0;
    memcpy(&u, p, d->size);
    if (d->kind == K_SIGNED && d->size < 8 && (u >> (d->size * 8 - 1)) & 1) u |= ~0ull << (d->size * 8);
    return d->kind == K_SIGNED ? (double)(int64_t)u : (double)u;
}

/* ---- ops ------------------------------------------------------------------- */
typedef struct {
    const char *name;
    MPI_Op op;
    int int_only;
    int values; /* 0: 1..5, 1: 1..2 (prod), 2: 0..1 (logical), 3: 0..255 (bitwise) */
} op_t;

static const op_t ops[] = {
    {"sum", MPI_SUM, 0, 0}, {"max", MPI_MAX, 0, 0}, {"min", MPI_MIN, 0, 0}, {"prod", MPI_PROD, 0, 1},
    {"land", MPI_LAND, 1, 2}, {"lor", MPI_LOR, 1, 2}, {"lxor", MPI_LXOR, 1, 2}, {"band", MPI_BAND, 1, 3},
    {"bor", MPI_BOR, 1, 3}, {"bxor", MPI_BXOR, 1, 3}};

/* Rank r's element i; a new gen shifts every element's value (kinds 0, 1, 3)
 * or the logical pattern (kind 2). */
static double value(int r, size_t i, int kind_of_values)
{
    size_t g = (size_t)gen;
    switch (kind_of_values) {
    case 1: return 1 + (double)((r + i + g) % 2);
    case 2: return (double)((r * 5 + i * 3 + g) % 3 == 0);
    case 3: return (double)((r * 37 + i * 11 + g * 101) % 256);
    default: return 1 + (double)((r * 3 + i * 7 + g) % 5);
    }
}

static double combine(const op_t *o, double a, double b)
{
    uint64_t x = (uint64_t)a, y = (uint64_t)b;
    if (o->op == MPI_SUM) return a + b;
    if (o->op == MPI_PROD) return a * b;
    if (o->op == MPI_MAX) return a > b ? a : b;
    if (o->op == MPI_MIN) return a < b ? a : b;
    if (o->op == MPI_LAND) return (a != 0) && (b != 0);
    if (o->op == MPI_LOR) return (a != 0) || (b != 0);
    if (o->op == MPI_LXOR) return (a != 0) != (b != 0);
    if (o->op == MPI_BAND) return (double)(x & y);
    if (o->op == MPI_BOR) return (double)(x | y);
    return (double)(x ^ y);
}

/* The reference as the type stores it (so wrap-around matches). */
static double as_stored(const dtype_t *d, double v)
{
    char tmp[8];
    put(tmp, d, 0, v);
    return get(tmp, d, 0);
}

/* fp16/bf16 reduce with coll_gpu_ext's ops; the reference uses the predefined meaning. */
static MPI_Op mpi_op(const dtype_t *d, const op_t *o)
{
    if (d->kind != K_HALF && d->kind != K_BF16) return o->op;
#ifdef MPIX_C_FLOAT16
    if (d->mpi == MPIX_C_FLOAT16) return o->op; /* MPI's own half type (Open MPI 5.0): the predefined ops */
#endif
    int bf = d->kind == K_BF16;
    if (o->op == MPI_SUM) return bf ? ext.bfloat16_sum : ext.float16_sum;
    if (o->op == MPI_PROD) return bf ? ext.bfloat16_prod : ext.float16_prod;
    if (o->op == MPI_MAX) return bf ? ext.bfloat16_max : ext.float16_max;
    return bf ? ext.bfloat16_min : ext.float16_min;
}

/* ---- buffers: where the collective's memory lives ------------------------- */
static void *alloc_elems(const dtype_t *d, size_t n)
{
    return test_mem_alloc(on_device, alloc_dev, n * d->size);
}

/* Writes value(r, i + base, vk) to the n elements of a device/host buffer. */
static void fill_input(void *b, const dtype_t *d, size_t n, int r, size_t base, int vk)
{
    char *h = malloc(n * d->size + 16);
    for (size_t i = 0; i < n; i++) put(h, d, i, value(r, i + base, vk));
    test_mem_put(on_device, b, h, n * d->size);
    free(h);
}
static void poison(void *b, const dtype_t *d, size_t n)
{
    char *h = malloc(n * d->size + 16);
    memset(h, 0x7b, n * d->size);
    test_mem_put(on_device, b, h, n * d->size);
    free(h);
}
static void *make_input(const dtype_t *d, size_t n, int r, size_t base, int vk)
{
    void *b = alloc_elems(d, n);
    fill_input(b, d, n, r, base, vk);
    return b;
}

/* Compares n elements of a (device/host) buffer with ref(i). */
typedef double (*ref_fn)(size_t i, void *ctx);
static void expect(const char *what, const dtype_t *d, const void *buf, size_t n, ref_fn ref, void *ctx)
{
    char *h = malloc(n * d->size + 16);
    test_mem_get(on_device, h, buf, n * d->size);
    checks++;
    for (size_t i = 0; i < n; i++) {
        double want = as_stored(d, ref(i, ctx)), got = get(h, d, i);
        if (got != want) {
            fprintf(stderr, "rank %d FAIL %s [%s] count %zu: element %zu is %g, expected %g\n", rank, what, d->name,
                    n, i, got, want);
            failures++;
            break;
        }
    }
    free(h);
}

/* ---- reference helpers ----------------------------------------------------- */
typedef struct {
    const op_t *op;
    int vk;
    size_t base;    /* element offset added to i */
    int upto;       /* ranks 0..upto-1 take part */
    int from_rank;  /* for moves: data of this rank */
} ref_ctx;

static double ref_reduce(size_t i, void *c)
{
    ref_ctx *x = c;
    double acc = value(0, i + x->base, x->vk);
    for (int r = 1; r < x->upto; r++) acc = combine(x->op, acc, value(r, i + x->base, x->vk));
    return acc;
}
static double ref_value(size_t i, void *c)
{
    ref_ctx *x = c;
    return value(x->from_rank, i + x->base, x->vk);
}

/* ---- one call in each form -------------------------------------------------- */
enum coll { C_ALLREDUCE, C_REDUCE, C_BCAST, C_ALLGATHER, C_ALLGATHERV, C_ALLTOALL, C_ALLTOALLV, C_REDUCE_SCATTER,
            C_REDUCE_SCATTER_BLOCK, C_GATHER, C_GATHERV, C_SCATTER, C_SCATTERV, C_SCAN, C_EXSCAN };

/* A collective's arguments. n, t: the count and type (the v-kinds: what this
 * rank sends or receives; reduce_scatter_block: the block); sc/sd: the send
 * counts and displacements of alltoallv and scatterv, st: alltoallv's send
 * type; rc/rd: the receive side of the v-kinds (rc: reduce_scatter's counts). */
typedef struct {
    enum coll kind;
    enum form form; /* F_BLOCKING, F_NONBLOCKING or F_PERSISTENT */
    const void *s;
    void *r;
    int n;
    MPI_Datatype t, st;
    const int *sc, *sd, *rc, *rd;
    MPI_Op op;
    int root;
    MPI_Request req;
    int bound; /* persistent: req made by the init, to be freed */
} call_t;

/* Open MPI 5.0 has MPI-4's MPI_<coll>_init while it reports MPI 3.1. */
#if MPI_VERSION >= 4 || (defined(OPEN_MPI) && OMPI_MAJOR_VERSION >= 5)
#define INIT_FORM(Name, ...) MPI_##Name##_init(__VA_ARGS__, MPI_INFO_NULL, &c->req)
#elif defined(OMPI_HAVE_MPI_EXT_PCOLLREQ)
#define INIT_FORM(Name, ...) MPIX_##Name##_init(__VA_ARGS__, MPI_INFO_NULL, &c->req)
#endif
#ifdef INIT_FORM
static const int have_persistent = 1;
#else
static const int have_persistent = 0;
#define INIT_FORM(Name, ...) MPI_ERR_UNSUPPORTED_OPERATION
#endif
/* MPI_<Name>(args), MPI_<IName>(args, &req) or the persistent init, by c->form. */
#define FORMS(Name, IName, ...)                                          \
    (c->form == F_BLOCKING      ? MPI_##Name(__VA_ARGS__)                \
     : c->form == F_NONBLOCKING ? MPI_##IName(__VA_ARGS__, &c->req)      \
                                : INIT_FORM(Name, __VA_ARGS__))

static int issue(call_t *c)
{
    const MPI_Comm w = MPI_COMM_WORLD;
    switch (c->kind) {
    case C_ALLREDUCE: return FORMS(Allreduce, Iallreduce, c->s, c->r, c->n, c->t, c->op, w);
    case C_REDUCE: return FORMS(Reduce, Ireduce, c->s, c->r, c->n, c->t, c->op, c->root, w);
    case C_BCAST: return FORMS(Bcast, Ibcast, c->r, c->n, c->t, c->root, w);
    case C_ALLGATHER: return FORMS(Allgather, Iallgather, c->s, c->n, c->t, c->r, c->n, c->t, w);
    case C_ALLGATHERV: return FORMS(Allgatherv, Iallgatherv, c->s, c->n, c->t, c->r, c->rc, c->rd, c->t, w);
    case C_ALLTOALL: return FORMS(Alltoall, Ialltoall, c->s, c->n, c->t, c->r, c->n, c->t, w);
    case C_ALLTOALLV:
        return FORMS(Alltoallv, Ialltoallv, c->s, c->sc, c->sd, c->st, c->r, c->rc, c->rd, c->t, w);
    case C_REDUCE_SCATTER: return FORMS(Reduce_scatter, Ireduce_scatter, c->s, c->r, c->rc, c->t, c->op, w);
    case C_REDUCE_SCATTER_BLOCK:
        return FORMS(Reduce_scatter_block, Ireduce_scatter_block, c->s, c->r, c->n, c->t, c->op, w);
    case C_GATHER: return FORMS(Gather, Igather, c->s, c->n, c->t, c->r, c->n, c->t, c->root, w);
    case C_GATHERV: return FORMS(Gatherv, Igatherv, c->s, c->n, c->t, c->r, c->rc, c->rd, c->t, c->root, w);
    case C_SCATTER: return FORMS(Scatter, Iscatter, c->s, c->n, c->t, c->r, c->n, c->t, c->root, w);
    case C_SCATTERV: return FORMS(Scatterv, Iscatterv, c->s, c->sc, c->sd, c->t, c->r, c->n, c->t, c->root, w);
    case C_SCAN: return FORMS(Scan, Iscan, c->s, c->r, c->n, c->t, c->op, w);
    case C_EXSCAN: return FORMS(Exscan, Iexscan, c->s, c->r, c->n, c->t, c->op, w);
    }
    return MPI_ERR_OTHER;
}

/* How many times a test fills, calls and checks: a persistent request is
 * started four times (gen 0-3: coll/gpu switches a persistent request to
 * zero-copy from its third start where it can), every other form called once. */
static int rounds(const call_t *c) { return c->form == F_PERSISTENT ? 4 : 1; }

/* The call of round `gen`: blocking; MPI_I<coll> + MPI_Wait; or the
 * persistent request, made by the first round, started and waited. An error
 * returned is a failure (said here). */
static int run_round(call_t *c, const char *what)
{
    int rc = MPI_SUCCESS;
    if (c->form != F_PERSISTENT || !c->bound) {
        rc = issue(c);
        c->bound = c->form == F_PERSISTENT && rc == MPI_SUCCESS;
    }
    if (rc == MPI_SUCCESS && c->form == F_PERSISTENT) rc = MPI_Start(&c->req);
    if (rc == MPI_SUCCESS && c->form != F_BLOCKING) rc = MPI_Wait(&c->req, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) {
        fprintf(stderr, "rank %d FAIL %s returned %d\n", rank, what, rc);
        failures++;
    }
    return rc;
}

/* After the rounds: frees a persistent request, back to gen 0. */
static void finish(call_t *c)
{
    if (c->bound) MPI_Request_free(&c->req);
    c->bound = 0;
    gen = 0;
}

/* A check's name: the call in its form ("iallreduce sum", "persistent
 * allreduce sum (start 2)"). */
#if defined(__GNUC__)
__attribute__((format(printf, 4, 5)))
#endif
static void label(char *out, size_t len, const call_t *c, const char *fmt, ...)
{
    va_list ap;
    int k = snprintf(out, len, "%s", c->form == F_NONBLOCKING ? "i" : c->form == F_PERSISTENT ? "persistent " : "");
    va_start(ap, fmt);
    k += vsnprintf(out + k, len - (size_t)k, fmt, ap);
    va_end(ap);
    if (c->form == F_PERSISTENT && (size_t)k < len) snprintf(out + k, len - (size_t)k, " (start %d)", gen + 1);
}

/* ---- the collectives ------------------------------------------------------- */
static void test_allreduce(const dtype_t *d, const op_t *o, size_t n, int in_place, enum form f)
{
    ref_ctx c = {o, o->values, 0, size, 0};
    void *s = alloc_elems(d, n), *r = in_place ? s : alloc_elems(d, n);
    call_t call = {.kind = C_ALLREDUCE, .form = f, .s = in_place ? MPI_IN_PLACE : s, .r = r, .n = (int)n,
                   .t = d->mpi, .op = mpi_op(d, o)};
    char what[96];
    for (gen = 0; gen < rounds(&call); gen++) {
        fill_input(s, d, n, rank, 0, o->values);
        if (!in_place) poison(r, d, n);
        label(what, sizeof what, &call, "allreduce %s%s", o->name, in_place ? " in place" : "");
        if (run_round(&call, what) == MPI_SUCCESS) expect(what, d, r, n, ref_reduce, &c);
    }
    finish(&call);
    test_mem_free(on_device, s);
    if (!in_place) test_mem_free(on_device, r);
}

static void test_reduce(const dtype_t *d, const op_t *o, size_t n, int root, int in_place, enum form f)
{
    ref_ctx c = {o, o->values, 0, size, 0};
    int ip = in_place && rank == root;
    void *s = alloc_elems(d, n), *r = ip ? s : alloc_elems(d, n);
    call_t call = {.kind = C_REDUCE, .form = f, .s = ip ? MPI_IN_PLACE : s, .r = r, .n = (int)n, .t = d->mpi,
                   .op = o->op, .root = root};
    char what[96];
    for (gen = 0; gen < rounds(&call); gen++) {
        fill_input(s, d, n, rank, 0, o->values);
        if (!ip) poison(r, d, n);
        label(what, sizeof what, &call, "reduce %s%s", o->name, ip ? " in place" : "");
        if (run_round(&call, what) == MPI_SUCCESS && rank == root) expect(what, d, r, n, ref_reduce, &c);
    }
    finish(&call);
    test_mem_free(on_device, s);
    if (!ip) test_mem_free(on_device, r);
}

static double ref_reduce_local(size_t i, void *c)
{
    ref_ctx *x = c;
    return combine(x->op, value(rank + 1, i, x->vk), value(rank, i, x->vk));
}
static void test_reduce_local(const dtype_t *d, const op_t *o, size_t n)
{
    ref_ctx c = {o, o->values, 0, 0, 0};
    void *in = make_input(d, n, rank + 1, 0, o->values);
    void *io = make_input(d, n, rank, 0, o->values);
    MPI_Reduce_local(in, io, (int)n, d->mpi, o->op);
    expect("reduce_local", d, io, n, ref_reduce_local, &c);
    test_mem_free(on_device, in);
    test_mem_free(on_device, io);
}

static void test_bcast(const dtype_t *d, size_t n, int root, enum form f)
{
    ref_ctx c = {NULL, 0, 0, 0, root};
    void *b = alloc_elems(d, n);
    call_t call = {.kind = C_BCAST, .form = f, .r = b, .n = (int)n, .t = d->mpi, .root = root};
    char what[96];
    for (gen = 0; gen < rounds(&call); gen++) {
        if (rank == root) fill_input(b, d, n, root, 0, 0);
        else poison(b, d, n);
        label(what, sizeof what, &call, "bcast root %d", root);
        if (run_round(&call, what) == MPI_SUCCESS) expect(what, d, b, n, ref_value, &c);
    }
    finish(&call);
    test_mem_free(on_device, b);
}

/* Fills a buffer of blocks (gaps poisoned): block p holds value(who, i + 1000p),
 * who = p where who < 0. */
static void fill_blocks(void *b, const dtype_t *d, const size_t *counts, const size_t *displs, size_t total, int who)
{
    char *h = malloc(total * d->size + 16);
    memset(h, 0x7b, total * d->size);
    for (int p = 0; p < size; p++)
        for (size_t i = 0; i < counts[p]; i++) put(h, d, displs[p] + i, value(who < 0 ? p : who, i + 1000 * p, 0));
    test_mem_put(on_device, b, h, total * d->size);
    free(h);
}
static void expect_blocks(const char *what, const dtype_t *d, const void *buf, const size_t *counts,
                          const size_t *displs, int who_src, int only_block)
{
    for (int p = 0; p < size; p++) {
        if (only_block >= 0 && p != only_block) continue;
        ref_ctx c = {NULL, 0, 1000 * (size_t)(who_src < 0 ? p : rank), 0, who_src < 0 ? p : who_src};
        if (who_src == -2) { c.from_rank = p; c.base = 1000 * (size_t)rank; } /* alltoall: rank p's block for me */
        expect(what, d, (const char *)buf + displs[p] * d->size, counts[p], ref_value, &c);
    }
}

static void layout(size_t n, int uneven, size_t *counts, size_t *displs, int *ic, int *id, size_t *total)
{
    size_t off = 0;
    for (int p = 0; p < size; p++) {
        counts[p] = uneven ? n + (size_t)p * 3 + (p == 1 ? 0 : 1) : n;
        if (uneven && p == size - 1 && size > 1) counts[p] = 0; /* an empty block */
        displs[p] = off;
        off += counts[p] + (uneven ? 2 : 0); /* gaps between blocks */
        ic[p] = (int)counts[p];
        id[p] = (int)displs[p];
    }
    *total = off;
}

static void test_allgather(const dtype_t *d, size_t n, int vector, int in_place, enum form f)
{
    size_t counts[64], displs[64], total;
    int ic[64], id[64];
    layout(n, vector, counts, displs, ic, id, &total);
    void *r = alloc_elems(d, total), *s = alloc_elems(d, counts[rank]);
    void *mine = (char *)r + displs[rank] * d->size;
    call_t call = {.kind = vector ? C_ALLGATHERV : C_ALLGATHER, .form = f, .s = in_place ? MPI_IN_PLACE : s,
                   .r = r, .n = vector ? ic[rank] : (int)n, .t = d->mpi, .rc = ic, .rd = id};
    char what[96];
    for (gen = 0; gen < rounds(&call); gen++) {
        /* my contribution: value(rank, i + 1000 * rank); in place already in my block */
        poison(r, d, total);
        fill_input(in_place ? mine : s, d, counts[rank], rank, 1000 * (size_t)rank, 0);
        label(what, sizeof what, &call, "allgather%s%s", vector ? "v" : "", in_place ? " in place" : "");
        if (run_round(&call, what) == MPI_SUCCESS) expect_blocks(what, d, r, counts, displs, -1, -1);
    }
    finish(&call);
    test_mem_free(on_device, r);
    test_mem_free(on_device, s);
}

static void test_gather_scatter(const dtype_t *d, size_t n, int root, int vector, enum form f)
{
    size_t counts[64], displs[64], total;
    int ic[64], id[64];
    layout(n, vector, counts, displs, ic, id, &total);
    char what[96];
    /* gather: rank p sends value(p, i + 1000p) */
    void *s = alloc_elems(d, counts[rank]), *r = alloc_elems(d, total);
    call_t g = {.kind = vector ? C_GATHERV : C_GATHER, .form = f, .s = s, .r = r,
                .n = vector ? ic[rank] : (int)n, .t = d->mpi, .rc = ic, .rd = id, .root = root};
    for (gen = 0; gen < rounds(&g); gen++) {
        fill_input(s, d, counts[rank], rank, 1000 * (size_t)rank, 0);
        poison(r, d, total);
        label(what, sizeof what, &g, "gather%s root %d", vector ? "v" : "", root);
        if (run_round(&g, what) == MPI_SUCCESS && rank == root) expect_blocks(what, d, r, counts, displs, -1, -1);
    }
    finish(&g);
    test_mem_free(on_device, s);
    test_mem_free(on_device, r);
    /* scatter: root holds block p = value(p, i + 1000p); rank p gets its block */
    void *all = alloc_elems(d, total), *mine = alloc_elems(d, counts[rank]);
    call_t sc = {.kind = vector ? C_SCATTERV : C_SCATTER, .form = f, .s = all, .r = mine,
                 .n = vector ? ic[rank] : (int)n, .t = d->mpi, .sc = ic, .sd = id, .root = root};
    ref_ctx c = {NULL, 0, 1000 * (size_t)rank, 0, rank};
    for (gen = 0; gen < rounds(&sc); gen++) {
        fill_blocks(all, d, counts, displs, total, -1);
        poison(mine, d, counts[rank]);
        label(what, sizeof what, &sc, "scatter%s root %d", vector ? "v" : "", root);
        if (run_round(&sc, what) == MPI_SUCCESS) expect(what, d, mine, counts[rank], ref_value, &c);
    }
    finish(&sc);
    test_mem_free(on_device, all);
    test_mem_free(on_device, mine);
}

/* alltoall(v): rank p's block q holds value(p, i + 1000q). */
static void test_alltoall(const dtype_t *d, size_t n, int vector, int in_place, enum form f)
{
    size_t counts[64], displs[64], total;
    int ic[64], id[64];
    /* for v: same counts everywhere so that what p sends to q is what q expects */
    layout(n, 0, counts, displs, ic, id, &total);
    void *s = alloc_elems(d, total);
    void *r = in_place ? s : alloc_elems(d, total);
    /* alltoallv in place ignores the send arguments: NULL, as applications may pass them */
    int nosend = vector && in_place;
    call_t call = {.kind = vector ? C_ALLTOALLV : C_ALLTOALL, .form = f, .s = in_place ? MPI_IN_PLACE : s,
                   .r = r, .n = (int)n, .t = d->mpi, .st = nosend ? MPI_DATATYPE_NULL : d->mpi,
                   .sc = nosend ? NULL : ic, .sd = nosend ? NULL : id, .rc = ic, .rd = id};
    char what[96];
    for (gen = 0; gen < rounds(&call); gen++) {
        fill_blocks(s, d, counts, displs, total, rank);
        if (!in_place) poison(r, d, total);
        label(what, sizeof what, &call, "alltoall%s%s", vector ? "v" : "", in_place ? " in place" : "");
        if (run_round(&call, what) == MPI_SUCCESS) expect_blocks(what, d, r, counts, displs, -2, -1);
    }
    finish(&call);
    test_mem_free(on_device, s);
    if (!in_place) test_mem_free(on_device, r);
}

static void test_reduce_scatter(const dtype_t *d, const op_t *o, size_t n, int block, int in_place, enum form f)
{
    size_t counts[64], displs[64], total;
    int ic[64], id[64];
    layout(n, !block, counts, displs, ic, id, &total);
    /* contiguous input: no gaps for reduce_scatter */
    total = 0;
    for (int p = 0; p < size; p++) { displs[p] = total; total += counts[p]; }
    ref_ctx c = {o, o->values, displs[rank], size, 0};
    void *s = alloc_elems(d, total);
    void *r = in_place ? s : alloc_elems(d, counts[rank]);
    call_t call = {.kind = block ? C_REDUCE_SCATTER_BLOCK : C_REDUCE_SCATTER, .form = f,
                   .s = in_place ? MPI_IN_PLACE : s, .r = r, .n = (int)n, .t = d->mpi, .rc = ic, .op = o->op};
    char what[96];
    for (gen = 0; gen < rounds(&call); gen++) {
        fill_input(s, d, total, rank, 0, o->values);
        if (!in_place) poison(r, d, counts[rank]);
        label(what, sizeof what, &call, "reduce_scatter%s %s%s", block ? "_block" : "", o->name,
              in_place ? " in place" : "");
        if (run_round(&call, what) == MPI_SUCCESS) expect(what, d, r, counts[rank], ref_reduce, &c);
    }
    finish(&call);
    test_mem_free(on_device, s);
    if (!in_place) test_mem_free(on_device, r);
}

static void test_scan(const dtype_t *d, const op_t *o, size_t n, int exclusive, enum form f)
{
    ref_ctx c = {o, o->values, 0, exclusive ? rank : rank + 1, 0};
    void *s = alloc_elems(d, n), *r = alloc_elems(d, n);
    call_t call = {.kind = exclusive ? C_EXSCAN : C_SCAN, .form = f, .s = s, .r = r, .n = (int)n, .t = d->mpi,
                   .op = o->op};
    char what[96];
    for (gen = 0; gen < rounds(&call); gen++) {
        fill_input(s, d, n, rank, 0, o->values);
        poison(r, d, n);
        label(what, sizeof what, &call, "%s %s", exclusive ? "exscan" : "scan", o->name);
        if (run_round(&call, what) == MPI_SUCCESS && (!exclusive || rank > 0))
            expect(what, d, r, n, ref_reduce, &c);
    }
    finish(&call);
    test_mem_free(on_device, s);
    test_mem_free(on_device, r);
}

/* A derived (strided) type: every other int. */
static double ref_vector(size_t i, void *c)
{
    (void)c; /* root's elements at even positions; the holes are left alone */
    return i % 2 ? 0x7b7b7b7b : value(0, i / 2, 0);
}
static void test_derived(enum form f)
{
    const size_t n = 101;
    dtype_t d = {"int", MPI_INT, sizeof(int), K_SIGNED};
    MPI_Datatype vec;
    MPI_Type_vector((int)n, 1, 2, MPI_INT, &vec);
    MPI_Type_commit(&vec);
    char *h = malloc(2 * n * sizeof(int));
    void *b = test_mem_alloc(on_device, alloc_dev, 2 * n * sizeof(int));
    /* Open MPI reduces only predefined types, so a derived type is moved, not reduced. */
    call_t call = {.kind = C_BCAST, .form = f, .r = b, .n = 1, .t = vec, .root = 0};
    char what[96];
    for (gen = 0; gen < rounds(&call); gen++) {
        memset(h, 0x7b, 2 * n * sizeof(int));
        for (size_t i = 0; i < n; i++) put(h, &d, 2 * i, rank == 0 ? value(0, i, 0) : 0);
        test_mem_put(on_device, b, h, 2 * n * sizeof(int));
        label(what, sizeof what, &call, "bcast derived vector");
        if (run_round(&call, what) == MPI_SUCCESS) expect(what, &d, b, 2 * n - 1, ref_vector, NULL);
    }
    finish(&call);
    free(h);
    test_mem_free(on_device, b);
    MPI_Type_free(&vec);
}

/* Horovod's fp16: MPI_Type_contiguous(2, MPI_BYTE) and its own host op. */
static void horovod_half_sum(void *in, void *inout, int *len, MPI_Datatype *t)
{
    (void)t;
    uint16_t *a = in, *b = inout;
    for (int i = 0; i < *len; i++)
        b[i] = coll_gpu_ext_float_to_half(coll_gpu_ext_half_to_float(a[i]) + coll_gpu_ext_half_to_float(b[i]));
}
static void test_horovod(size_t n, enum form f)
{
    MPI_Datatype f16;
    MPI_Op op;
    MPI_Type_contiguous(2, MPI_BYTE, &f16);
    MPI_Type_commit(&f16);
    MPI_Op_create(horovod_half_sum, 1, &op);
    dtype_t d = {"horovod fp16", f16, 2, K_HALF};
    op_t o = {"sum", MPI_SUM, 0, 0};
    ref_ctx c = {&o, 0, 0, size, 0};
    void *b = alloc_elems(&d, n);
    call_t call = {.kind = C_ALLREDUCE, .form = f, .s = MPI_IN_PLACE, .r = b, .n = (int)n, .t = f16, .op = op};
    char what[96];
    for (gen = 0; gen < rounds(&call); gen++) {
        fill_input(b, &d, n, rank, 0, 0);
        label(what, sizeof what, &call, "allreduce horovod");
        if (run_round(&call, what) == MPI_SUCCESS) expect(what, &d, b, n, ref_reduce, &c);
    }
    finish(&call);
    test_mem_free(on_device, b);
    MPI_Op_free(&op);
    MPI_Type_free(&f16);
}

/* Every type x op: allreduce (in place and not), reduce, reduce_scatter_block
 * (in place and not), reduce_local. */
static void run_reductions(size_t n, enum form f)
{
    for (int di = 0; di < ndtypes; di++) {
        const dtype_t *d = &dtypes[di];
        int is_int = d->kind == K_SIGNED || d->kind == K_UNSIGNED;
        for (size_t oi = 0; oi < sizeof ops / sizeof ops[0]; oi++) {
            const op_t *o = &ops[oi];
            if (o->int_only && !is_int) continue;
            if (quick && oi > 3 && di % 3) continue;
            for (int ip = 0; ip < 2; ip++) test_allreduce(d, o, n, ip, f);
            if (mpi_op(d, o) != o->op) continue; /* the rest need predefined ops in the reference helpers */
            test_reduce(d, o, n, size - 1, oi % 2, f);
            test_reduce_scatter(d, o, n, 1, 0, f);
            test_reduce_scatter(d, o, n, 1, 1, f);
            test_reduce_local(d, o, n);
        }
    }
}

/* The whole sweep, every collective called in form m (blocking: the main
 * loop a second time through MPI_I<coll> + MPI_Wait). */
static void run_sweep(enum form m)
{
    size_t sizes_full[] = {1, 7, 1003, 65537, 1u << 18, (1u << 20) + 5};
    size_t sizes_quick[] = {1, 7, 1003};
    size_t *sizes = quick ? sizes_quick : sizes_full;
    int nsizes = quick ? 3 : (int)(sizeof sizes_full / sizeof sizes_full[0]);
    const dtype_t *fl = &dtypes[8], *dbl = &dtypes[9], *i32 = &dtypes[4];

    for (int si = 0; si < nsizes; si++) {
        size_t n = sizes[si];
        if (si < 3 || !quick) run_reductions(si >= 4 ? n / 8 : n, m); /* every type x op: the largest sizes cut */
        for (int nb = 0; nb < (m == F_BLOCKING ? 2 : 1); nb++) {
            enum form f = nb ? F_NONBLOCKING : m;
            for (int ip = 0; ip < 2; ip++) {
                test_allreduce(fl, &ops[0], n, ip, f);
                test_allgather(fl, n, 0, ip, f);
                test_allgather(dbl, n, 1, ip, f);
                test_alltoall(i32, n, 0, ip, f);
                test_alltoall(fl, n, 1, ip, f);
                test_reduce_scatter(fl, &ops[0], n, 1, ip, f);
                test_reduce_scatter(i32, &ops[1], n, 0, ip, f);
            }
            test_reduce(fl, &ops[0], n, 0, 1, f);
            test_bcast(fl, n, size > 1 ? 1 : 0, f);
            test_bcast(dtypes + 0, n + 3, 0, f);
            test_gather_scatter(fl, n, 0, 0, f);
            test_gather_scatter(dbl, n, size - 1, 1, f);
            test_scan(fl, &ops[0], n, 0, f);
            test_scan(i32, &ops[1], n, 1, f);
        }
    }
    /* count 0 everywhere */
    test_allreduce(fl, &ops[0], 0, 0, m);
    test_bcast(fl, 0, 0, m);
    test_allgather(fl, 0, 0, 0, m);
    test_derived(m);
    test_horovod(1003, m);
    MPI_Barrier(MPI_COMM_WORLD);
}

int main(int argc, char **argv)
{
    enum form want = F_BLOCKING;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--mem") && i + 1 < argc) {
            const char *m = argv[++i];
            mode = !strcmp(m, "device") ? MEM_DEVICE : !strcmp(m, "mixed") ? MEM_MIXED
                   : !strcmp(m, "otherdev") ? MEM_OTHERDEV : MEM_HOST;
        } else if (!strcmp(argv[i], "--mode") && i + 1 < argc) {
            const char *m = argv[++i];
            int k = F_BLOCKING;
            while (k <= F_ALL && strcmp(m, form_names[k])) k++;
            if (k > F_ALL) {
                if (rank == 0) fprintf(stderr, "coll_check: unknown --mode %s (blocking|nonblocking|persistent|all)\n", m);
                MPI_Finalize();
                return 2;
            }
            want = (enum form)k;
        } else if (!strcmp(argv[i], "--quick")) {
            quick = 1;
        } else if (!strcmp(argv[i], "--one-gpu")) {
            one_gpu = 1;
        }
    }
    if (size > 64) MPI_Abort(MPI_COMM_WORLD, 2); /* the layouts hold 64 ranks */
    if (want == F_PERSISTENT && !have_persistent) {
        if (rank == 0) printf("coll_check: no persistent collectives in this MPI: skipped\n");
        MPI_Finalize();
        return 77;
    }
    if (mode != MEM_HOST) {
        int local = 0, ndev = 0;
        if (test_select_gpu(one_gpu, &local, &ndev) < 0 || (mode == MEM_OTHERDEV && ndev < 2)) {
            if (rank == 0) printf("coll_check: no GPU (or too few for this mode): skipped\n");
            MPI_Finalize();
            return 77;
        }
        on_device = mode != MEM_MIXED || rank % 2 == 0;
        if (mode == MEM_OTHERDEV) alloc_dev = (local + 1) % ndev;
    }
    coll_gpu_ext_init(&ext);
    /* As applications do before their first collectives. With coll/gpu it
     * also sets the GPU path up, which nonblocking and persistent calls
     * take only once it is (README: nonblocking and persistent). */
    MPI_Barrier(MPI_COMM_WORLD);
    add_dtype("int8", MPI_INT8_T, 1, K_SIGNED);
    add_dtype("uint8", MPI_UINT8_T, 1, K_UNSIGNED);
    add_dtype("int16", MPI_SHORT, 2, K_SIGNED);
    add_dtype("uint16", MPI_UINT16_T, 2, K_UNSIGNED);
    add_dtype("int", MPI_INT, 4, K_SIGNED);
    add_dtype("unsigned", MPI_UNSIGNED, 4, K_UNSIGNED);
    add_dtype("long", MPI_LONG, 8, K_SIGNED);
    add_dtype("uint64", MPI_UINT64_T, 8, K_UNSIGNED);
    add_dtype("float", MPI_FLOAT, 4, K_FLOAT);
    add_dtype("double", MPI_DOUBLE, 8, K_DOUBLE);
    add_dtype("fp16", ext.float16, 2, K_HALF);
    add_dtype("bf16", ext.bfloat16, 2, K_BF16);
#ifdef MPIX_C_FLOAT16
    add_dtype("MPIX_C_FLOAT16", MPIX_C_FLOAT16, 2, K_HALF);
#endif

    const char *mem = mode == MEM_HOST ? "host" : mode == MEM_DEVICE ? "device" : mode == MEM_MIXED ? "mixed"
                                                                                                     : "other-GPU";
    int total[2] = {0, 0}; /* checks, failures over every mode run */
    for (enum form m = F_BLOCKING; m < F_ALL; m++) {
        if (want != F_ALL && m != want) continue;
        if (m == F_PERSISTENT && !have_persistent) {
            if (rank == 0) printf("coll_check: no persistent collectives in this MPI: persistent mode skipped\n");
            continue;
        }
        int before[2] = {checks, failures}, mine[2], sum[2];
        run_sweep(m);
        mine[0] = checks - before[0];
        mine[1] = failures - before[1];
        MPI_Allreduce(mine, sum, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        total[0] += sum[0];
        total[1] += sum[1];
        if (rank == 0)
            printf("coll_check (%d ranks, %s buffers, %s): %d checks, %d failed\n", size, mem, form_names[m], sum[0],
                   sum[1]);
    }
    if (rank == 0 && want == F_ALL)
        printf("coll_check (%d ranks, %s buffers, all modes%s): %d checks, %d failed\n", size, mem,
               have_persistent ? "" : " but persistent", total[0], total[1]);
    coll_gpu_ext_free(&ext);
    MPI_Finalize();
    return total[1] ? 1 : 0;
}
