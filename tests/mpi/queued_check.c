/* What nonblocking collectives on one communicator must survive, on device
 * or host buffers, every result checked exactly (integers, and floats that
 * hold small integers, so that every sum is exact).
 *
 *   queued_check [--mem host|device] [--one-gpu] [--timeout S] [--starts N]
 *                [--free-active] [--verbose]
 *
 *   a. 16 collectives outstanding at once (Iallreduce of 1 to 2^20 elements,
 *      Ibcast from several roots, Iallgather, Ialltoall,
 *      Ireduce_scatter_block, Ireduce to several roots), completed by
 *      MPI_Waitall, by MPI_Wait in reverse order, and by MPI_Test in an order
 *      shuffled differently on every rank;
 *   b. MPI_Request_free on persistent allreduce requests (one before any
 *      start, one after two) while an Iallreduce and an Ibcast are
 *      outstanding; those, and the collectives after, still right. MPI makes
 *      freeing a nonblocking collective's request erroneous (MPI-4.0 6.12)
 *      and Open MPI's libnbc refuses it: --free-active adds that case for
 *      device buffers, to see whether the component's requests survive it;
 *   c. what a host agreement at the call would deadlock: the first rank
 *      calls MPI_Ibcast (MPI_Iallreduce), then MPI_Ssend to the second, which
 *      calls the collective only after receiving it;
 *   d. blocking and nonblocking collectives interleaved: Iallreduce,
 *      Allreduce, Ibcast, Bcast, then MPI_Waitall;
 *   e. MPI_COMM_WORLD and a dup with collectives outstanding on both,
 *      completed in the opposite order; also issued on the two in a
 *      different order on odd ranks (MPI orders collectives per communicator
 *      only);
 *   f. a 16 MiB Iallreduce completed after host work with MPI_Test now and
 *      then (nothing about time is checked);
 *   g. a persistent allreduce (MPI-4 or Open MPI's MPIX_) started N times
 *      (default 1000), the input rewritten before every start, each result
 *      checked; an Ibcast issued and completed inside every 10th start;
 *   h. persistent requests large enough to run zero-copy once every rank has
 *      mapped every other's buffers (from about the third start): allreduce,
 *      bcast, allgather, alltoall and reduce_scatter_block live at once,
 *      then more allreduces live at once than the team has slots to publish
 *      buffers in, each started 6 times with new inputs and checked, a
 *      blocking allreduce between starts;
 *   i. device buffers only: the input written by a cudaMemsetAsync on the
 *      legacy default stream right before MPI_Iallreduce / MPI_Start, with no
 *      synchronisation between (queued calls start after that stream's work:
 *      README); the results must be the memset's;
 *   j. senders that wait for nobody, ahead of a late rank: Ibcast from rank
 *      0 and Ireduce to the last rank in turn, small enough for the LL
 *      kernels, 12 issued while the last rank (a receiver of every bcast,
 *      the root of every reduce) sleeps before it issues any. Bcast's root
 *      and reduce's senders end their kernels without hearing from it, so
 *      their third call would store where their first still waits to be
 *      read unless it waits for the late rank's acknowledgement
 *      (kernels/ll_lines.cuh).
 *
 * --parts LETTERS runs only those parts (default: all).
 *
 * Each part runs under a watchdog alarm (--timeout, default 60 s): a rank
 * that checks no result for that long says "deadlock" and exits. Prints each failure with
 * its rank, exits 1 on any; 77 without a GPU in device mode. */
#define _POSIX_C_SOURCE 200809L
#include <cuda_runtime.h>
#include <mpi.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#if defined(OPEN_MPI) && MPI_VERSION < 4
#include <mpi-ext.h>
#endif

#include "test_gpu.h"
#include "test_watchdog.h"

/* Open MPI 5.0 has MPI-4's MPI_<coll>_init while it reports MPI 3.1. */
#if MPI_VERSION >= 4 || (defined(OPEN_MPI) && OMPI_MAJOR_VERSION >= 5)
#define ALLREDUCE_INIT MPI_Allreduce_init
#define PERSISTENT(name) MPI_##name##_init
#elif defined(OMPI_HAVE_MPI_EXT_PCOLLREQ)
#define ALLREDUCE_INIT MPIX_Allreduce_init
#define PERSISTENT(name) MPIX_##name##_init
#endif

static int rank, size, on_device, failures, checks;

static int timeout_s = 60; /* --timeout: the watchdog's (test_watchdog.h) */
static int verbose;        /* --verbose: each part's time at rank 0 (information only) */

/* ---- one collective: its buffers, inputs and expected output ----------------- */
enum qkind { Q_ALLREDUCE, Q_BCAST, Q_ALLGATHER, Q_ALLTOALL, Q_RSB, Q_REDUCE };
static const char *const qnames[] = {"allreduce", "bcast", "allgather", "alltoall", "reduce_scatter_block", "reduce"};

typedef struct {
    enum qkind kind;
    size_t n;      /* elements per rank (per block) */
    int root;      /* bcast, reduce */
    int flt;       /* MPI_FLOAT, else MPI_INT */
    MPI_Comm comm;
    int tag;       /* seed of the values of the current issue */
    void *s, *r;   /* device or host */
    size_t sn, rn; /* their elements */
} coll_t;

/* Rank r's input element i for seed tag: 1..97, so sums over 64 ranks are
 * exact in int and float. */
static int in_val(int tag, int r, size_t i) { return 1 + (int)(((size_t)tag * 7 + (size_t)r * 13 + i) % 97); }

static long want_val(const coll_t *c, size_t i)
{
    long sum = 0;
    switch (c->kind) {
    case Q_ALLREDUCE:
    case Q_REDUCE:
        for (int p = 0; p < size; p++) sum += in_val(c->tag, p, i);
        return sum;
    case Q_BCAST: return in_val(c->tag, c->root, i);
    case Q_ALLGATHER: return in_val(c->tag, (int)(i / c->n), i % c->n);
    case Q_ALLTOALL: return in_val(c->tag, (int)(i / c->n), (size_t)rank * c->n + i % c->n);
    case Q_RSB:
        for (int p = 0; p < size; p++) sum += in_val(c->tag, p, (size_t)rank * c->n + i);
        return sum;
    }
    return -1;
}

/* root < 0 counts from the last rank; roots past the size wrap. */
static coll_t coll_new(enum qkind kind, size_t n, int root, int flt, MPI_Comm comm)
{
    coll_t c = {kind, n, root < 0 ? size + root % size : root % size, flt, comm, 0, NULL, NULL, 0, 0};
    if (c.root < 0 || c.root >= size) c.root = 0;
    size_t all = n * (size_t)size;
    c.sn = kind == Q_BCAST ? 0 : kind == Q_ALLTOALL || kind == Q_RSB ? all : n;
    c.rn = kind == Q_ALLGATHER || kind == Q_ALLTOALL ? all : n;
    if (c.sn) c.s = test_mem_alloc(on_device, -1, c.sn * 4);
    c.r = test_mem_alloc(on_device, -1, c.rn * 4);
    return c;
}
static void coll_free(coll_t *c)
{
    if (c->s) test_mem_free(on_device, c->s);
    test_mem_free(on_device, c->r);
    c->s = c->r = NULL;
}

static void put_elems(void *dst, const int *v, size_t n, int flt)
{
    void *h = malloc(n * 4 + 16);
    if (flt)
        for (size_t i = 0; i < n; i++) ((float *)h)[i] = (float)v[i];
    else
        memcpy(h, v, n * 4);
    test_mem_put(on_device, dst, h, n * 4);
    free(h);
}

/* Writes the inputs of seed tag, and a sentinel over the output. */
static void coll_fill(coll_t *c, int tag)
{
    size_t most = c->sn > c->rn ? c->sn : c->rn;
    int *v = malloc(most * sizeof(int) + 16);
    c->tag = tag;
    if (c->sn) {
        for (size_t i = 0; i < c->sn; i++) v[i] = in_val(tag, rank, i);
        put_elems(c->s, v, c->sn, c->flt);
    }
    for (size_t i = 0; i < c->rn; i++) v[i] = c->kind == Q_BCAST && rank == c->root ? in_val(tag, rank, i) : -7;
    put_elems(c->r, v, c->rn, c->flt);
    free(v);
}

/* The nonblocking call (req) or, with req NULL, the blocking one. */
static int coll_call(coll_t *c, MPI_Request *req)
{
    MPI_Datatype t = c->flt ? MPI_FLOAT : MPI_INT;
    int n = (int)c->n;
    switch (c->kind) {
    case Q_ALLREDUCE:
        return req ? MPI_Iallreduce(c->s, c->r, n, t, MPI_SUM, c->comm, req)
                   : MPI_Allreduce(c->s, c->r, n, t, MPI_SUM, c->comm);
    case Q_BCAST: return req ? MPI_Ibcast(c->r, n, t, c->root, c->comm, req) : MPI_Bcast(c->r, n, t, c->root, c->comm);
    case Q_ALLGATHER:
        return req ? MPI_Iallgather(c->s, n, t, c->r, n, t, c->comm, req) : MPI_Allgather(c->s, n, t, c->r, n, t, c->comm);
    case Q_ALLTOALL:
        return req ? MPI_Ialltoall(c->s, n, t, c->r, n, t, c->comm, req) : MPI_Alltoall(c->s, n, t, c->r, n, t, c->comm);
    case Q_RSB:
        return req ? MPI_Ireduce_scatter_block(c->s, c->r, n, t, MPI_SUM, c->comm, req)
                   : MPI_Reduce_scatter_block(c->s, c->r, n, t, MPI_SUM, c->comm);
    case Q_REDUCE:
        return req ? MPI_Ireduce(c->s, c->r, n, t, MPI_SUM, c->root, c->comm, req)
                   : MPI_Reduce(c->s, c->r, n, t, MPI_SUM, c->root, c->comm);
    }
    return MPI_ERR_OTHER;
}

static void fail_rc(const char *part, const char *what, int rc)
{
    if (rc == MPI_SUCCESS) return;
    fprintf(stderr, "rank %d FAIL %s: %s returned %d\n", rank, part, what, rc);
    failures++;
}

static void issue(const char *part, coll_t *c, MPI_Request *req)
{
    fail_rc(part, qnames[c->kind], coll_call(c, req));
}

/* Compares the output with what the inputs of its seed give. */
static void coll_check(const char *part, const coll_t *c)
{
    if (c->kind == Q_REDUCE && rank != c->root) return;
    void *h = malloc(c->rn * 4 + 16);
    test_mem_get(on_device, h, c->r, c->rn * 4);
    checks++;
    still_moving();
    for (size_t i = 0; i < c->rn; i++) {
        long want = want_val(c, i);
        double got = c->flt ? (double)((float *)h)[i] : (double)((int *)h)[i];
        if (got != (double)want) {
            char root[24] = "";
            if (c->kind == Q_BCAST || c->kind == Q_REDUCE) snprintf(root, sizeof root, " root %d", c->root);
            fprintf(stderr, "rank %d FAIL %s: %s%s%s count %zu: element %zu is %g, expected %ld\n", rank, part,
                    qnames[c->kind], c->flt ? " float" : "", root, c->n, i, got, want);
            failures++;
            break;
        }
    }
    free(h);
}

static void wait_one(const char *part, MPI_Request *req) { fail_rc(part, "MPI_Wait", MPI_Wait(req, MPI_STATUS_IGNORE)); }

/* ---- a. many outstanding -------------------------------------------------- */
static const struct {
    enum qkind kind;
    size_t n;
    int root, flt;
} mix[] = {
    {Q_ALLREDUCE, 1, 0, 0},          {Q_BCAST, 1000, 0, 0},        {Q_ALLREDUCE, (1u << 20), 0, 0},
    {Q_ALLGATHER, 1000, 0, 0},       {Q_REDUCE, 4096, 0, 0},       {Q_ALLREDUCE, 7, 0, 1},
    {Q_BCAST, (1u << 18), -1, 0},    {Q_ALLTOALL, 100, 0, 0},      {Q_ALLREDUCE, 65537, 0, 0},
    {Q_RSB, 1000, 0, 0},             {Q_BCAST, 33, 1, 1},          {Q_ALLGATHER, 65537, 0, 1},
    {Q_ALLREDUCE, (1u << 18) + 3, 0, 1}, {Q_REDUCE, (1u << 17) + 1, -1, 0}, {Q_ALLTOALL, 1u << 15, 0, 0},
    {Q_ALLREDUCE, 1000, 0, 0},
};
enum { kMix = sizeof mix / sizeof mix[0] };

static unsigned lcg(unsigned *x)
{
    *x = *x * 1103515245u + 12345u;
    return (*x >> 16) & 0x7fff;
}

static void part_many(void)
{
    coll_t c[kMix];
    MPI_Request req[kMix];
    for (int i = 0; i < kMix; i++) c[i] = coll_new(mix[i].kind, mix[i].n, mix[i].root, mix[i].flt, MPI_COMM_WORLD);
    const char *how[] = {"a: Waitall", "a: Wait in reverse order", "a: Test loop in shuffled order"};
    for (int style = 0; style < 3; style++) {
        const char *part = how[style];
        begin_part(part);
        for (int i = 0; i < kMix; i++) coll_fill(&c[i], 10 * style + i);
        for (int i = 0; i < kMix; i++) issue(part, &c[i], &req[i]);
        if (style == 0) {
            fail_rc(part, "MPI_Waitall", MPI_Waitall(kMix, req, MPI_STATUSES_IGNORE));
            for (int i = 0; i < kMix; i++) coll_check(part, &c[i]);
        } else if (style == 1) {
            for (int i = kMix - 1; i >= 0; i--) {
                wait_one(part, &req[i]);
                coll_check(part, &c[i]); /* the others still outstanding */
            }
        } else {
            int order[kMix], done[kMix] = {0}, left = kMix;
            unsigned seed = 12345u + 977u * (unsigned)rank; /* a different order on every rank */
            for (int i = 0; i < kMix; i++) order[i] = i;
            for (int i = kMix - 1; i > 0; i--) {
                int j = (int)(lcg(&seed) % (unsigned)(i + 1)), t = order[i];
                order[i] = order[j];
                order[j] = t;
            }
            while (left > 0)
                for (int k = 0; k < kMix; k++) {
                    int i = order[k], flag = 0;
                    if (done[i]) continue;
                    fail_rc(part, "MPI_Test", MPI_Test(&req[i], &flag, MPI_STATUS_IGNORE));
                    if (flag) {
                        done[i] = 1;
                        left--;
                        coll_check(part, &c[i]);
                    }
                }
        }
        end_part();
    }
    for (int i = 0; i < kMix; i++) coll_free(&c[i]);
}

/* ---- b. requests freed ------------------------------------------------------ */
#ifdef ALLREDUCE_INIT
static int coll_init(coll_t *c, MPI_Request *req)
{
    return ALLREDUCE_INIT(c->s, c->r, (int)c->n, c->flt ? MPI_FLOAT : MPI_INT, MPI_SUM, c->comm, MPI_INFO_NULL, req);
}
#endif

static void expect_null(const char *part, MPI_Request req)
{
    checks++;
    if (req == MPI_REQUEST_NULL) return;
    fprintf(stderr, "rank %d FAIL %s: the request is not MPI_REQUEST_NULL after MPI_Request_free\n", rank, part);
    failures++;
}

/* The collectives after the freed requests on the communicator: right. */
static void later_collectives(const char *part, int tag)
{
    MPI_Request req;
    coll_t next = coll_new(Q_ALLREDUCE, 1000, 0, 0, MPI_COMM_WORLD);
    coll_t bc = coll_new(Q_BCAST, 4096, 0, 1, MPI_COMM_WORLD);
    coll_t blocking = coll_new(Q_ALLREDUCE, 65537, 0, 0, MPI_COMM_WORLD);
    coll_fill(&next, tag);
    coll_fill(&bc, tag + 1);
    coll_fill(&blocking, tag + 2);
    issue(part, &next, &req);
    wait_one(part, &req);
    coll_check(part, &next);
    issue(part, &bc, &req);
    wait_one(part, &req);
    coll_check(part, &bc);
    issue(part, &blocking, NULL);
    coll_check(part, &blocking);
    coll_free(&next);
    coll_free(&bc);
    coll_free(&blocking);
}

/* MPI allows MPI_Request_free only on inactive persistent collective
 * requests (on a nonblocking collective's it is erroneous, and Open MPI's
 * libnbc refuses it): one freed before its first start, one after two,
 * both while nonblocking collectives are outstanding on the communicator. */
static void part_request_free(void)
{
    const char *part = "b: persistent requests freed while nonblocking ones are outstanding";
    begin_part(part);
    MPI_Request rx, ry;
    coll_t x = coll_new(Q_ALLREDUCE, 65537, 0, 0, MPI_COMM_WORLD);
    coll_t y = coll_new(Q_BCAST, 1000, -1, 0, MPI_COMM_WORLD);
    coll_fill(&x, 40);
    coll_fill(&y, 41);
    issue(part, &x, &rx);
    issue(part, &y, &ry);
#ifdef ALLREDUCE_INIT
    coll_t p = coll_new(Q_ALLREDUCE, 1000, 0, 1, MPI_COMM_WORLD);
    MPI_Request rp, unused;
    fail_rc(part, "allreduce init", coll_init(&p, &unused));
    fail_rc(part, "MPI_Request_free", MPI_Request_free(&unused));
    expect_null(part, unused);
    fail_rc(part, "allreduce init", coll_init(&p, &rp));
    for (int s = 0; s < 2; s++) {
        coll_fill(&p, 42 + s);
        fail_rc(part, "MPI_Start", MPI_Start(&rp));
        wait_one(part, &rp);
        coll_check(part, &p);
    }
    fail_rc(part, "MPI_Request_free", MPI_Request_free(&rp));
    expect_null(part, rp);
    coll_free(&p);
#endif
    wait_one(part, &ry);
    coll_check(part, &y);
    wait_one(part, &rx);
    coll_check(part, &x);
    coll_free(&x);
    coll_free(&y);
    later_collectives(part, 44);
    end_part();
}

/* --free-active: MPI_Request_free right after issuing nonblocking
 * collectives. Erroneous MPI (MPI-3.1 5.12, MPI-4.0 6.12), so not run by
 * default: it asks whether the component's own requests survive it. Device
 * buffers only (libnbc returns MPI_ERR_REQUEST on host ones). The freed
 * calls' buffers are released only after MPI_Finalize: nothing else tells
 * when they are done. */
static int free_active;
static coll_t freed[3];

static void part_free_active(void)
{
    const char *part = "b': MPI_Request_free on active nonblocking collectives (--free-active)";
    if (!free_active) return;
    if (!on_device) {
        if (rank == 0) printf("queued_check: %s: device buffers only: skipped\n", part);
        return;
    }
    begin_part(part);
    MPI_Request req;
    freed[0] = coll_new(Q_ALLREDUCE, 65537, 0, 0, MPI_COMM_WORLD);
    freed[1] = coll_new(Q_BCAST, 1000, -1, 0, MPI_COMM_WORLD);
    freed[2] = coll_new(Q_ALLREDUCE, 5, 0, 1, MPI_COMM_WORLD);
    for (int i = 0; i < 3; i++) {
        coll_fill(&freed[i], 46 + i);
        issue(part, &freed[i], &req);
        fail_rc(part, "MPI_Request_free", MPI_Request_free(&req));
        expect_null(part, req);
    }
    later_collectives(part, 49);
    MPI_Barrier(MPI_COMM_WORLD);
    cudaDeviceSynchronize();
    end_part();
}

/* ---- c. a point-to-point message between the calls ----------------------------- */
static void part_p2p_between(void)
{
    if (size < 2) return;
    for (int v = 0; v < 8; v++) {
        int is_bcast = v & 1;
        size_t n = v & 2 ? (1u << 18) : 1000;
        int first = v & 4 ? 1 : 0, second = 1 - first; /* first calls, then sends to second */
        char part[96];
        snprintf(part, sizeof part, "c: I%s %zu, rank %d calls then Ssends to rank %d", is_bcast ? "bcast" : "allreduce",
                 n, first, second);
        begin_part(part);
        coll_t c = coll_new(is_bcast ? Q_BCAST : Q_ALLREDUCE, n, first, 0, MPI_COMM_WORLD);
        coll_fill(&c, 50 + v);
        MPI_Request req;
        int token = 1000 + v, got = -1;
        if (rank == first) {
            issue(part, &c, &req);
            fail_rc(part, "MPI_Ssend", MPI_Ssend(&token, 1, MPI_INT, second, 77, MPI_COMM_WORLD));
        } else if (rank == second) {
            fail_rc(part, "MPI_Recv", MPI_Recv(&got, 1, MPI_INT, first, 77, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            checks++;
            if (got != token) {
                fprintf(stderr, "rank %d FAIL %s: received %d, expected %d\n", rank, part, got, token);
                failures++;
            }
            issue(part, &c, &req);
        } else {
            issue(part, &c, &req);
        }
        wait_one(part, &req);
        coll_check(part, &c);
        coll_free(&c);
        end_part();
    }
}

/* ---- d. blocking and nonblocking interleaved ----------------------------------- */
static void part_interleaved(void)
{
    const char *part = "d: Iallreduce, Allreduce, Ibcast, Bcast, Waitall";
    begin_part(part);
    for (int big = 0; big < 2; big++) { /* the large calls nonblocking, then blocking */
        size_t large = 65537, small = 1000;
        coll_t a = coll_new(Q_ALLREDUCE, big ? small : large, 0, 0, MPI_COMM_WORLD);
        coll_t b = coll_new(Q_ALLREDUCE, big ? large : small, 0, 1, MPI_COMM_WORLD);
        coll_t c = coll_new(Q_BCAST, big ? small : large, -1, 0, MPI_COMM_WORLD);
        coll_t d = coll_new(Q_BCAST, big ? large : small, 0, 0, MPI_COMM_WORLD);
        MPI_Request req[2];
        coll_fill(&a, 60 + 4 * big);
        coll_fill(&b, 61 + 4 * big);
        coll_fill(&c, 62 + 4 * big);
        coll_fill(&d, 63 + 4 * big);
        issue(part, &a, &req[0]);
        issue(part, &b, NULL);
        issue(part, &c, &req[1]);
        issue(part, &d, NULL);
        fail_rc(part, "MPI_Waitall", MPI_Waitall(2, req, MPI_STATUSES_IGNORE));
        coll_check(part, &a);
        coll_check(part, &b);
        coll_check(part, &c);
        coll_check(part, &d);
        coll_free(&a);
        coll_free(&b);
        coll_free(&c);
        coll_free(&d);
    }
    end_part();
}

/* ---- e. two communicators ------------------------------------------------------ */
static void part_two_comms(void)
{
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    for (int odd_first = 0; odd_first < 2; odd_first++) {
        const char *part = odd_first ? "e: two communicators, odd ranks issue on the dup first"
                                     : "e: two communicators, completed in the opposite order";
        begin_part(part);
        coll_t w1 = coll_new(Q_ALLREDUCE, 65537, 0, 0, MPI_COMM_WORLD);
        coll_t w2 = coll_new(Q_BCAST, 1000, 0, 0, MPI_COMM_WORLD);
        coll_t d1 = coll_new(Q_ALLREDUCE, 1000, 0, 1, dup);
        coll_t d2 = coll_new(Q_ALLGATHER, 4096, 0, 0, dup);
        MPI_Request rw1, rw2, rd1, rd2;
        coll_fill(&w1, 70 + 4 * odd_first);
        coll_fill(&w2, 71 + 4 * odd_first);
        coll_fill(&d1, 72 + 4 * odd_first);
        coll_fill(&d2, 73 + 4 * odd_first);
        if (odd_first && rank % 2) { /* each communicator's own order is the same on every rank */
            issue(part, &d1, &rd1);
            issue(part, &w1, &rw1);
            issue(part, &d2, &rd2);
            issue(part, &w2, &rw2);
        } else {
            issue(part, &w1, &rw1);
            issue(part, &d1, &rd1);
            issue(part, &w2, &rw2);
            issue(part, &d2, &rd2);
        }
        wait_one(part, &rd2);
        coll_check(part, &d2);
        wait_one(part, &rw2);
        coll_check(part, &w2);
        wait_one(part, &rd1);
        coll_check(part, &d1);
        wait_one(part, &rw1);
        coll_check(part, &w1);
        coll_free(&w1);
        coll_free(&w2);
        coll_free(&d1);
        coll_free(&d2);
        end_part();
    }
    MPI_Comm_free(&dup);
}

/* ---- f. host work while one is outstanding ----------------------------------- */
static void part_overlap(void)
{
    const char *part = "f: 16 MiB Iallreduce with host work and MPI_Test";
    begin_part(part);
    coll_t c = coll_new(Q_ALLREDUCE, (16u << 20) / 4, 0, 0, MPI_COMM_WORLD);
    coll_fill(&c, 80);
    MPI_Request req;
    issue(part, &c, &req);
    enum { kWork = 1 << 16 };
    double *work = malloc(kWork * sizeof(double));
    for (int i = 0; i < kWork; i++) work[i] = i;
    volatile double sink = 0;
    int flag = 0, tests = 0, seen_at = -1;
    for (int round = 0; round < 200; round++) {
        double acc = 0;
        for (int i = 0; i < kWork; i++) acc += work[i] * 1.0000001;
        sink += acc;
        if (!flag && round % 10 == 0) {
            fail_rc(part, "MPI_Test", MPI_Test(&req, &flag, MPI_STATUS_IGNORE));
            tests++;
            if (flag) seen_at = tests;
        }
    }
    if (!flag) wait_one(part, &req);
    coll_check(part, &c);
    (void)sink;
    free(work);
    coll_free(&c);
    if (rank == 0) {
        if (seen_at > 0) printf("queued_check: f: MPI_Test saw the 16 MiB allreduce done at test %d (info only)\n", seen_at);
        else printf("queued_check: f: completed in MPI_Wait after %d tests (info only)\n", tests);
    }
    end_part();
}

/* ---- g. one persistent request, started again and again ------------------------- */
static int part_persistent(int starts)
{
#ifndef ALLREDUCE_INIT
    (void)starts;
    if (rank == 0) printf("queued_check: g: no persistent collectives in this MPI: skipped\n");
    return 0;
#else
    const char *part = "g: persistent allreduce, input rewritten before every start";
    begin_part(part);
    coll_t c = coll_new(Q_ALLREDUCE, 1024, 0, 0, MPI_COMM_WORLD);
    coll_t side = coll_new(Q_BCAST, 777, 1, 0, MPI_COMM_WORLD);
    int *v = malloc(c.n * sizeof(int));
    MPI_Request req, sreq;
    fail_rc(part, "allreduce init", coll_init(&c, &req));
    for (int s = 0; s < starts; s++) {
        /* new input only (no sentinel): each start's sums differ from the last's */
        c.tag = 100 + s;
        for (size_t i = 0; i < c.n; i++) v[i] = in_val(c.tag, rank, i);
        test_mem_put(on_device, c.s, v, c.n * sizeof(int));
        fail_rc(part, "MPI_Start", MPI_Start(&req));
        if (s % 10 == 9) { /* a nonblocking call while the persistent one is active, completed first */
            coll_fill(&side, 100 + s);
            issue(part, &side, &sreq);
            wait_one(part, &sreq);
            coll_check(part, &side);
        }
        wait_one(part, &req);
        coll_check(part, &c);
    }
    fail_rc(part, "MPI_Request_free", MPI_Request_free(&req));
    free(v);
    coll_free(&c);
    coll_free(&side);
    end_part();
    return 1;
#endif
}

/* ---- h. persistent requests that go zero-copy ------------------------------------ */
#ifdef PERSISTENT
static int persistent_init(coll_t *c, MPI_Request *req)
{
    MPI_Datatype t = c->flt ? MPI_FLOAT : MPI_INT;
    int n = (int)c->n;
    switch (c->kind) {
    case Q_ALLREDUCE: return PERSISTENT(Allreduce)(c->s, c->r, n, t, MPI_SUM, c->comm, MPI_INFO_NULL, req);
    case Q_BCAST: return PERSISTENT(Bcast)(c->r, n, t, c->root, c->comm, MPI_INFO_NULL, req);
    case Q_ALLGATHER: return PERSISTENT(Allgather)(c->s, n, t, c->r, n, t, c->comm, MPI_INFO_NULL, req);
    case Q_ALLTOALL: return PERSISTENT(Alltoall)(c->s, n, t, c->r, n, t, c->comm, MPI_INFO_NULL, req);
    case Q_RSB: return PERSISTENT(Reduce_scatter_block)(c->s, c->r, n, t, MPI_SUM, c->comm, MPI_INFO_NULL, req);
    case Q_REDUCE: return PERSISTENT(Reduce)(c->s, c->r, n, t, MPI_SUM, c->root, c->comm, MPI_INFO_NULL, req);
    }
    return MPI_ERR_OTHER;
}

/* Starts every request of the set `starts` times, new inputs each time,
 * waits in reverse order and checks; a blocking allreduce after start 3. */
static void run_set(const char *part, coll_t *c, int n, int starts)
{
    MPI_Request *req = malloc((size_t)n * sizeof *req);
    coll_t blocking = coll_new(Q_ALLREDUCE, (8u << 20) / 4, 0, 1, MPI_COMM_WORLD);
    for (int i = 0; i < n; i++) fail_rc(part, "persistent init", persistent_init(&c[i], &req[i]));
    for (int s = 0; s < starts; s++) {
        for (int i = 0; i < n; i++) {
            coll_fill(&c[i], 200 + 10 * s + i);
            fail_rc(part, "MPI_Start", MPI_Start(&req[i]));
        }
        for (int i = n - 1; i >= 0; i--) wait_one(part, &req[i]);
        for (int i = 0; i < n; i++) coll_check(part, &c[i]);
        if (s == 3) {
            coll_fill(&blocking, 300 + s);
            issue(part, &blocking, NULL);
            coll_check(part, &blocking);
        }
    }
    for (int i = 0; i < n; i++) fail_rc(part, "MPI_Request_free", MPI_Request_free(&req[i]));
    coll_free(&blocking);
    free(req);
}
#endif

static int part_persistent_zero_copy(void)
{
#ifndef PERSISTENT
    if (rank == 0) printf("queued_check: h: no persistent collectives in this MPI: skipped\n");
    return 0;
#else
    const char *part = "h: persistent requests that go zero-copy";
    begin_part(part);
    /* At or above the default direct_min_bytes (4 MiB) each. */
    coll_t kinds[] = {
        coll_new(Q_ALLREDUCE, (8u << 20) / 4, 0, 1, MPI_COMM_WORLD),
        coll_new(Q_BCAST, (16u << 20) / 4, -1, 0, MPI_COMM_WORLD),
        coll_new(Q_ALLGATHER, (4u << 20) / 4, 0, 0, MPI_COMM_WORLD),
        coll_new(Q_ALLTOALL, (4u << 20) / 4, 0, 0, MPI_COMM_WORLD),
        coll_new(Q_RSB, (4u << 20) / 4, 0, 1, MPI_COMM_WORLD),
    };
    enum { kKinds = sizeof kinds / sizeof kinds[0] };
    run_set(part, kinds, kKinds, 6);
    for (int i = 0; i < kKinds; i++) coll_free(&kinds[i]);
    enum { kMany = 10 }; /* more than the team's publishing slots (8) */
    coll_t many[kMany];
    for (int i = 0; i < kMany; i++) many[i] = coll_new(Q_ALLREDUCE, (4u << 20) / 4, 0, i & 1, MPI_COMM_WORLD);
    run_set(part, many, kMany, 6);
    for (int i = 0; i < kMany; i++) coll_free(&many[i]);
    end_part();
    return 1;
#endif
}

/* ---- i. ordered after the legacy default stream -------------------------------- */
static void part_after_default_stream(void)
{
    const char *part = "i: input written on the legacy default stream just before the call";
    if (!on_device) return;
    begin_part(part);
    const size_t n = (32u << 20) / 4;
    const long want = (long)size * 0x01010101L; /* every byte 1: an int of 0x01010101 per rank */
    coll_t c = coll_new(Q_ALLREDUCE, n, 0, 0, MPI_COMM_WORLD);
    MPI_Request req;
#ifdef PERSISTENT
    MPI_Request preq;
    fail_rc(part, "persistent init", persistent_init(&c, &preq));
#endif
    int *h = malloc(n * sizeof(int));
    for (int round = 0; round < 6; round++) {
        coll_fill(&c, 400 + round); /* synchronous: other values first */
        cudaMemsetAsync(c.s, 1, n * sizeof(int), 0);
#ifdef PERSISTENT
        if (round & 1) {
            fail_rc(part, "MPI_Start", MPI_Start(&preq));
            wait_one(part, &preq);
        } else
#endif
        {
            issue(part, &c, &req);
            wait_one(part, &req);
        }
        test_mem_get(on_device, h, c.r, n * sizeof(int));
        checks++;
        still_moving();
        for (size_t i = 0; i < n; i++)
            if (h[i] != want) {
                fprintf(stderr, "rank %d FAIL %s: round %d element %zu is %d, expected %ld\n", rank, part, round, i,
                        h[i], want);
                failures++;
                break;
            }
    }
#ifdef PERSISTENT
    fail_rc(part, "MPI_Request_free", MPI_Request_free(&preq));
#endif
    free(h);
    coll_free(&c);
    end_part();
}

/* ---- j. one-way senders ahead of a late rank (see the top) ---------------- */
static void part_one_way_ahead(void)
{
    enum { kAhead = 12 };
    const char *part = "j: one-way senders ahead of a late rank";
    begin_part(part);
    coll_t c[kAhead];
    MPI_Request req[kAhead];
    for (int i = 0; i < kAhead; i++) {
        c[i] = coll_new(i % 2 ? Q_REDUCE : Q_BCAST, (size_t)(1 + i * 37), i % 2 ? -1 : 0, i % 3 == 0, MPI_COMM_WORLD);
        coll_fill(&c[i], 100 + i);
    }
    if (rank == size - 1) {
        const struct timespec late = {0, 200 * 1000 * 1000}; /* usleep is not POSIX 2008 */
        nanosleep(&late, NULL);
    }
    for (int i = 0; i < kAhead; i++) issue(part, &c[i], &req[i]);
    fail_rc(part, "MPI_Waitall", MPI_Waitall(kAhead, req, MPI_STATUSES_IGNORE));
    for (int i = 0; i < kAhead; i++) {
        coll_check(part, &c[i]);
        coll_free(&c[i]);
    }
    end_part();
}

int main(int argc, char **argv)
{
    int one_gpu = 0, starts = 1000;
    const char *mem = "host", *parts = "abcdefghij";
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--mem") && i + 1 < argc) mem = argv[++i];
        else if (!strcmp(argv[i], "--one-gpu")) one_gpu = 1;
        else if (!strcmp(argv[i], "--timeout") && i + 1 < argc) timeout_s = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--starts") && i + 1 < argc) starts = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--free-active")) free_active = 1;
        else if (!strcmp(argv[i], "--verbose")) verbose = 1;
        else if (!strcmp(argv[i], "--parts") && i + 1 < argc) parts = argv[++i];
    }
    on_device = !strcmp(mem, "device");
    if (size > 64) MPI_Abort(MPI_COMM_WORLD, 2);
    if (on_device && test_select_gpu(one_gpu, NULL, NULL) < 0) {
        if (rank == 0) printf("queued_check: no GPU: skipped\n");
        MPI_Finalize();
        return 77;
    }
    watchdog_init("queued_check", rank, timeout_s, verbose);
    /* Sets coll/gpu's GPU path up, as a blocking device collective would:
     * nonblocking calls take the GPU only once it is (README). */
    MPI_Barrier(MPI_COMM_WORLD);
    if (strchr(parts, 'a')) part_many();
    if (strchr(parts, 'b')) part_request_free();
    if (strchr(parts, 'b')) part_free_active();
    if (strchr(parts, 'c')) part_p2p_between();
    if (strchr(parts, 'd')) part_interleaved();
    if (strchr(parts, 'e')) part_two_comms();
    if (strchr(parts, 'f')) part_overlap();
    int persistent = strchr(parts, 'g') ? part_persistent(starts) : 1;
    if (strchr(parts, 'h')) persistent &= part_persistent_zero_copy();
    if (strchr(parts, 'i')) part_after_default_stream();
    if (strchr(parts, 'j')) part_one_way_ahead();

    int total[2] = {0, 0}, mine[2] = {checks, failures};
    MPI_Allreduce(mine, total, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("queued_check (%d ranks, %s buffers%s): %d checks, %d failed\n", size, on_device ? "device" : "host",
               persistent ? "" : ", no persistent part", total[0], total[1]);
    MPI_Finalize();
    for (int i = 0; i < 3; i++) coll_free(&freed[i]);
    return total[1] ? 1 : 0;
}
