/* Neighbourhood collectives and MPI_Alltoallw_init on host or device buffers,
 * every received element checked.
 *
 *   neighbor_check [--mem host|device] [--one-gpu]
 *
 * MPI_Neighbor_allgather, _allgatherv, _alltoall, _alltoallv and _alltoallw,
 * blocking, nonblocking (MPI_I... + MPI_Wait) and persistent (*_init, two
 * starts with new inputs), over: a periodic and a non-periodic ring (whose
 * end blocks come from MPI_PROC_NULL and must stay untouched), a 2-D
 * Cartesian grid, a graph with a self edge, and a distributed graph whose
 * sources and destinations differ (with repeated edges at 3 ranks). Then
 * MPI_Alltoallw (all three forms) over MPI_COMM_WORLD.
 *
 * Each sent element names its sender, the destination slot it was sent to,
 * the start and its index; a received block must come from the source MPI
 * says it comes from, from a slot of that source that points at us, and no
 * (source, slot) twice. Gaps between the blocks of the v/w forms, and the
 * blocks of MPI_PROC_NULL sources, must keep their poison. Exit 77 without a
 * GPU in device mode. */
#include <cuda_runtime.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_forms.h"
#include "test_gpu.h"

enum { kMaxDeg = 8, kPoison = -1 };
enum kind { K_ALLGATHER, K_ALLGATHERV, K_ALLTOALL, K_ALLTOALLV, K_ALLTOALLW, K_WORLD_ALLTOALLW, K_KINDS };
enum form { F_BLOCKING, F_NONBLOCKING, F_PERSISTENT, F_FORMS };
static const char *kind_names[K_KINDS] = {"neighbor_allgather", "neighbor_allgatherv", "neighbor_alltoall",
                                          "neighbor_alltoallv", "neighbor_alltoallw", "alltoallw"};
static const char *form_names[F_FORMS] = {"blocking", "nonblocking", "persistent"};
static int rank, size, on_device, failures, checks;

/* One topology as this rank sees it, and every rank's destinations. */
typedef struct {
    const char *name;
    MPI_Comm comm;
    int indeg, outdeg;
    int src[kMaxDeg], dst[kMaxDeg];
    int *all_dst;  /* size x kMaxDeg: rank r's destination slots */
    int *all_out;  /* size: rank r's outdegree */
} topo_t;

/* An element: sender, the destination slot it went to, the start, its index. */
static int encode(int sender, int slot, int start, int i) { return ((sender * 16 + slot) * 8 + start) * 1024 + (i & 1023); }
static int sender_of(int v) { return v >> 17; }
static int slot_of(int v) { return (v >> 13) & 15; }
static int start_of(int v) { return (v >> 10) & 7; }

/* Elements on the edge s -> d: alike for both ends, and uneven. */
static int edge_count(int base, int s, int d) { return base + (s + d) % 3; }

static void fail(const topo_t *t, enum kind k, enum form f, int base, const char *what, int block, int i, int got)
{
    if (failures++ < 20)
        fprintf(stderr, "rank %d: FAIL %s %s on %s, base %d: block %d element %d: %s (got %d)\n", rank, form_names[f],
                kind_names[k], t->name, base, block, i, what, got);
}

static void finish_topo(topo_t *t)
{
    MPI_Comm_size(t->comm, &size);
    MPI_Comm_rank(t->comm, &rank);
    int topo = MPI_UNDEFINED;
    MPI_Topo_test(t->comm, &topo);
    if (topo == MPI_CART) {
        int nd = 0;
        MPI_Cartdim_get(t->comm, &nd);
        for (int d = 0; d < nd; d++) MPI_Cart_shift(t->comm, d, 1, &t->src[2 * d], &t->src[2 * d + 1]);
        /* send order: for each dimension the negative then the positive neighbour */
        for (int d = 0; d < nd; d++) {
            t->dst[2 * d] = t->src[2 * d];
            t->dst[2 * d + 1] = t->src[2 * d + 1];
        }
        t->indeg = t->outdeg = 2 * nd;
    } else if (topo == MPI_GRAPH) {
        MPI_Graph_neighbors_count(t->comm, rank, &t->indeg);
        MPI_Graph_neighbors(t->comm, rank, kMaxDeg, t->src);
        t->outdeg = t->indeg;
        memcpy(t->dst, t->src, sizeof t->src);
    } else {
        int weighted, sw[kMaxDeg], dw[kMaxDeg];
        MPI_Dist_graph_neighbors_count(t->comm, &t->indeg, &t->outdeg, &weighted);
        MPI_Dist_graph_neighbors(t->comm, kMaxDeg, t->src, sw, kMaxDeg, t->dst, dw);
    }
    t->all_dst = malloc(sizeof(int) * kMaxDeg * (size_t)size);
    t->all_out = malloc(sizeof(int) * (size_t)size);
    MPI_Allgather(t->dst, kMaxDeg, MPI_INT, t->all_dst, kMaxDeg, MPI_INT, t->comm);
    MPI_Allgather(&t->outdeg, 1, MPI_INT, t->all_out, 1, MPI_INT, t->comm);
}

/* Buffers and arrays of one call. */
typedef struct {
    int scounts[kMaxDeg * 8], sdispls[kMaxDeg * 8], rcounts[kMaxDeg * 8], rdispls[kMaxDeg * 8];
    MPI_Aint sdispls_a[kMaxDeg * 8], rdispls_a[kMaxDeg * 8]; /* bytes: neighbor_alltoallw */
    int sbytes[kMaxDeg * 8], rbytes[kMaxDeg * 8];               /* bytes: alltoallw */
    MPI_Datatype types[kMaxDeg * 8];
    int scount, rcount;
    size_t send_n, recv_n;
    int *send, *recv, *hsend, *hrecv;
} call_t;

/* Lays block i (count c) after the previous ones and a gap of 2. */
static void place(int *counts, int *displs, MPI_Aint *adispls, int n, int (*count_of)(int, void *), void *ctx,
                  size_t *total)
{
    size_t at = 0;
    for (int i = 0; i < n; i++) {
        counts[i] = count_of(i, ctx);
        displs[i] = (int)at;
        adispls[i] = (MPI_Aint)(at * sizeof(int));
        at += (size_t)counts[i] + 2;
    }
    *total = at;
}

typedef struct { const topo_t *t; enum kind k; int base; } layout_ctx;
static int send_count_of(int j, void *p)
{
    layout_ctx *c = p;
    if (c->k == K_ALLGATHERV) return c->base + rank % 3;
    int d = c->t->dst[j];
    return d == MPI_PROC_NULL ? c->base : edge_count(c->base, rank, d);
}
static int recv_count_of(int i, void *p)
{
    layout_ctx *c = p;
    int s = c->t->src[i];
    if (s == MPI_PROC_NULL) return c->base;
    return c->k == K_ALLGATHERV ? c->base + s % 3 : edge_count(c->base, s, rank);
}

static void setup(call_t *c, const topo_t *t, enum kind k, int base)
{
    memset(c, 0, sizeof *c);
    layout_ctx ctx = {t, k, base};
    int out = k == K_ALLGATHER || k == K_ALLGATHERV ? 1 : t->outdeg;
    if (k == K_ALLGATHER || k == K_ALLTOALL) {
        c->scount = c->rcount = base;
        c->send_n = (size_t)base * (size_t)out;
        c->recv_n = (size_t)base * (size_t)t->indeg;
        for (int j = 0; j < out; j++) c->sdispls[j] = j * base, c->scounts[j] = base;
        for (int i = 0; i < t->indeg; i++) c->rdispls[i] = i * base, c->rcounts[i] = base;
    } else {
        place(c->scounts, c->sdispls, c->sdispls_a, out, send_count_of, &ctx, &c->send_n);
        place(c->rcounts, c->rdispls, c->rdispls_a, t->indeg, recv_count_of, &ctx, &c->recv_n);
        c->scount = c->scounts[0];
    }
    for (int i = 0; i < kMaxDeg * 8; i++) {
        c->types[i] = MPI_INT;
        c->sbytes[i] = c->sdispls[i] * (int)sizeof(int);
        c->rbytes[i] = c->rdispls[i] * (int)sizeof(int);
    }
    c->send = test_mem_alloc(on_device, -1, (c->send_n + 1) * sizeof(int));
    c->recv = test_mem_alloc(on_device, -1, (c->recv_n + 1) * sizeof(int));
    c->hsend = malloc((c->send_n + 1) * sizeof(int));
    c->hrecv = malloc((c->recv_n + 1) * sizeof(int));
}

static void fill(call_t *c, const topo_t *t, enum kind k, int start)
{
    int out = k == K_ALLGATHER || k == K_ALLGATHERV ? 1 : t->outdeg;
    for (size_t i = 0; i < c->send_n; i++) c->hsend[i] = kPoison;
    for (int j = 0; j < out; j++)
        for (int i = 0; i < c->scounts[j]; i++) c->hsend[c->sdispls[j] + i] = encode(rank, j, start, i);
    for (size_t i = 0; i < c->recv_n; i++) c->hrecv[i] = kPoison;
    test_mem_put(on_device, c->send, c->hsend, c->send_n * sizeof(int));
    test_mem_put(on_device, c->recv, c->hrecv, c->recv_n * sizeof(int));
}

static void verify(call_t *c, const topo_t *t, enum kind k, enum form f, int base, int start)
{
    test_mem_get(on_device, c->hrecv, c->recv, c->recv_n * sizeof(int));
    char *inside = calloc(c->recv_n + 1, 1);
    char used[64][kMaxDeg * 8];
    memset(used, 0, sizeof used);
    const int gathers = k == K_ALLGATHER || k == K_ALLGATHERV;
    for (int i = 0; i < t->indeg; i++) {
        const int s = t->src[i];
        int slot = -1;
        for (int e = 0; e < c->rcounts[i]; e++) {
            const int v = c->hrecv[c->rdispls[i] + e];
            inside[c->rdispls[i] + e] = 1;
            checks++;
            if (s == MPI_PROC_NULL) {
                if (v != kPoison) fail(t, k, f, base, "a block from MPI_PROC_NULL was written", i, e, v);
                continue;
            }
            if (sender_of(v) != s) fail(t, k, f, base, "not from the source of this block", i, e, v);
            else if (start_of(v) != start || (v & 1023) != (e & 1023)) fail(t, k, f, base, "wrong element", i, e, v);
            else if (e == 0) {
                slot = slot_of(v);
                if (gathers ? slot != 0 : (slot >= t->all_out[s] || t->all_dst[s * kMaxDeg + slot] != rank))
                    fail(t, k, f, base, "from a slot of the source that does not point here", i, e, v);
                else if (!gathers && used[s][slot]++)
                    fail(t, k, f, base, "the same (source, slot) received twice", i, e, v);
            } else if (slot_of(v) != slot) {
                fail(t, k, f, base, "a block mixes two sends", i, e, v);
            }
        }
    }
    for (size_t e = 0; e < c->recv_n; e++, checks++)
        if (!inside[e] && c->hrecv[e] != kPoison) fail(t, k, f, base, "a gap between blocks was written", -1, (int)e, c->hrecv[e]);
    free(inside);
}

static int post(call_t *c, const topo_t *t, enum kind k, enum form f, MPI_Request *req)
{
    MPI_Comm m = t->comm;
    void *s = c->send, *r = c->recv;
    if (f == F_BLOCKING) {
        switch (k) {
        case K_ALLGATHER: return MPI_Neighbor_allgather(s, c->scount, MPI_INT, r, c->rcount, MPI_INT, m);
        case K_ALLGATHERV: return MPI_Neighbor_allgatherv(s, c->scount, MPI_INT, r, c->rcounts, c->rdispls, MPI_INT, m);
        case K_ALLTOALL: return MPI_Neighbor_alltoall(s, c->scount, MPI_INT, r, c->rcount, MPI_INT, m);
        case K_ALLTOALLV:
            return MPI_Neighbor_alltoallv(s, c->scounts, c->sdispls, MPI_INT, r, c->rcounts, c->rdispls, MPI_INT, m);
        case K_ALLTOALLW:
            return MPI_Neighbor_alltoallw(s, c->scounts, c->sdispls_a, c->types, r, c->rcounts, c->rdispls_a, c->types, m);
        default: break;
        }
        return MPI_Alltoallw(s, c->scounts, c->sbytes, c->types, r, c->rcounts, c->rbytes, c->types, m);
    }
    if (f == F_NONBLOCKING) {
        switch (k) {
        case K_ALLGATHER: return MPI_Ineighbor_allgather(s, c->scount, MPI_INT, r, c->rcount, MPI_INT, m, req);
        case K_ALLGATHERV:
            return MPI_Ineighbor_allgatherv(s, c->scount, MPI_INT, r, c->rcounts, c->rdispls, MPI_INT, m, req);
        case K_ALLTOALL: return MPI_Ineighbor_alltoall(s, c->scount, MPI_INT, r, c->rcount, MPI_INT, m, req);
        case K_ALLTOALLV:
            return MPI_Ineighbor_alltoallv(s, c->scounts, c->sdispls, MPI_INT, r, c->rcounts, c->rdispls, MPI_INT, m,
                                           req);
        case K_ALLTOALLW:
            return MPI_Ineighbor_alltoallw(s, c->scounts, c->sdispls_a, c->types, r, c->rcounts, c->rdispls_a,
                                           c->types, m, req);
        default: break;
        }
        return MPI_Ialltoallw(s, c->scounts, c->sbytes, c->types, r, c->rcounts, c->rbytes, c->types, m, req);
    }
#ifdef P
    switch (k) {
    case K_ALLGATHER:
        return P(Neighbor_allgather)(s, c->scount, MPI_INT, r, c->rcount, MPI_INT, m, MPI_INFO_NULL, req);
    case K_ALLGATHERV:
        return P(Neighbor_allgatherv)(s, c->scount, MPI_INT, r, c->rcounts, c->rdispls, MPI_INT, m, MPI_INFO_NULL,
                                      req);
    case K_ALLTOALL:
        return P(Neighbor_alltoall)(s, c->scount, MPI_INT, r, c->rcount, MPI_INT, m, MPI_INFO_NULL, req);
    case K_ALLTOALLV:
        return P(Neighbor_alltoallv)(s, c->scounts, c->sdispls, MPI_INT, r, c->rcounts, c->rdispls, MPI_INT, m,
                                     MPI_INFO_NULL, req);
    case K_ALLTOALLW:
        return P(Neighbor_alltoallw)(s, c->scounts, c->sdispls_a, c->types, r, c->rcounts, c->rdispls_a, c->types, m,
                                     MPI_INFO_NULL, req);
    default: break;
    }
    return P(Alltoallw)(s, c->scounts, c->sbytes, c->types, r, c->rcounts, c->rbytes, c->types, m, MPI_INFO_NULL,
                        req);
#else
    return MPI_ERR_OTHER;
#endif
}

static void run(const topo_t *t, enum kind k, enum form f, int base)
{
    call_t c;
    setup(&c, t, k, base);
    MPI_Request req = MPI_REQUEST_NULL;
    const int starts = f == F_PERSISTENT ? 2 : 1;
    for (int start = 0; start < starts; start++) {
        fill(&c, t, k, start);
        MPI_Barrier(t->comm); /* no rank's next fill races a peer still reading */
        int rc = MPI_SUCCESS;
        if (f != F_PERSISTENT || start == 0) rc = post(&c, t, k, f, &req);
        if (rc == MPI_SUCCESS && f == F_PERSISTENT) rc = MPI_Start(&req);
        if (rc == MPI_SUCCESS && f != F_BLOCKING) rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS) {
            fail(t, k, f, base, "the call returned an error", -1, -1, rc);
            break;
        }
        verify(&c, t, k, f, base, start);
    }
    if (f == F_PERSISTENT && req != MPI_REQUEST_NULL) MPI_Request_free(&req);
    test_mem_free(on_device, c.send);
    test_mem_free(on_device, c.recv);
    free(c.hsend);
    free(c.hrecv);
}

int main(int argc, char **argv)
{
    int one_gpu = 0;
    MPI_Init(&argc, &argv);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--mem") && i + 1 < argc) on_device = !strcmp(argv[++i], "device");
        else if (!strcmp(argv[i], "--one-gpu")) one_gpu = 1;
    }
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    const int world = size, me = rank;
    if (world > 64) {
        if (me == 0) printf("neighbor_check: at most 64 ranks: skipped\n");
        MPI_Finalize();
        return 77;
    }
    if (on_device && test_select_gpu(one_gpu, NULL, NULL) < 0) {
        if (me == 0) printf("neighbor_check: no GPU: skipped\n");
        MPI_Finalize();
        return 77;
    }

    topo_t topos[6];
    int nt = 0;
    int dims1[1] = {world}, periodic[2] = {1, 0}, open[1] = {0}, dims2[2] = {0, 0};
    topos[nt].name = "periodic ring";
    MPI_Cart_create(MPI_COMM_WORLD, 1, dims1, periodic, 0, &topos[nt++].comm);
    topos[nt].name = "open ring";
    MPI_Cart_create(MPI_COMM_WORLD, 1, dims1, open, 0, &topos[nt++].comm);
    MPI_Dims_create(world, 2, dims2);
    topos[nt].name = "2-D grid";
    MPI_Cart_create(MPI_COMM_WORLD, 2, dims2, periodic, 0, &topos[nt++].comm);
    {   /* ring plus a self edge: neighbours r+1, r-1, r */
        int *index = malloc(sizeof(int) * (size_t)world), *edges = malloc(sizeof(int) * 3 * (size_t)world);
        for (int r = 0; r < world; r++) {
            index[r] = 3 * (r + 1);
            edges[3 * r] = (r + 1) % world;
            edges[3 * r + 1] = (r + world - 1) % world;
            edges[3 * r + 2] = r;
        }
        topos[nt].name = "graph with a self edge";
        MPI_Graph_create(MPI_COMM_WORLD, world, index, edges, 0, &topos[nt++].comm);
        free(index);
        free(edges);
    }
    {   /* receive from r-1 and r+2, send to r+1 and r-2 (repeated edges at 3 ranks) */
        int srcs[2] = {(me + world - 1) % world, (me + 2) % world};
        int dsts[2] = {(me + 1) % world, (me + 2 * world - 2) % world};
        topos[nt].name = "distributed graph";
        int weights[2] = {1, 1};
        MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 2, srcs, weights, 2, dsts, weights, MPI_INFO_NULL, 0,
                                       &topos[nt++].comm);
    }
    for (int i = 0; i < nt; i++) finish_topo(&topos[i]);
    /* MPI_COMM_WORLD for alltoallw: every rank a source and a destination, in rank order */
    topo_t all = {.name = "MPI_COMM_WORLD", .comm = MPI_COMM_WORLD, .indeg = world, .outdeg = world};
    if (world > kMaxDeg * 8) all.indeg = all.outdeg = 0;
    all.all_dst = calloc((size_t)world * kMaxDeg, sizeof(int));
    all.all_out = malloc(sizeof(int) * (size_t)world);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    size = world;

    const int bases[2] = {3, 4099};
#ifdef P
    const int forms = F_FORMS;
#else
    const int forms = F_PERSISTENT;
    if (me == 0) printf("neighbor_check: no persistent collectives in this MPI: blocking and nonblocking only\n");
#endif
    for (int b = 0; b < 2; b++)
        for (int f = 0; f < forms; f++) {
            for (int i = 0; i < nt; i++) {
                MPI_Comm_rank(topos[i].comm, &rank);
                for (int k = K_ALLGATHER; k <= K_ALLTOALLW; k++) run(&topos[i], k, f, bases[b]);
            }
            /* world: slot j of rank r is rank j; kMaxDeg columns only matter up to 8 ranks */
            if (world <= kMaxDeg) {
                MPI_Comm_rank(MPI_COMM_WORLD, &rank);
                for (int r = 0; r < world; r++) {
                    all.src[r] = all.dst[r] = r;
                    all.all_out[r] = world;
                    for (int j = 0; j < world; j++) all.all_dst[r * kMaxDeg + j] = j;
                }
                run(&all, K_WORLD_ALLTOALLW, f, bases[b]);
            }
        }

    int rc = test_tally(failures, checks, "neighbor_check (%s memory, %d ranks)", on_device ? "device" : "host", world);
    for (int i = 0; i < nt; i++) MPI_Comm_free(&topos[i].comm);
    MPI_Finalize();
    return rc;
}
