/* Derived datatypes through every collective, checked byte for byte.
 *
 *   dtype_check [--mem host|device] [--quick] [--one-gpu] [--list] [--reduce-all]
 *
 * A catalogue of derived datatypes whose type maps do not start at offset 0,
 * have holes, negative lower bounds or negative strides, each run through
 * bcast (every root), allgather(v), alltoall(v), gather(v) and scatter(v)
 * (in place too where MPI has it) and, on the predefined types of the
 * catalogue only (see build_catalogue), allreduce, reduce, reduce_scatter(_block)
 * and scan with MPI_SUM, at counts 0, 1, 3, 17 and (unless --quick) one of more than 4 MiB
 * per call (the zero-copy and hierarchical thresholds). Mixed type signatures
 * too (count 1 of contiguous(3, int) on one side, 3 ints on the other).
 *
 * Every buffer covers its whole span plus a margin on both sides and starts
 * filled with a sentinel (0xA5). The expected image of each buffer is built on
 * the host by MPI_Unpack of a packed stream of known values into a
 * sentinel-filled image with the same datatype, so the data must land exactly
 * in the type map (at buf + true_lb + i * extent ...) and every byte outside it
 * (holes, margins, the send buffers, receive buffers that are not significant)
 * must be left alone. After each call the whole allocation is compared byte
 * for byte.
 *
 * host: host buffers (Open MPI's own collectives through the component's
 * pass-through: validates this program); device: cudaMalloc'ed buffers.
 * --one-gpu: every rank on GPU 0 (else rank i of a node takes GPU i % count).
 * --list: print the catalogue (size, lb, extent, true lb, true extent).
 * Device mode exits 77 (skip) without a GPU. Prints each failure and exits 1. */
#include <cuda_runtime.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_gpu.h"

#define SENTINEL 0xA5
#define MARGIN 64

static int rank, size, failures, checks, on_device, quick, one_gpu, reduce_all;

/* ---- the catalogue --------------------------------------------------------- */
enum kind { K_INT, K_FLOAT, K_DOUBLE, K_BYTE };
typedef struct {
    const char *name;
    MPI_Datatype t;
    MPI_Datatype basic; /* the one predefined type it is built from */
    enum kind kind;
    int bsize, nb;      /* size of the basic type; basic elements per element */
    int own;            /* derived: committed here, freed at the end */
    int reduce;         /* MPI_SUM on it is checked */
    int large;          /* also run at > 4 MiB per call */
    MPI_Aint lb, extent, tlb, textent, size;
} dt_t;

static dt_t cat[32];
static int ncat;

static dt_t *add_type(const char *name, MPI_Datatype t, MPI_Datatype basic, int reduce, int large)
{
    dt_t *d = &cat[ncat++];
    int s = 0, bs = 0;
    memset(d, 0, sizeof *d);
    d->name = name;
    d->t = t;
    d->basic = basic;
    d->kind = basic == MPI_INT ? K_INT : basic == MPI_FLOAT ? K_FLOAT : basic == MPI_DOUBLE ? K_DOUBLE : K_BYTE;
    d->own = t != basic;
    if (d->own) MPI_Type_commit(&d->t);
    MPI_Type_size(d->t, &s);
    MPI_Type_size(basic, &bs);
    d->size = s;
    d->bsize = bs;
    d->nb = s / bs;
    d->reduce = (reduce || reduce_all) && d->kind != K_BYTE;
    d->large = large;
    MPI_Type_get_extent(d->t, &d->lb, &d->extent);
    MPI_Type_get_true_extent(d->t, &d->tlb, &d->textent);
    return d;
}
static const dt_t *find_type(const char *name)
{
    for (int i = 0; i < ncat; i++)
        if (!strcmp(cat[i].name, name)) return &cat[i];
    fprintf(stderr, "dtype_check: no type %s\n", name);
    MPI_Abort(MPI_COMM_WORLD, 2);
    return NULL;
}

/* Reductions (MPI_SUM) run only on the predefined types of the catalogue:
 * Open MPI 4.1.4 refuses a predefined op on every derived type here, even
 * MPI_Type_dup(MPI_INT) and contiguous(3, MPI_INT), with MPI_ERR_OP on host
 * buffers (MPI defines the predefined ops on predefined types only), so
 * there is no reference behaviour to hold the component to. --reduce-all
 * tries them anyway (and shows those errors). */
static void build_catalogue(void)
{
    MPI_Datatype t, u, v;
    add_type("int", MPI_INT, MPI_INT, 1, 1);
    add_type("double", MPI_DOUBLE, MPI_DOUBLE, 1, 0);
    add_type("byte", MPI_BYTE, MPI_BYTE, 0, 0);
    MPI_Type_dup(MPI_INT, &t);
    add_type("dup(int)", t, MPI_INT, 0, 0);
    MPI_Type_contiguous(3, MPI_INT, &t);
    add_type("contig3(int)", t, MPI_INT, 0, 1);
    {   /* rows 2..4 of an 8 x 6 float array: 72 contiguous bytes at offset 48, extent 192 */
        int sizes[2] = {8, 6}, sub[2] = {3, 6}, starts[2] = {2, 0};
        MPI_Type_create_subarray(2, sizes, sub, starts, MPI_ORDER_C, MPI_FLOAT, &t);
        add_type("subarray rows(float)", t, MPI_FLOAT, 0, 1);
    }
    {   /* a 2 x 3 block at (1, 2) of a 6 x 5 double array: strided */
        int sizes[2] = {6, 5}, sub[2] = {2, 3}, starts[2] = {1, 2};
        MPI_Type_create_subarray(2, sizes, sub, starts, MPI_ORDER_C, MPI_DOUBLE, &t);
        add_type("subarray block(double)", t, MPI_DOUBLE, 0, 0);
    }
    {   /* Fortran order: a 2 x 2 block at (1, 3) of a 4 x 5 int array */
        int sizes[2] = {4, 5}, sub[2] = {2, 2}, starts[2] = {1, 3};
        MPI_Type_create_subarray(2, sizes, sub, starts, MPI_ORDER_FORTRAN, MPI_INT, &t);
        add_type("subarray fortran(int)", t, MPI_INT, 0, 0);
    }
    {   /* one int at displacement 8: lb 8, extent 4 (count > 1 contiguous from buf + 8) */
        int bl = 1;
        MPI_Aint disp = 8;
        MPI_Datatype ty = MPI_INT;
        MPI_Type_create_struct(1, &bl, &disp, &ty, &t);
        add_type("struct int@8", t, MPI_INT, 0, 1);
        /* the same resized to lb 0, extent 12: data at buf + 8 + 12i */
        MPI_Type_create_struct(1, &bl, &disp, &ty, &u);
        MPI_Type_create_resized(u, 0, 12, &t);
        MPI_Type_free(&u);
        add_type("struct int@8 lb0 ext12", t, MPI_INT, 0, 0);
    }
    {   /* {int @ 4} resized to lb 0, extent 4: true_lb 4, contiguous for count > 1 (buf + 4 + 4i) */
        int bl = 1;
        MPI_Aint disp = 4;
        MPI_Datatype ty = MPI_INT;
        MPI_Type_create_struct(1, &bl, &disp, &ty, &u);
        MPI_Type_create_resized(u, 0, 4, &t);
        MPI_Type_free(&u);
        add_type("struct int@4 lb0 ext4", t, MPI_INT, 0, 1);
    }
    {   /* two float blocks with a hole: 2 @ 4, 1 @ 24 */
        int bl[2] = {2, 1};
        MPI_Aint disp[2] = {4, 24};
        MPI_Datatype ty[2] = {MPI_FLOAT, MPI_FLOAT};
        MPI_Type_create_struct(2, bl, disp, ty, &t);
        add_type("struct2(float)", t, MPI_FLOAT, 0, 0);
    }
    {   /* blocks out of memory order: 2 @ 16, 1 @ 4, 3 @ 40 */
        int bl[3] = {2, 1, 3};
        MPI_Aint disp[3] = {16, 4, 40};
        MPI_Type_create_hindexed(3, bl, disp, MPI_INT, &t);
        add_type("hindexed(int)", t, MPI_INT, 0, 1);
    }
    {   /* a negative displacement: 1 @ -16, 2 @ 8 */
        int bl[2] = {1, 2};
        MPI_Aint disp[2] = {-16, 8};
        MPI_Type_create_hindexed(2, bl, disp, MPI_DOUBLE, &t);
        add_type("hindexed neg(double)", t, MPI_DOUBLE, 0, 0);
    }
    MPI_Type_create_resized(MPI_INT, -8, 16, &t); /* lb -8, extent 16 around an int */
    add_type("resized lb-8(int)", t, MPI_INT, 0, 1);
    MPI_Type_create_hvector(4, 2, -12, MPI_INT, &t); /* blocks at 0, -12, -24, -36 */
    add_type("hvector stride-12(int)", t, MPI_INT, 0, 1);
    MPI_Type_vector(3, 1, -2, MPI_FLOAT, &t); /* floats at 0, -8, -16 */
    add_type("vector stride-2(float)", t, MPI_FLOAT, 0, 0);
    MPI_Type_create_resized(MPI_INT, -4, 12, &u); /* contiguous(2, dup(resized)) */
    MPI_Type_dup(u, &v);
    MPI_Type_contiguous(2, v, &t);
    MPI_Type_free(&u);
    MPI_Type_free(&v);
    add_type("contig2(dup(resized))", t, MPI_INT, 0, 1);
    {
        int disp[3] = {5, 0, 9};
        MPI_Type_create_indexed_block(3, 2, disp, MPI_FLOAT, &t);
        add_type("indexed_block(float)", t, MPI_FLOAT, 0, 0);
    }
    MPI_Type_vector(5, 3, 7, MPI_BYTE, &t);
    add_type("vector(byte)", t, MPI_BYTE, 0, 0);
}

/* Two sides of a move: su elements of s carry the same signature as ru of r. */
typedef struct {
    const dt_t *s, *r;
    int su, ru;
    int large;
} pair_t;

/* ---- values ---------------------------------------------------------------- */
/* Basic element j of the block that rank src sends to rank dst. Small
 * integers, exact in float and in sums of a few ranks. */
static double val(int src, int dst, size_t j)
{
    return 1 + (double)(((size_t)src * 131 + (size_t)dst * 17 + j * 7) % 1000);
}
typedef struct {
    int src, dst;
    int upto; /* > 0: the sum over src = 0..upto-1 (reductions) */
    int ones; /* the type-map mask instead of data */
} gen_t;
static gen_t one(int src, int dst) { return (gen_t){src, dst, 0, 0}; }
static gen_t sum(int upto, int dst) { return (gen_t){0, dst, upto, 0}; }

static void put_basic(enum kind k, char *p, double v)
{
    switch (k) {
    case K_INT: { int x = (int)v; memcpy(p, &x, 4); break; }
    case K_FLOAT: { float f = (float)v; memcpy(p, &f, 4); break; }
    case K_DOUBLE: memcpy(p, &v, 8); break;
    case K_BYTE: { unsigned char b = (unsigned char)((unsigned)v & 0xff); *p = (char)(b == SENTINEL ? 0x5a : b); break; }
    }
}

/* ---- memory ---------------------------------------------------------------- */

/* A buffer of `slots` elements of d: the pointer given to MPI is mem + off;
 * the allocation covers [min(0, lb, true_lb), max(end of the type map, lb +
 * slots * extent)) around it plus MARGIN bytes on both sides. img is the
 * expected content, mask marks the type map of everything written into img. */
typedef struct {
    const dt_t *d;
    size_t bytes, off;
    char *img, *mask;
    void *mem;
} buf_t;

static buf_t *buf_new(const dt_t *d, size_t slots)
{
    buf_t *b = calloc(1, sizeof *b);
    MPI_Aint lo = 0, hi = 0;
    if (d->lb < lo) lo = d->lb;
    if (d->tlb < lo) lo = d->tlb;
    if (slots) {
        MPI_Aint end = (MPI_Aint)(slots - 1) * d->extent + d->tlb + d->textent;
        MPI_Aint eend = d->lb + (MPI_Aint)slots * d->extent;
        hi = end > eend ? end : eend;
        if (hi < 0) hi = 0;
    }
    b->d = d;
    b->off = (size_t)(MARGIN - lo);
    b->bytes = (size_t)(MARGIN + (hi - lo) + MARGIN);
    b->img = malloc(b->bytes);
    b->mask = calloc(1, b->bytes);
    memset(b->img, SENTINEL, b->bytes);
    b->mem = test_mem_alloc(on_device, -1, b->bytes);
    return b;
}
static void *ptr(const buf_t *b) { return (char *)b->mem + b->off; }
static void buf_upload(const buf_t *b) { test_mem_put(on_device, b->mem, b->img, b->bytes); }
static void buf_free(buf_t *b)
{
    if (!b) return;
    test_mem_free(on_device, b->mem);
    free(b->img);
    free(b->mask);
    free(b);
}

/* Writes `count` elements of the buffer's type from element `slot` on into
 * the image: a packed stream of the generated basic values, unpacked with the
 * datatype itself (and the same with 0xff bytes into the mask). */
static void unpack_gen(const dt_t *d, char *dst, size_t count, gen_t g)
{
    size_t n = count * (size_t)d->nb;
    if (!n) return;
    char *raw = malloc(n * (size_t)d->bsize);
    if (g.ones) {
        memset(raw, 0xff, n * (size_t)d->bsize);
    } else {
        for (size_t j = 0; j < n; j++) {
            double v = 0;
            if (g.upto > 0) for (int p = 0; p < g.upto; p++) v += val(p, g.dst, j);
            else v = val(g.src, g.dst, j);
            put_basic(d->kind, raw + j * (size_t)d->bsize, v);
        }
    }
    int psize = 0, pos = 0, upos = 0;
    MPI_Pack_size((int)n, d->basic, MPI_COMM_SELF, &psize);
    char *packed = malloc((size_t)psize);
    MPI_Pack(raw, (int)n, d->basic, packed, psize, &pos, MPI_COMM_SELF);
    MPI_Unpack(packed, pos, &upos, dst, (int)count, d->t, MPI_COMM_SELF);
    free(packed);
    free(raw);
}
static void fill(buf_t *b, size_t slot, size_t count, gen_t g)
{
    MPI_Aint at = (MPI_Aint)b->off + (MPI_Aint)slot * b->d->extent;
    unpack_gen(b->d, b->img + at, count, g);
    g.ones = 1;
    unpack_gen(b->d, b->mask + at, count, g);
}

static void report(const char *what, const char *tname, size_t n, const char *msg)
{
    fprintf(stderr, "rank %d FAIL %s [%s] count %zu: %s\n", rank, what, tname, n, msg);
    failures++;
}
static int call_ok(int rc, const char *what, const char *tname, size_t n)
{
    if (rc == MPI_SUCCESS) return 1;
    char msg[MPI_MAX_ERROR_STRING + 32];
    int len = 0;
    snprintf(msg, sizeof msg, "returned %d ", rc);
    MPI_Error_string(rc, msg + strlen(msg), &len);
    checks++;
    report(what, tname, n, msg);
    return 0;
}

/* The whole allocation against the image. */
static void buf_check(const buf_t *b, const char *what, const char *role, const char *tname, size_t n)
{
    if (!b) return;
    char *h = malloc(b->bytes);
    test_mem_get(on_device, h, b->mem, b->bytes);
    checks++;
    size_t first = 0, ndiff = 0, nin = 0;
    for (size_t i = 0; i < b->bytes; i++) {
        if (h[i] != b->img[i]) {
            if (!ndiff) first = i;
            ndiff++;
            nin += b->mask[i] != 0;
        }
    }
    if (ndiff) {
        char msg[256], full[300];
        snprintf(msg, sizeof msg,
                 "%s: %zu bytes differ (%zu inside the type map, %zu outside), first at buf%+ld (%s): 0x%02x, expected 0x%02x",
                 role, ndiff, nin, ndiff - nin, (long)first - (long)b->off, b->mask[first] ? "inside" : "outside",
                 (unsigned char)h[first], (unsigned char)b->img[first]);
        snprintf(full, sizeof full, "%s", msg);
        report(what, tname, n, full);
    }
    free(h);
}

static const char *pair_name(const pair_t *pr)
{
    static char s[160];
    if (pr->s == pr->r) snprintf(s, sizeof s, "%s", pr->s->name);
    else snprintf(s, sizeof s, "%d %s -> %d %s", pr->su, pr->s->name, pr->ru, pr->r->name);
    return s;
}

/* ---- moves ----------------------------------------------------------------- */
/* Uneven counts in units, one rank (1) empty; displacements in reverse rank
 * order with a one-element gap between blocks. */
static size_t unit_count(size_t n, int p) { return n == 0 || p == 1 ? 0 : n + (size_t)(2 * p) % 3; }
static size_t layout_rev(const size_t *cnt, size_t *displ)
{
    size_t off = 0;
    for (int p = size - 1; p >= 0; p--) { displ[p] = off; off += cnt[p] + 1; }
    return off;
}

static void test_bcast(const pair_t *pr, size_t n, int root)
{
    const char *tn = pair_name(pr);
    int me = rank == root;
    const dt_t *d = me ? pr->s : pr->r;
    size_t cnt = n * (size_t)(me ? pr->su : pr->ru);
    buf_t *b = buf_new(d, cnt);
    char what[64];
    snprintf(what, sizeof what, "bcast root %d", root);
    if (me) fill(b, 0, cnt, one(root, 0));
    buf_upload(b);
    fill(b, 0, cnt, one(root, 0));
    if (call_ok(MPI_Bcast(ptr(b), (int)cnt, d->t, root, MPI_COMM_WORLD), what, tn, n))
        buf_check(b, what, "buffer", tn, n);
    buf_free(b);
}

static void test_allgather(const pair_t *pr, size_t n, int vector, int in_place)
{
    const char *tn = pair_name(pr);
    size_t u[64], rc[64], rd[64], total;
    int ic[64], id[64];
    for (int p = 0; p < size; p++) { u[p] = vector ? unit_count(n, p) : n; rc[p] = u[p] * (size_t)pr->ru; }
    if (vector) total = layout_rev(rc, rd);
    else { for (int p = 0; p < size; p++) rd[p] = (size_t)p * rc[p]; total = (size_t)size * n * (size_t)pr->ru; }
    for (int p = 0; p < size; p++) { ic[p] = (int)rc[p]; id[p] = (int)rd[p]; }
    buf_t *r = buf_new(pr->r, total), *s = NULL;
    if (in_place) fill(r, rd[rank], rc[rank], one(rank, 0));
    buf_upload(r);
    if (!in_place) {
        s = buf_new(pr->s, u[rank] * (size_t)pr->su);
        fill(s, 0, u[rank] * (size_t)pr->su, one(rank, 0));
        buf_upload(s);
    }
    for (int p = 0; p < size; p++) fill(r, rd[p], rc[p], one(p, 0));
    const void *sb = in_place ? MPI_IN_PLACE : ptr(s);
    int sc = (int)(u[rank] * (size_t)pr->su), rcode;
    if (vector) rcode = MPI_Allgatherv(sb, sc, pr->s->t, ptr(r), ic, id, pr->r->t, MPI_COMM_WORLD);
    else rcode = MPI_Allgather(sb, sc, pr->s->t, ptr(r), ic[0], pr->r->t, MPI_COMM_WORLD);
    char what[64];
    snprintf(what, sizeof what, "allgather%s%s", vector ? "v" : "", in_place ? " in place" : "");
    if (call_ok(rcode, what, tn, n)) {
        buf_check(r, what, "receive buffer", tn, n);
        buf_check(s, what, "send buffer", tn, n);
    }
    buf_free(r);
    buf_free(s);
}

/* gather(v) then scatter(v) with the same layout. */
static void test_gather_scatter(const pair_t *pr, size_t n, int root, int vector)
{
    const char *tn = pair_name(pr);
    size_t u[64], sc[64], sd[64], rc[64], rd[64], stotal, rtotal;
    int ic[64], id[64];
    for (int p = 0; p < size; p++) {
        u[p] = vector ? unit_count(n, p) : n;
        sc[p] = u[p] * (size_t)pr->su;
        rc[p] = u[p] * (size_t)pr->ru;
    }
    if (vector) { rtotal = layout_rev(rc, rd); stotal = layout_rev(sc, sd); }
    else {
        for (int p = 0; p < size; p++) { rd[p] = (size_t)p * rc[p]; sd[p] = (size_t)p * sc[p]; }
        rtotal = (size_t)size * n * (size_t)pr->ru;
        stotal = (size_t)size * n * (size_t)pr->su;
    }
    char what[64];
    int rcode;
    /* gather: S from every rank into R at the root; the root's receive
     * buffer is the only one written */
    snprintf(what, sizeof what, "gather%s root %d", vector ? "v" : "", root);
    for (int p = 0; p < size; p++) { ic[p] = (int)rc[p]; id[p] = (int)rd[p]; }
    buf_t *s = buf_new(pr->s, sc[rank]), *r = buf_new(pr->r, rtotal);
    fill(s, 0, sc[rank], one(rank, root));
    buf_upload(s);
    buf_upload(r);
    if (rank == root) for (int p = 0; p < size; p++) fill(r, rd[p], rc[p], one(p, root));
    if (vector) rcode = MPI_Gatherv(ptr(s), (int)sc[rank], pr->s->t, ptr(r), ic, id, pr->r->t, root, MPI_COMM_WORLD);
    else rcode = MPI_Gather(ptr(s), (int)sc[rank], pr->s->t, ptr(r), ic[0], pr->r->t, root, MPI_COMM_WORLD);
    if (call_ok(rcode, what, tn, n)) {
        buf_check(r, what, "receive buffer", tn, n);
        buf_check(s, what, "send buffer", tn, n);
    }
    buf_free(s);
    buf_free(r);
    /* scatter: S blocks at the root to R on every rank */
    snprintf(what, sizeof what, "scatter%s root %d", vector ? "v" : "", root);
    for (int p = 0; p < size; p++) { ic[p] = (int)sc[p]; id[p] = (int)sd[p]; }
    s = buf_new(pr->s, stotal);
    r = buf_new(pr->r, rc[rank]);
    if (rank == root) for (int p = 0; p < size; p++) fill(s, sd[p], sc[p], one(root, p));
    buf_upload(s);
    buf_upload(r);
    fill(r, 0, rc[rank], one(root, rank));
    if (vector) rcode = MPI_Scatterv(ptr(s), ic, id, pr->s->t, ptr(r), (int)rc[rank], pr->r->t, root, MPI_COMM_WORLD);
    else rcode = MPI_Scatter(ptr(s), ic[0], pr->s->t, ptr(r), (int)rc[rank], pr->r->t, root, MPI_COMM_WORLD);
    if (call_ok(rcode, what, tn, n)) {
        buf_check(r, what, "receive buffer", tn, n);
        buf_check(s, what, "send buffer", tn, n);
    }
    buf_free(s);
    buf_free(r);
}

/* alltoall: rank p's block for q carries one(p, q). alltoallv: p sends
 * c(p, q) units to q, blocks in reverse order with gaps on both sides. */
static size_t a2a_units(size_t n, int p, int q)
{
    if (n == 0 || (p + q) % 4 == 3) return 0;
    return n + (size_t)(p + 2 * q) % 3;
}
static void test_alltoall(const pair_t *pr, size_t n, int vector, int in_place)
{
    const char *tn = pair_name(pr);
    size_t sc[64], sd[64], rc[64], rd[64], stotal, rtotal;
    int isc[64], isd[64], irc[64], ird[64];
    for (int q = 0; q < size; q++) {
        sc[q] = (vector ? a2a_units(n, rank, q) : n) * (size_t)pr->su;
        rc[q] = (vector ? a2a_units(n, q, rank) : n) * (size_t)pr->ru;
    }
    if (vector) { stotal = layout_rev(sc, sd); rtotal = layout_rev(rc, rd); }
    else {
        for (int q = 0; q < size; q++) { sd[q] = (size_t)q * sc[q]; rd[q] = (size_t)q * rc[q]; }
        stotal = (size_t)size * n * (size_t)pr->su;
        rtotal = (size_t)size * n * (size_t)pr->ru;
    }
    for (int q = 0; q < size; q++) { isc[q] = (int)sc[q]; isd[q] = (int)sd[q]; irc[q] = (int)rc[q]; ird[q] = (int)rd[q]; }
    buf_t *s = NULL, *r = buf_new(pr->r, rtotal);
    if (in_place) { /* in place (same type both sides): the blocks to send sit in the receive buffer */
        for (int q = 0; q < size; q++) fill(r, rd[q], rc[q], one(rank, q));
    } else {
        s = buf_new(pr->s, stotal);
        for (int q = 0; q < size; q++) fill(s, sd[q], sc[q], one(rank, q));
        buf_upload(s);
    }
    buf_upload(r);
    for (int p = 0; p < size; p++) fill(r, rd[p], rc[p], one(p, rank));
    const void *sb = in_place ? MPI_IN_PLACE : ptr(s);
    int rcode;
    if (vector) rcode = MPI_Alltoallv(sb, isc, isd, pr->s->t, ptr(r), irc, ird, pr->r->t, MPI_COMM_WORLD);
    else rcode = MPI_Alltoall(sb, isc[0], pr->s->t, ptr(r), irc[0], pr->r->t, MPI_COMM_WORLD);
    char what[64];
    snprintf(what, sizeof what, "alltoall%s%s", vector ? "v" : "", in_place ? " in place" : "");
    if (call_ok(rcode, what, tn, n)) {
        buf_check(r, what, "receive buffer", tn, n);
        buf_check(s, what, "send buffer", tn, n);
    }
    buf_free(s);
    buf_free(r);
}

/* ---- reductions (MPI_SUM, one type on both sides) ------------------------- */
enum red { R_ALLREDUCE, R_REDUCE, R_RSB, R_RS, R_SCAN };
static void test_reduction(const dt_t *d, size_t n, enum red kind, int root, int in_place)
{
    const char *tn = d->name;
    size_t rc[64], rd[64], stotal = n, rcount = n;
    int ic[64];
    char what[64];
    if (kind == R_RSB || kind == R_RS) {
        stotal = 0;
        for (int q = 0; q < size; q++) {
            rc[q] = kind == R_RSB ? n : unit_count(n, q);
            rd[q] = stotal;
            stotal += rc[q];
            ic[q] = (int)rc[q];
        }
        rcount = rc[rank];
    }
    buf_t *s = buf_new(d, stotal), *r = NULL;
    if (kind == R_RSB || kind == R_RS) for (int q = 0; q < size; q++) fill(s, rd[q], rc[q], one(rank, q));
    else fill(s, 0, n, one(rank, 0));
    buf_upload(s);
    int ip = in_place && (kind == R_ALLREDUCE || rank == root);
    if (ip) {
        r = s;
        s = NULL;
    } else {
        r = buf_new(d, rcount);
        buf_upload(r);
    }
    int rcode = MPI_SUCCESS;
    const void *sb = ip ? MPI_IN_PLACE : ptr(s);
    switch (kind) {
    case R_ALLREDUCE:
        snprintf(what, sizeof what, "allreduce sum%s", ip ? " in place" : "");
        fill(r, 0, n, sum(size, 0));
        rcode = MPI_Allreduce(sb, ptr(r), (int)n, d->t, MPI_SUM, MPI_COMM_WORLD);
        break;
    case R_REDUCE:
        snprintf(what, sizeof what, "reduce sum root %d%s", root, ip ? " in place" : "");
        if (rank == root) fill(r, 0, n, sum(size, 0));
        rcode = MPI_Reduce(sb, ptr(r), (int)n, d->t, MPI_SUM, root, MPI_COMM_WORLD);
        break;
    case R_RSB:
        snprintf(what, sizeof what, "reduce_scatter_block sum");
        fill(r, 0, rcount, sum(size, rank));
        rcode = MPI_Reduce_scatter_block(sb, ptr(r), (int)n, d->t, MPI_SUM, MPI_COMM_WORLD);
        break;
    case R_RS:
        snprintf(what, sizeof what, "reduce_scatter sum");
        fill(r, 0, rcount, sum(size, rank));
        rcode = MPI_Reduce_scatter(sb, ptr(r), ic, d->t, MPI_SUM, MPI_COMM_WORLD);
        break;
    case R_SCAN:
        snprintf(what, sizeof what, "scan sum");
        fill(r, 0, n, sum(rank + 1, 0));
        rcode = MPI_Scan(sb, ptr(r), (int)n, d->t, MPI_SUM, MPI_COMM_WORLD);
        break;
    }
    if (call_ok(rcode, what, tn, n)) {
        buf_check(r, what, ip ? "buffer" : "receive buffer", tn, n);
        buf_check(s, what, "send buffer", tn, n);
    }
    buf_free(s);
    buf_free(r);
}

/* ---- drivers --------------------------------------------------------------- */
static void run_moves(const pair_t *pr, size_t n, int idx)
{
    int self = pr->s == pr->r;
    for (int root = 0; root < size; root++) test_bcast(pr, n, root);
    for (int v = 0; v < 2; v++) {
        for (int ip = 0; ip < 1 + self; ip++) test_allgather(pr, n, v, ip);
        for (int ip = 0; ip < 1 + (self && !v); ip++) test_alltoall(pr, n, v, ip);
        test_gather_scatter(pr, n, (int)((n + (size_t)idx + (size_t)v) % (size_t)size), v);
    }
}
static void run_reductions(const dt_t *d, size_t n)
{
    for (int ip = 0; ip < 2; ip++) {
        test_reduction(d, n, R_ALLREDUCE, 0, ip);
        test_reduction(d, n, R_REDUCE, ip ? 0 : size - 1, ip);
    }
    test_reduction(d, n, R_RSB, 0, 0);
    test_reduction(d, n, R_RS, 0, 0);
    test_reduction(d, n, R_SCAN, 0, 0);
}
/* > 4 MiB per rank and call: bcast, allgather(v), alltoall (each rank's
 * block), and the reductions that have zero-copy kernels. */
static void run_large(const pair_t *pr)
{
    size_t unit = (size_t)pr->su * (size_t)pr->s->size;
    size_t n = ((4u << 20) + (64u << 10)) / unit + 1;
    test_bcast(pr, n, 0);
    if (size > 1) test_bcast(pr, n, size - 1);
    test_allgather(pr, n, 0, 0);
    test_allgather(pr, n, 1, pr->s == pr->r);
    if (pr->s == pr->r && pr->s->reduce) {
        test_reduction(pr->s, n, R_ALLREDUCE, 0, 0);
        test_reduction(pr->s, n, R_ALLREDUCE, 0, 1);
        test_reduction(pr->s, n, R_RSB, 0, 0);
        test_reduction(pr->s, n, R_REDUCE, 0, 0);
    }
}

int main(int argc, char **argv)
{
    int mem_device = 0, list = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--mem") && i + 1 < argc) mem_device = !strcmp(argv[++i], "device");
        else if (!strcmp(argv[i], "--quick")) quick = 1;
        else if (!strcmp(argv[i], "--one-gpu")) one_gpu = 1;
        else if (!strcmp(argv[i], "--reduce-all")) reduce_all = 1; /* the types marked reduce=0 too */
        else if (!strcmp(argv[i], "--list")) list = 1;
    }
    if (size > 64) {
        if (rank == 0) fprintf(stderr, "dtype_check: at most 64 ranks\n");
        MPI_Finalize();
        return 2;
    }
    if (mem_device) {
        if (test_select_gpu(one_gpu, NULL, NULL) < 0) {
            if (rank == 0) printf("dtype_check: no GPU: skipped\n");
            MPI_Finalize();
            return 77;
        }
        on_device = 1;
    }
    /* errors come back as FAIL lines rather than aborting the run */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    build_catalogue();
    if (list && rank == 0)
        for (int i = 0; i < ncat; i++)
            printf("%-24s size %3ld lb %4ld extent %4ld true_lb %4ld true_extent %4ld%s\n", cat[i].name,
                   (long)cat[i].size, (long)cat[i].lb, (long)cat[i].extent, (long)cat[i].tlb, (long)cat[i].textent,
                   cat[i].reduce ? " (sum)" : "");

    pair_t pairs[64];
    int npairs = 0;
    for (int i = 0; i < ncat; i++) pairs[npairs++] = (pair_t){&cat[i], &cat[i], 1, 1, cat[i].large};
    /* mixed signatures: su elements of one type against ru of another */
    static const struct { const char *a, *b; int au, bu, large; } mixed[] = {
        {"contig3(int)", "int", 1, 3, 1},
        {"subarray rows(float)", "indexed_block(float)", 1, 3, 0},
        {"hvector stride-12(int)", "struct int@4 lb0 ext4", 1, 8, 1},
        {"hindexed(int)", "resized lb-8(int)", 1, 6, 0},
        {"subarray block(double)", "hindexed neg(double)", 1, 2, 0},
        {"vector(byte)", "byte", 1, 15, 0},
        {"struct int@8", "subarray fortran(int)", 4, 1, 0},
    };
    for (size_t i = 0; i < sizeof mixed / sizeof mixed[0]; i++) {
        const dt_t *a = find_type(mixed[i].a), *b = find_type(mixed[i].b);
        if (a->size * mixed[i].au != b->size * mixed[i].bu) {
            fprintf(stderr, "dtype_check: %s x %d and %s x %d differ in size\n", a->name, mixed[i].au, b->name,
                    mixed[i].bu);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        pairs[npairs++] = (pair_t){a, b, mixed[i].au, mixed[i].bu, mixed[i].large};
        pairs[npairs++] = (pair_t){b, a, mixed[i].bu, mixed[i].au, 0};
    }

    size_t counts_full[] = {0, 1, 3, 17}, counts_quick[] = {0, 1, 17};
    size_t *counts = quick ? counts_quick : counts_full;
    int ncounts = quick ? 3 : 4;
    for (int pi = 0; pi < npairs; pi++) {
        const pair_t *pr = &pairs[pi];
        for (int ci = 0; ci < ncounts; ci++) {
            run_moves(pr, counts[ci], pi);
            if (pr->s == pr->r && pr->s->reduce) run_reductions(pr->s, counts[ci]);
        }
        if (!quick && pr->large) run_large(pr);
    }
    MPI_Barrier(MPI_COMM_WORLD);

    int total_fail = 0, total_checks = 0;
    MPI_Allreduce(&failures, &total_fail, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(&checks, &total_checks, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("dtype_check (%d ranks, %s buffers): %d checks, %d failed\n", size, on_device ? "device" : "host",
               total_checks, total_fail);
    for (int i = 0; i < ncat; i++)
        if (cat[i].own) MPI_Type_free(&cat[i].t);
    MPI_Finalize();
    return total_fail ? 1 : 0;
}
