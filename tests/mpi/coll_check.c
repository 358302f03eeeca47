/* Every collective coll/gpu wraps, against a host reference.
 *
 *   coll_check [--mem host|device|mixed|otherdev] [--quick] [--one-gpu]
 *
 * host: plain host buffers (proves host behaviour is unchanged);
 * device: cudaMalloc'ed buffers on each rank's GPU; mixed: even ranks device,
 * odd ranks host; otherdev: buffers on a GPU other than the current one.
 * --one-gpu: every rank on GPU 0 (else rank i of a node takes GPU i % count).
 * Device modes exit 77 (skip) without a GPU. Prints each failure and exits 1. */
#include <cuda_runtime.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_gpu.h"

#include "coll_gpu_ext.h"

enum mem_mode { MEM_HOST, MEM_DEVICE, MEM_MIXED, MEM_OTHERDEV };
static enum mem_mode mode = MEM_HOST;
static int rank, size, failures, checks, on_device, quick, one_gpu;
static int alloc_dev = -1; /* otherdev: buffers live on this GPU, another is current */
static coll_gpu_ext_t ext;

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

static double value(int r, size_t i, int kind_of_values)
{
    switch (kind_of_values) {
    case 1: return 1 + (double)((r + i) % 2);
    case 2: return (double)((r * 5 + i * 3) % 3 == 0);
    case 3: return (double)((r * 37 + i * 11) % 256);
    default: return 1 + (double)((r * 3 + i * 7) % 5);
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

/* ---- buffers: where the collective's memory lives ------------------------- */

/* Fills a device/host buffer of n elements with value(r, i + base, vk). */
static void *make_input(const dtype_t *d, size_t n, int r, size_t base, int vk)
{
    char *h = malloc(n * d->size + 16);
    for (size_t i = 0; i < n; i++) put(h, d, i, value(r, i + base, vk));
    void *b = test_mem_alloc(on_device, alloc_dev, n * d->size);
    test_mem_put(on_device, b, h, n * d->size);
    free(h);
    return b;
}
static void *make_poisoned(const dtype_t *d, size_t n)
{
    char *h = malloc(n * d->size + 16);
    memset(h, 0x7b, n * d->size);
    void *b = test_mem_alloc(on_device, alloc_dev, n * d->size);
    test_mem_put(on_device, b, h, n * d->size);
    free(h);
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

/* ---- the collectives ------------------------------------------------------- */
static void test_allreduce(const dtype_t *d, const op_t *o, size_t n, int in_place, int nonblocking)
{
    ref_ctx c = {o, o->values, 0, size, 0};
    void *s = make_input(d, n, rank, 0, o->values);
    void *r = in_place ? s : make_poisoned(d, n);
    int rc;
    if (nonblocking) {
        MPI_Request req;
        rc = MPI_Iallreduce(in_place ? MPI_IN_PLACE : s, r, (int)n, d->mpi, o->op, MPI_COMM_WORLD, &req);
        if (rc == MPI_SUCCESS) rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
    } else {
        rc = MPI_Allreduce(in_place ? MPI_IN_PLACE : s, r, (int)n, d->mpi, o->op, MPI_COMM_WORLD);
    }
    char what[64];
    snprintf(what, sizeof what, "%sallreduce %s%s", nonblocking ? "i" : "", o->name, in_place ? " in place" : "");
    if (rc != MPI_SUCCESS) { fprintf(stderr, "rank %d FAIL %s returned %d\n", rank, what, rc); failures++; }
    else expect(what, d, r, n, ref_reduce, &c);
    test_mem_free(on_device, s);
    if (!in_place) test_mem_free(on_device, r);
}

static void test_reduce(const dtype_t *d, const op_t *o, size_t n, int root, int in_place, int nonblocking)
{
    ref_ctx c = {o, o->values, 0, size, 0};
    void *s = make_input(d, n, rank, 0, o->values);
    int ip = in_place && rank == root;
    void *r = ip ? s : make_poisoned(d, n);
    if (nonblocking) {
        MPI_Request req;
        MPI_Ireduce(ip ? MPI_IN_PLACE : s, r, (int)n, d->mpi, o->op, root, MPI_COMM_WORLD, &req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
    } else {
        MPI_Reduce(ip ? MPI_IN_PLACE : s, r, (int)n, d->mpi, o->op, root, MPI_COMM_WORLD);
    }
    if (rank == root) expect(nonblocking ? "ireduce" : "reduce", d, r, n, ref_reduce, &c);
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

static void test_bcast(const dtype_t *d, size_t n, int root, int nonblocking)
{
    ref_ctx c = {NULL, 0, 0, 0, root};
    void *b = rank == root ? make_input(d, n, root, 0, 0) : make_poisoned(d, n);
    if (nonblocking) {
        MPI_Request req;
        MPI_Ibcast(b, (int)n, d->mpi, root, MPI_COMM_WORLD, &req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
    } else {
        MPI_Bcast(b, (int)n, d->mpi, root, MPI_COMM_WORLD);
    }
    expect(nonblocking ? "ibcast" : "bcast", d, b, n, ref_value, &c);
    test_mem_free(on_device, b);
}

/* Buffers with one block of n elements per rank: block p holds value(p, i + base_of(p)). */
static void *make_blocks(const dtype_t *d, const size_t *counts, const size_t *displs, size_t total, int who)
{
    char *h = malloc(total * d->size + 16);
    memset(h, 0x7b, total * d->size);
    for (int p = 0; p < size; p++)
        for (size_t i = 0; i < counts[p]; i++) put(h, d, displs[p] + i, value(who < 0 ? p : who, i + 1000 * p, 0));
    void *b = test_mem_alloc(on_device, alloc_dev, total * d->size);
    test_mem_put(on_device, b, h, total * d->size);
    free(h);
    return b;
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

static void test_allgather(const dtype_t *d, size_t n, int vector, int in_place, int nonblocking)
{
    size_t counts[64], displs[64], total;
    int ic[64], id[64];
    layout(n, vector, counts, displs, ic, id, &total);
    void *r = make_blocks(d, counts, displs, total, -1); /* own block filled for in place */
    if (!in_place) { test_mem_free(on_device, r); r = make_poisoned(d, total); }
    /* my contribution: value(rank, i + 1000 * rank) */
    char *h = malloc(counts[rank] * d->size + 16);
    for (size_t i = 0; i < counts[rank]; i++) put(h, d, i, value(rank, i + 1000 * (size_t)rank, 0));
    void *s = test_mem_alloc(on_device, alloc_dev, counts[rank] * d->size);
    test_mem_put(on_device, s, h, counts[rank] * d->size);
    free(h);
    const void *sb = in_place ? MPI_IN_PLACE : s;
    MPI_Request req;
    if (vector) {
        if (nonblocking) MPI_Iallgatherv(sb, ic[rank], d->mpi, r, ic, id, d->mpi, MPI_COMM_WORLD, &req);
        else MPI_Allgatherv(sb, ic[rank], d->mpi, r, ic, id, d->mpi, MPI_COMM_WORLD);
    } else {
        if (nonblocking) MPI_Iallgather(sb, (int)n, d->mpi, r, (int)n, d->mpi, MPI_COMM_WORLD, &req);
        else MPI_Allgather(sb, (int)n, d->mpi, r, (int)n, d->mpi, MPI_COMM_WORLD);
    }
    if (nonblocking) MPI_Wait(&req, MPI_STATUS_IGNORE);
    char what[64];
    snprintf(what, sizeof what, "%sallgather%s%s", nonblocking ? "i" : "", vector ? "v" : "", in_place ? " in place" : "");
    expect_blocks(what, d, r, counts, displs, -1, -1);
    test_mem_free(on_device, r);
    test_mem_free(on_device, s);
}

static void test_gather_scatter(const dtype_t *d, size_t n, int root, int vector, int nonblocking)
{
    size_t counts[64], displs[64], total;
    int ic[64], id[64];
    layout(n, vector, counts, displs, ic, id, &total);
    MPI_Request req;
    /* gather: rank p sends value(p, i + 1000p) */
    char *h = malloc(counts[rank] * d->size + 16);
    for (size_t i = 0; i < counts[rank]; i++) put(h, d, i, value(rank, i + 1000 * (size_t)rank, 0));
    void *s = test_mem_alloc(on_device, alloc_dev, counts[rank] * d->size);
    test_mem_put(on_device, s, h, counts[rank] * d->size);
    free(h);
    void *r = make_poisoned(d, total);
    if (vector) {
        if (nonblocking) MPI_Igatherv(s, ic[rank], d->mpi, r, ic, id, d->mpi, root, MPI_COMM_WORLD, &req);
        else MPI_Gatherv(s, ic[rank], d->mpi, r, ic, id, d->mpi, root, MPI_COMM_WORLD);
    } else {
        if (nonblocking) MPI_Igather(s, (int)n, d->mpi, r, (int)n, d->mpi, root, MPI_COMM_WORLD, &req);
        else MPI_Gather(s, (int)n, d->mpi, r, (int)n, d->mpi, root, MPI_COMM_WORLD);
    }
    if (nonblocking) MPI_Wait(&req, MPI_STATUS_IGNORE);
    if (rank == root) expect_blocks(vector ? "gatherv" : "gather", d, r, counts, displs, -1, -1);
    test_mem_free(on_device, s);
    test_mem_free(on_device, r);
    /* scatter: root holds block p = value(p, i + 1000p); rank p gets its block */
    void *all = make_blocks(d, counts, displs, total, -1);
    void *mine = make_poisoned(d, counts[rank]);
    if (vector) {
        if (nonblocking) MPI_Iscatterv(all, ic, id, d->mpi, mine, ic[rank], d->mpi, root, MPI_COMM_WORLD, &req);
        else MPI_Scatterv(all, ic, id, d->mpi, mine, ic[rank], d->mpi, root, MPI_COMM_WORLD);
    } else {
        if (nonblocking) MPI_Iscatter(all, (int)n, d->mpi, mine, (int)n, d->mpi, root, MPI_COMM_WORLD, &req);
        else MPI_Scatter(all, (int)n, d->mpi, mine, (int)n, d->mpi, root, MPI_COMM_WORLD);
    }
    if (nonblocking) MPI_Wait(&req, MPI_STATUS_IGNORE);
    ref_ctx c = {NULL, 0, 1000 * (size_t)rank, 0, rank};
    expect(vector ? "scatterv" : "scatter", d, mine, counts[rank], ref_value, &c);
    test_mem_free(on_device, all);
    test_mem_free(on_device, mine);
}

/* alltoall(v): rank p's block q holds value(p, i + 1000q). */
static void test_alltoall(const dtype_t *d, size_t n, int vector, int in_place, int nonblocking)
{
    size_t counts[64], displs[64], total;
    int ic[64], id[64];
    /* for v: same counts everywhere so that what p sends to q is what q expects */
    layout(n, 0, counts, displs, ic, id, &total);
    void *s = make_blocks(d, counts, displs, total, rank);
    void *r = in_place ? s : make_poisoned(d, total);
    const void *sb = in_place ? MPI_IN_PLACE : s;
    MPI_Request req;
    if (vector) {
        /* In place the send arguments are ignored: NULL, as applications may pass them. */
        const int *sc = in_place ? NULL : ic, *sd = in_place ? NULL : id;
        MPI_Datatype st = in_place ? MPI_DATATYPE_NULL : d->mpi;
        if (nonblocking) MPI_Ialltoallv(sb, sc, sd, st, r, ic, id, d->mpi, MPI_COMM_WORLD, &req);
        else MPI_Alltoallv(sb, sc, sd, st, r, ic, id, d->mpi, MPI_COMM_WORLD);
    } else {
        if (nonblocking) MPI_Ialltoall(sb, (int)n, d->mpi, r, (int)n, d->mpi, MPI_COMM_WORLD, &req);
        else MPI_Alltoall(sb, (int)n, d->mpi, r, (int)n, d->mpi, MPI_COMM_WORLD);
    }
    if (nonblocking) MPI_Wait(&req, MPI_STATUS_IGNORE);
    char what[64];
    snprintf(what, sizeof what, "%salltoall%s%s", nonblocking ? "i" : "", vector ? "v" : "", in_place ? " in place" : "");
    expect_blocks(what, d, r, counts, displs, -2, -1);
    test_mem_free(on_device, s);
    if (!in_place) test_mem_free(on_device, r);
}

static void test_reduce_scatter(const dtype_t *d, const op_t *o, size_t n, int block, int in_place, int nonblocking)
{
    size_t counts[64], displs[64], total;
    int ic[64], id[64];
    layout(n, !block, counts, displs, ic, id, &total);
    /* contiguous input: no gaps for reduce_scatter */
    total = 0;
    for (int p = 0; p < size; p++) { displs[p] = total; total += counts[p]; }
    ref_ctx c = {o, o->values, displs[rank], size, 0};
    void *s = make_input(d, total, rank, 0, o->values);
    void *r = in_place ? s : make_poisoned(d, counts[rank]);
    const void *sb = in_place ? MPI_IN_PLACE : s;
    MPI_Request req;
    if (block) {
        if (nonblocking) MPI_Ireduce_scatter_block(sb, r, (int)n, d->mpi, o->op, MPI_COMM_WORLD, &req);
        else MPI_Reduce_scatter_block(sb, r, (int)n, d->mpi, o->op, MPI_COMM_WORLD);
    } else {
        if (nonblocking) MPI_Ireduce_scatter(sb, r, ic, d->mpi, o->op, MPI_COMM_WORLD, &req);
        else MPI_Reduce_scatter(sb, r, ic, d->mpi, o->op, MPI_COMM_WORLD);
    }
    if (nonblocking) MPI_Wait(&req, MPI_STATUS_IGNORE);
    char what[64];
    snprintf(what, sizeof what, "%sreduce_scatter%s %s%s", nonblocking ? "i" : "", block ? "_block" : "", o->name,
             in_place ? " in place" : "");
    expect(what, d, r, counts[rank], ref_reduce, &c);
    test_mem_free(on_device, s);
    if (!in_place) test_mem_free(on_device, r);
}

static void test_scan(const dtype_t *d, const op_t *o, size_t n, int exclusive, int nonblocking)
{
    ref_ctx c = {o, o->values, 0, exclusive ? rank : rank + 1, 0};
    void *s = make_input(d, n, rank, 0, o->values);
    void *r = make_poisoned(d, n);
    MPI_Request req;
    if (exclusive) {
        if (nonblocking) MPI_Iexscan(s, r, (int)n, d->mpi, o->op, MPI_COMM_WORLD, &req);
        else MPI_Exscan(s, r, (int)n, d->mpi, o->op, MPI_COMM_WORLD);
    } else {
        if (nonblocking) MPI_Iscan(s, r, (int)n, d->mpi, o->op, MPI_COMM_WORLD, &req);
        else MPI_Scan(s, r, (int)n, d->mpi, o->op, MPI_COMM_WORLD);
    }
    if (nonblocking) MPI_Wait(&req, MPI_STATUS_IGNORE);
    if (!exclusive || rank > 0) expect(exclusive ? "exscan" : "scan", d, r, n, ref_reduce, &c);
    test_mem_free(on_device, s);
    test_mem_free(on_device, r);
}

/* A derived (strided) type: every other int. */
static double ref_vector(size_t i, void *c)
{
    (void)c; /* root's elements at even positions; the holes are left alone */
    return i % 2 ? 0x7b7b7b7b : 1 + (double)((i / 2) % 5);
}
static void test_derived(void)
{
    const size_t n = 101;
    dtype_t d = {"int", MPI_INT, sizeof(int), K_SIGNED};
    MPI_Datatype vec;
    MPI_Type_vector((int)n, 1, 2, MPI_INT, &vec);
    MPI_Type_commit(&vec);
    char *h = malloc(2 * n * sizeof(int));
    memset(h, 0x7b, 2 * n * sizeof(int));
    for (size_t i = 0; i < n; i++) put(h, &d, 2 * i, 1 + (double)(i % 5));
    void *b = test_mem_alloc(on_device, alloc_dev, 2 * n * sizeof(int));
    test_mem_put(on_device, b, h, 2 * n * sizeof(int));
    /* Open MPI reduces only predefined types, so a derived type is moved, not reduced. */
    if (rank != 0) {
        for (size_t i = 0; i < n; i++) put(h, &d, 2 * i, 0);
        test_mem_put(on_device, b, h, 2 * n * sizeof(int));
    }
    MPI_Bcast(b, 1, vec, 0, MPI_COMM_WORLD);
    expect("bcast derived vector", &d, b, 2 * n - 1, ref_vector, NULL);
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
static void test_horovod(size_t n)
{
    MPI_Datatype f16;
    MPI_Op op;
    MPI_Type_contiguous(2, MPI_BYTE, &f16);
    MPI_Type_commit(&f16);
    MPI_Op_create(horovod_half_sum, 1, &op);
    dtype_t d = {"horovod fp16", f16, 2, K_HALF};
    op_t o = {"sum", MPI_SUM, 0, 0};
    ref_ctx c = {&o, 0, 0, size, 0};
    void *b = make_input(&d, n, rank, 0, 0);
    MPI_Allreduce(MPI_IN_PLACE, b, (int)n, f16, op, MPI_COMM_WORLD);
    expect("horovod allreduce", &d, b, n, ref_reduce, &c);
    test_mem_free(on_device, b);
    MPI_Op_free(&op);
    MPI_Type_free(&f16);
}

static const op_t *ext_op(const dtype_t *d, const op_t *o)
{
    static op_t x;
    x = *o;
    int bf = d->kind == K_BF16;
    if (o->op == MPI_SUM) x.op = bf ? ext.bfloat16_sum : ext.float16_sum;
    else if (o->op == MPI_PROD) x.op = bf ? ext.bfloat16_prod : ext.float16_prod;
    else if (o->op == MPI_MAX) x.op = bf ? ext.bfloat16_max : ext.float16_max;
    else x.op = bf ? ext.bfloat16_min : ext.float16_min;
    return &x;
}

static void run_reductions(size_t n)
{
    for (int di = 0; di < ndtypes; di++) {
        const dtype_t *d = &dtypes[di];
        int is_int = d->kind == K_SIGNED || d->kind == K_UNSIGNED;
        for (size_t oi = 0; oi < sizeof ops / sizeof ops[0]; oi++) {
            const op_t *o = &ops[oi];
            if (o->int_only && !is_int) continue;
            if (quick && oi > 3 && di % 3) continue;
            /* fp16/bf16 run with coll_gpu_ext's ops; the reference uses the predefined meaning */
            op_t use = *o;
            if (d->kind == K_HALF || d->kind == K_BF16) use.op = ext_op(d, o)->op;
            for (int ip = 0; ip < 2; ip++) {
                ref_ctx c = {o, o->values, 0, size, 0};
                void *s = make_input(d, n, rank, 0, o->values);
                void *r = ip ? s : make_poisoned(d, n);
                MPI_Allreduce(ip ? MPI_IN_PLACE : s, r, (int)n, d->mpi, use.op, MPI_COMM_WORLD);
                char what[64];
                snprintf(what, sizeof what, "allreduce %s%s", o->name, ip ? " in place" : "");
                expect(what, d, r, n, ref_reduce, &c);
                test_mem_free(on_device, s);
                if (!ip) test_mem_free(on_device, r);
            }
            if (use.op != o->op) continue; /* the rest need predefined ops in the reference helpers */
            test_reduce(d, o, n, size - 1, oi % 2, 0);
            test_reduce_scatter(d, o, n, 1, 0, 0);
            test_reduce_scatter(d, o, n, 1, 1, 0);
            test_reduce_local(d, o, n);
        }
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--mem") && i + 1 < argc) {
            const char *m = argv[++i];
            mode = !strcmp(m, "device") ? MEM_DEVICE : !strcmp(m, "mixed") ? MEM_MIXED
                   : !strcmp(m, "otherdev") ? MEM_OTHERDEV : MEM_HOST;
        } else if (!strcmp(argv[i], "--quick")) {
            quick = 1;
        } else if (!strcmp(argv[i], "--one-gpu")) {
            one_gpu = 1;
        }
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

    size_t sizes_full[] = {1, 7, 1003, 65537, 1u << 18, (1u << 20) + 5};
    size_t sizes_quick[] = {1, 7, 1003};
    size_t *sizes = quick ? sizes_quick : sizes_full;
    int nsizes = quick ? 3 : (int)(sizeof sizes_full / sizeof sizes_full[0]);
    const dtype_t *f = &dtypes[8], *dbl = &dtypes[9], *i32 = &dtypes[4];

    for (int si = 0; si < nsizes; si++) {
        size_t n = sizes[si];
        if (si < 3 || !quick) run_reductions(si >= 4 ? n / 8 : n); /* every type x op: the largest sizes cut */
        for (int nb = 0; nb < 2; nb++) {
            for (int ip = 0; ip < 2; ip++) {
                test_allreduce(f, &ops[0], n, ip, nb);
                test_allgather(f, n, 0, ip, nb);
                test_allgather(dbl, n, 1, ip, nb);
                test_alltoall(i32, n, 0, ip, nb);
                test_alltoall(f, n, 1, ip, nb);
                test_reduce_scatter(f, &ops[0], n, 1, ip, nb);
                test_reduce_scatter(i32, &ops[1], n, 0, ip, nb);
            }
            test_reduce(f, &ops[0], n, 0, 1, nb);
            test_bcast(f, n, size > 1 ? 1 : 0, nb);
            test_bcast(dtypes + 0, n + 3, 0, nb);
            test_gather_scatter(f, n, 0, 0, nb);
            test_gather_scatter(dbl, n, size - 1, 1, nb);
            test_scan(f, &ops[0], n, 0, nb);
            test_scan(i32, &ops[1], n, 1, nb);
        }
    }
    /* count 0 everywhere */
    test_allreduce(f, &ops[0], 0, 0, 0);
    test_bcast(f, 0, 0, 0);
    test_allgather(f, 0, 0, 0, 0);
    test_derived();
    test_horovod(1003);
    MPI_Barrier(MPI_COMM_WORLD);

    int total_fail = 0, total_checks = 0;
    MPI_Allreduce(&failures, &total_fail, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(&checks, &total_checks, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("coll_check (%d ranks, %s buffers): %d checks, %d failed\n", size,
               mode == MEM_HOST ? "host" : mode == MEM_DEVICE ? "device" : mode == MEM_MIXED ? "mixed" : "other-GPU",
               total_checks, total_fail);
    coll_gpu_ext_free(&ext);
    MPI_Finalize();
    return total_fail ? 1 : 0;
}
