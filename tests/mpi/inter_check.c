/* Collectives on an intercommunicator, on host or device buffers, every
 * element checked.
 *
 *   inter_check [--mem host|device] [--one-gpu]
 *
 * MPI_COMM_WORLD is split into a lower and an upper half (of different
 * sizes at odd rank counts) joined by MPI_Intercomm_create. Every kind MPI
 * defines there with data (bcast, gather(v), scatter(v), allgather(v),
 * alltoall(v,w), allreduce, reduce, reduce_scatter(_block)), blocking,
 * nonblocking and persistent (two starts with new inputs), the rooted ones
 * with the root in either group: its rank passes MPI_ROOT, the rest of its
 * group MPI_PROC_NULL (whose buffers must stay untouched). Counts are uneven
 * in the v and w kinds, with gaps between blocks that must keep their
 * poison. MPI_IN_PLACE, which MPI does not define there, must give an
 * error. Exit 77 below 2 ranks, or without a GPU in device mode. */
#include <cuda_runtime.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_forms.h"
#include "test_gpu.h"

enum { kPoison = -1, kMaxRanks = 64 };
enum kind { K_BCAST, K_GATHER, K_GATHERV, K_SCATTER, K_SCATTERV, K_ALLGATHER, K_ALLGATHERV, K_ALLTOALL,
            K_ALLTOALLV, K_ALLTOALLW, K_ALLREDUCE, K_REDUCE, K_REDUCE_SCATTER, K_REDUCE_SCATTER_BLOCK, K_KINDS };
enum form { F_BLOCKING, F_NONBLOCKING, F_PERSISTENT, F_FORMS };
static const char *kind_names[K_KINDS] = {"bcast", "gather", "gatherv", "scatter", "scatterv", "allgather",
                                          "allgatherv", "alltoall", "alltoallv", "alltoallw", "allreduce", "reduce",
                                          "reduce_scatter", "reduce_scatter_block"};
static const char *form_names[F_FORMS] = {"blocking", "nonblocking", "persistent"};

static MPI_Comm inter;
static int on_device, failures, checks;
static int me, group, L, R; /* local rank, 0 lower / 1 upper half, local and remote group sizes */

/* An element sent by rank `s` of group `g` towards remote rank `to`, start `st`, index i. */
static int enc(int g, int s, int to, int st, int i) { return (((g * 64 + s) * 64 + to) * 8 + st) * 1024 + (i & 1023); }
/* An input of the reductions: small enough that a sum of 64 fits. */
static int red(int g, int s, int st, int i) { return (g + 1) * 100000 + s * 1000 + st * 100 + i % 97; }
/* Elements on the edge s -> d of the v and w kinds: uneven, alike at both ends. */
static int edge(int n, int s, int d) { return n + (s + d) % 3; }

typedef struct {
    int *send, *recv, *hsend, *hrecv;
    size_t send_n, recv_n;
    int scounts[kMaxRanks], sdispls[kMaxRanks], rcounts[kMaxRanks], rdispls[kMaxRanks];
    int sbytes[kMaxRanks], rbytes[kMaxRanks];
    MPI_Datatype types[kMaxRanks];
    int scount, rcount, root; /* root: MPI_ROOT, MPI_PROC_NULL or a remote rank */
} call_t;

static void fail(enum kind k, enum form f, int rootg, const char *what, size_t i, int got, int want)
{
    if (failures++ < 20)
        fprintf(stderr, "group %d rank %d: FAIL %s %s (root in group %d): element %zu: %s: got %d, expected %d\n",
                group, me, form_names[f], kind_names[k], rootg, i, what, got, want);
}

/* Blocks of `counts` laid out with a gap of 2 after each; returns the total. */
static size_t lay_out(int *counts, int *displs, int *bytes, int n)
{
    size_t at = 0;
    for (int i = 0; i < n; i++) {
        displs[i] = (int)at;
        bytes[i] = (int)(at * sizeof(int));
        at += (size_t)counts[i] + 2;
    }
    return at;
}

/* Buffer sizes, counts and this rank's role for kind k with n elements per
 * block and the root (if any) rank 0 of group rootg. */
static void setup(call_t *c, enum kind k, int n, int rootg)
{
    memset(c, 0, sizeof *c);
    for (int i = 0; i < kMaxRanks; i++) c->types[i] = MPI_INT;
    c->root = group == rootg ? (me == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0;
    const int is_root = c->root == MPI_ROOT;
    c->scount = c->rcount = n;
    switch (k) {
    case K_BCAST: c->send_n = 0, c->recv_n = (size_t)n; break;
    case K_GATHER: c->send_n = (size_t)n, c->recv_n = is_root ? (size_t)n * R : 0; break;
    case K_SCATTER: c->send_n = is_root ? (size_t)n * R : 0, c->recv_n = (size_t)n; break;
    case K_GATHERV:
        c->scount = edge(n, me, 0);
        c->send_n = (size_t)c->scount;
        for (int j = 0; j < R; j++) c->rcounts[j] = edge(n, j, 0);
        c->recv_n = is_root ? lay_out(c->rcounts, c->rdispls, c->rbytes, R) : 0;
        break;
    case K_SCATTERV:
        c->rcount = edge(n, 0, me);
        c->recv_n = (size_t)c->rcount;
        for (int j = 0; j < R; j++) c->scounts[j] = edge(n, 0, j);
        c->send_n = is_root ? lay_out(c->scounts, c->sdispls, c->sbytes, R) : 0;
        break;
    case K_ALLGATHER: c->send_n = (size_t)n, c->recv_n = (size_t)n * R; break;
    case K_ALLGATHERV:
        c->scount = edge(n, me, 0);
        c->send_n = (size_t)c->scount;
        for (int j = 0; j < R; j++) c->rcounts[j] = edge(n, j, 0);
        c->recv_n = lay_out(c->rcounts, c->rdispls, c->rbytes, R);
        break;
    case K_ALLTOALL: c->send_n = (size_t)n * R, c->recv_n = (size_t)n * R; break;
    case K_ALLTOALLV:
    case K_ALLTOALLW:
        for (int j = 0; j < R; j++) c->scounts[j] = edge(n, me, j), c->rcounts[j] = edge(n, j, me);
        c->send_n = lay_out(c->scounts, c->sdispls, c->sbytes, R);
        c->recv_n = lay_out(c->rcounts, c->rdispls, c->rbytes, R);
        break;
    case K_ALLREDUCE: c->send_n = c->recv_n = (size_t)n; break;
    case K_REDUCE: c->send_n = (size_t)n, c->recv_n = is_root ? (size_t)n : 0; break;
    case K_REDUCE_SCATTER: { /* both groups scatter the same total over their own ranks */
        const int total = n * 6;
        for (int i = 0; i < L; i++) c->rcounts[i] = total / L + (i < total % L);
        c->send_n = (size_t)total, c->recv_n = (size_t)c->rcounts[me];
        break;
    }
    case K_REDUCE_SCATTER_BLOCK: /* L x rcount equal in both groups */
        c->rcount = R * (n / 4 + 1);
        c->send_n = (size_t)L * c->rcount, c->recv_n = (size_t)c->rcount;
        break;
    default: break;
    }
    c->send = test_mem_alloc(on_device, -1, (c->send_n + 1) * sizeof(int));
    c->recv = test_mem_alloc(on_device, -1, (c->recv_n + 1) * sizeof(int));
    c->hsend = malloc((c->send_n + 1) * sizeof(int));
    c->hrecv = malloc((c->recv_n + 1) * sizeof(int));
}

static void fill(call_t *c, enum kind k, int n, int st)
{
    const int is_root = c->root == MPI_ROOT;
    for (size_t i = 0; i < c->send_n; i++) c->hsend[i] = kPoison;
    for (size_t i = 0; i < c->recv_n; i++) c->hrecv[i] = kPoison;
    switch (k) {
    case K_BCAST:
        if (is_root)
            for (int i = 0; i < n; i++) c->hrecv[i] = enc(group, me, 0, st, i);
        break;
    case K_SCATTER:
    case K_ALLTOALL:
        for (int j = 0; j < R && (k == K_ALLTOALL || is_root); j++)
            for (int i = 0; i < n; i++) c->hsend[(size_t)j * n + i] = enc(group, me, j, st, i);
        break;
    case K_SCATTERV:
    case K_ALLTOALLV:
    case K_ALLTOALLW:
        for (int j = 0; j < R && (k != K_SCATTERV || is_root); j++)
            for (int i = 0; i < c->scounts[j]; i++) c->hsend[c->sdispls[j] + i] = enc(group, me, j, st, i);
        break;
    case K_ALLREDUCE:
    case K_REDUCE:
    case K_REDUCE_SCATTER:
    case K_REDUCE_SCATTER_BLOCK:
        for (size_t i = 0; i < c->send_n; i++) c->hsend[i] = red(group, me, st, (int)i);
        break;
    default: /* gather(v), allgather(v): one block */
        for (size_t i = 0; i < c->send_n; i++) c->hsend[i] = enc(group, me, 0, st, (int)i);
        break;
    }
    test_mem_put(on_device, c->send, c->hsend, c->send_n * sizeof(int));
    test_mem_put(on_device, c->recv, c->hrecv, c->recv_n * sizeof(int));
}

/* Sum over the remote group of their element i. */
static int remote_sum(int st, int i)
{
    int s = 0;
    for (int r = 0; r < R; r++) s += red(1 - group, r, st, i);
    return s;
}

static void verify(call_t *c, enum kind k, enum form f, int n, int st, int rootg)
{
    test_mem_get(on_device, c->hrecv, c->recv, c->recv_n * sizeof(int));
    int *want = malloc((c->recv_n + 1) * sizeof(int));
    for (size_t i = 0; i < c->recv_n; i++) want[i] = kPoison;
    const int g = 1 - group, receives = c->root != MPI_PROC_NULL;
    switch (k) {
    case K_BCAST:
        if (c->root != MPI_ROOT && receives)
            for (int i = 0; i < n; i++) want[i] = enc(g, 0, 0, st, i);
        if (c->root == MPI_ROOT)
            for (int i = 0; i < n; i++) want[i] = enc(group, me, 0, st, i);
        break;
    case K_GATHER:
    case K_ALLGATHER:
        for (int j = 0; j < R && c->recv_n; j++)
            for (int i = 0; i < n; i++) want[(size_t)j * n + i] = enc(g, j, 0, st, i);
        break;
    case K_GATHERV:
    case K_ALLGATHERV:
        for (int j = 0; j < R && c->recv_n; j++)
            for (int i = 0; i < c->rcounts[j]; i++) want[c->rdispls[j] + i] = enc(g, j, 0, st, i);
        break;
    case K_SCATTER:
    case K_SCATTERV:
        if (c->root >= 0)
            for (int i = 0; i < c->rcount; i++) want[i] = enc(g, 0, me, st, i);
        break;
    case K_ALLTOALL:
        for (int j = 0; j < R; j++)
            for (int i = 0; i < n; i++) want[(size_t)j * n + i] = enc(g, j, me, st, i);
        break;
    case K_ALLTOALLV:
    case K_ALLTOALLW:
        for (int j = 0; j < R; j++)
            for (int i = 0; i < c->rcounts[j]; i++) want[c->rdispls[j] + i] = enc(g, j, me, st, i);
        break;
    case K_ALLREDUCE:
    case K_REDUCE:
        for (size_t i = 0; i < c->recv_n; i++) want[i] = remote_sum(st, (int)i);
        break;
    case K_REDUCE_SCATTER: {
        int off = 0;
        for (int i = 0; i < me; i++) off += c->rcounts[i];
        for (size_t i = 0; i < c->recv_n; i++) want[i] = remote_sum(st, off + (int)i);
        break;
    }
    case K_REDUCE_SCATTER_BLOCK:
        for (size_t i = 0; i < c->recv_n; i++) want[i] = remote_sum(st, me * c->rcount + (int)i);
        break;
    default: break;
    }
    for (size_t i = 0; i < c->recv_n; i++, checks++)
        if (c->hrecv[i] != want[i]) fail(k, f, rootg, want[i] == kPoison ? "must stay untouched" : "wrong value", i,
                                         c->hrecv[i], want[i]);
    free(want);
}

static int post(call_t *c, enum kind k, enum form f, int n, MPI_Request *q)
{
    void *s = c->send, *r = c->recv;
    MPI_Comm m = inter;
    const int rt = c->root;
    if (f == F_BLOCKING) switch (k) {
        case K_BCAST: return MPI_Bcast(r, n, MPI_INT, rt, m);
        case K_GATHER: return MPI_Gather(s, n, MPI_INT, r, n, MPI_INT, rt, m);
        case K_GATHERV: return MPI_Gatherv(s, c->scount, MPI_INT, r, c->rcounts, c->rdispls, MPI_INT, rt, m);
        case K_SCATTER: return MPI_Scatter(s, n, MPI_INT, r, n, MPI_INT, rt, m);
        case K_SCATTERV: return MPI_Scatterv(s, c->scounts, c->sdispls, MPI_INT, r, c->rcount, MPI_INT, rt, m);
        case K_ALLGATHER: return MPI_Allgather(s, n, MPI_INT, r, n, MPI_INT, m);
        case K_ALLGATHERV: return MPI_Allgatherv(s, c->scount, MPI_INT, r, c->rcounts, c->rdispls, MPI_INT, m);
        case K_ALLTOALL: return MPI_Alltoall(s, n, MPI_INT, r, n, MPI_INT, m);
        case K_ALLTOALLV:
            return MPI_Alltoallv(s, c->scounts, c->sdispls, MPI_INT, r, c->rcounts, c->rdispls, MPI_INT, m);
        case K_ALLTOALLW:
            return MPI_Alltoallw(s, c->scounts, c->sbytes, c->types, r, c->rcounts, c->rbytes, c->types, m);
        case K_ALLREDUCE: return MPI_Allreduce(s, r, n, MPI_INT, MPI_SUM, m);
        case K_REDUCE: return MPI_Reduce(s, r, n, MPI_INT, MPI_SUM, rt, m);
        case K_REDUCE_SCATTER: return MPI_Reduce_scatter(s, r, c->rcounts, MPI_INT, MPI_SUM, m);
        case K_REDUCE_SCATTER_BLOCK: return MPI_Reduce_scatter_block(s, r, c->rcount, MPI_INT, MPI_SUM, m);
        default: return MPI_ERR_OTHER;
        }
    if (f == F_NONBLOCKING) switch (k) {
        case K_BCAST: return MPI_Ibcast(r, n, MPI_INT, rt, m, q);
        case K_GATHER: return MPI_Igather(s, n, MPI_INT, r, n, MPI_INT, rt, m, q);
        case K_GATHERV: return MPI_Igatherv(s, c->scount, MPI_INT, r, c->rcounts, c->rdispls, MPI_INT, rt, m, q);
        case K_SCATTER: return MPI_Iscatter(s, n, MPI_INT, r, n, MPI_INT, rt, m, q);
        case K_SCATTERV:
            return MPI_Iscatterv(s, c->scounts, c->sdispls, MPI_INT, r, c->rcount, MPI_INT, rt, m, q);
        case K_ALLGATHER: return MPI_Iallgather(s, n, MPI_INT, r, n, MPI_INT, m, q);
        case K_ALLGATHERV: return MPI_Iallgatherv(s, c->scount, MPI_INT, r, c->rcounts, c->rdispls, MPI_INT, m, q);
        case K_ALLTOALL: return MPI_Ialltoall(s, n, MPI_INT, r, n, MPI_INT, m, q);
        case K_ALLTOALLV:
            return MPI_Ialltoallv(s, c->scounts, c->sdispls, MPI_INT, r, c->rcounts, c->rdispls, MPI_INT, m, q);
        case K_ALLTOALLW:
            return MPI_Ialltoallw(s, c->scounts, c->sbytes, c->types, r, c->rcounts, c->rbytes, c->types, m, q);
        case K_ALLREDUCE: return MPI_Iallreduce(s, r, n, MPI_INT, MPI_SUM, m, q);
        case K_REDUCE: return MPI_Ireduce(s, r, n, MPI_INT, MPI_SUM, rt, m, q);
        case K_REDUCE_SCATTER: return MPI_Ireduce_scatter(s, r, c->rcounts, MPI_INT, MPI_SUM, m, q);
        case K_REDUCE_SCATTER_BLOCK: return MPI_Ireduce_scatter_block(s, r, c->rcount, MPI_INT, MPI_SUM, m, q);
        default: return MPI_ERR_OTHER;
        }
#ifdef P
    const MPI_Info in = MPI_INFO_NULL;
    switch (k) {
    case K_BCAST: return P(Bcast)(r, n, MPI_INT, rt, m, in, q);
    case K_GATHER: return P(Gather)(s, n, MPI_INT, r, n, MPI_INT, rt, m, in, q);
    case K_GATHERV: return P(Gatherv)(s, c->scount, MPI_INT, r, c->rcounts, c->rdispls, MPI_INT, rt, m, in, q);
    case K_SCATTER: return P(Scatter)(s, n, MPI_INT, r, n, MPI_INT, rt, m, in, q);
    case K_SCATTERV: return P(Scatterv)(s, c->scounts, c->sdispls, MPI_INT, r, c->rcount, MPI_INT, rt, m, in, q);
    case K_ALLGATHER: return P(Allgather)(s, n, MPI_INT, r, n, MPI_INT, m, in, q);
    case K_ALLGATHERV: return P(Allgatherv)(s, c->scount, MPI_INT, r, c->rcounts, c->rdispls, MPI_INT, m, in, q);
    case K_ALLTOALL: return P(Alltoall)(s, n, MPI_INT, r, n, MPI_INT, m, in, q);
    case K_ALLTOALLV:
        return P(Alltoallv)(s, c->scounts, c->sdispls, MPI_INT, r, c->rcounts, c->rdispls, MPI_INT, m, in, q);
    case K_ALLTOALLW:
        return P(Alltoallw)(s, c->scounts, c->sbytes, c->types, r, c->rcounts, c->rbytes, c->types, m, in, q);
    case K_ALLREDUCE: return P(Allreduce)(s, r, n, MPI_INT, MPI_SUM, m, in, q);
    case K_REDUCE: return P(Reduce)(s, r, n, MPI_INT, MPI_SUM, rt, m, in, q);
    case K_REDUCE_SCATTER: return P(Reduce_scatter)(s, r, c->rcounts, MPI_INT, MPI_SUM, m, in, q);
    case K_REDUCE_SCATTER_BLOCK: return P(Reduce_scatter_block)(s, r, c->rcount, MPI_INT, MPI_SUM, m, in, q);
    default: return MPI_ERR_OTHER;
    }
#else
    return MPI_ERR_OTHER;
#endif
}

static int rooted(enum kind k)
{
    return k == K_BCAST || k == K_GATHER || k == K_GATHERV || k == K_SCATTER || k == K_SCATTERV || k == K_REDUCE;
}

static void run(enum kind k, enum form f, int n, int rootg)
{
    call_t c;
    setup(&c, k, n, rootg);
    MPI_Request q = MPI_REQUEST_NULL;
    const int starts = f == F_PERSISTENT ? 2 : 1;
    for (int st = 0; st < starts; st++) {
        fill(&c, k, n, st);
        MPI_Barrier(MPI_COMM_WORLD); /* no rank refills while a peer still reads */
        int rc = MPI_SUCCESS;
        if (f != F_PERSISTENT || st == 0) rc = post(&c, k, f, n, &q);
        if (rc == MPI_SUCCESS && f == F_PERSISTENT) rc = MPI_Start(&q);
        if (rc == MPI_SUCCESS && f != F_BLOCKING) rc = MPI_Wait(&q, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS) {
            fail(k, f, rootg, "the call returned an error", 0, rc, MPI_SUCCESS);
            break;
        }
        verify(&c, k, f, n, st, rootg);
    }
    if (f == F_PERSISTENT && q != MPI_REQUEST_NULL) MPI_Request_free(&q);
    test_mem_free(on_device, c.send);
    test_mem_free(on_device, c.recv);
    free(c.hsend);
    free(c.hrecv);
}

int main(int argc, char **argv)
{
    int one_gpu = 0, world, wrank;
    MPI_Init(&argc, &argv);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--mem") && i + 1 < argc) on_device = !strcmp(argv[++i], "device");
        else if (!strcmp(argv[i], "--one-gpu")) one_gpu = 1;
    }
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    if (world < 2 || world > kMaxRanks) {
        if (wrank == 0) printf("inter_check: needs 2 to %d ranks: skipped\n", kMaxRanks);
        MPI_Finalize();
        return 77;
    }
    if (on_device && test_select_gpu(one_gpu, NULL, NULL) < 0) {
        if (wrank == 0) printf("inter_check: no GPU: skipped\n");
        MPI_Finalize();
        return 77;
    }
    const int lower = world / 2;
    group = wrank < lower ? 0 : 1;
    MPI_Comm local;
    MPI_Comm_split(MPI_COMM_WORLD, group, wrank, &local);
    MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, group == 0 ? lower : 0, 7, &inter);
    MPI_Comm_rank(inter, &me);
    MPI_Comm_size(inter, &L);
    MPI_Comm_remote_size(inter, &R);

    /* MPI_IN_PLACE is not defined here: an error, not a crash (Open MPI's
     * own argument check misses it for reduce_scatter) */
    {
        int rcounts[kMaxRanks], *buf = test_mem_alloc(on_device, -1, sizeof(int) * kMaxRanks);
        for (int i = 0; i < L; i++) rcounts[i] = 1;
        MPI_Comm_set_errhandler(inter, MPI_ERRORS_RETURN);
        int rc = MPI_Reduce_scatter(MPI_IN_PLACE, buf, rcounts, MPI_INT, MPI_SUM, inter);
        checks++;
        if (rc == MPI_SUCCESS && failures++ < 20)
            fprintf(stderr, "group %d rank %d: FAIL reduce_scatter with MPI_IN_PLACE succeeded\n", group, me);
        MPI_Comm_set_errhandler(inter, MPI_ERRORS_ARE_FATAL);
        test_mem_free(on_device, buf);
    }
#ifdef P
    const int forms = F_FORMS;
#else
    const int forms = F_PERSISTENT;
    if (wrank == 0) printf("inter_check: no persistent collectives in this MPI: blocking and nonblocking only\n");
#endif
    const int sizes[2] = {5, 3001};
    for (int z = 0; z < 2; z++)
        for (int f = 0; f < forms; f++)
            for (int k = 0; k < K_KINDS; k++)
                for (int rootg = 0; rootg < (rooted(k) ? 2 : 1); rootg++) run(k, f, sizes[z], rootg);

    int rc = test_tally(failures, checks, "inter_check (%s memory, %d + %d ranks)", on_device ? "device" : "host", lower,
                        world - lower);
    MPI_Comm_free(&inter);
    MPI_Comm_free(&local);
    MPI_Finalize();
    return rc;
}
