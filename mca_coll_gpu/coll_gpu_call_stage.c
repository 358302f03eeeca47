/* The staged route: a call's significant device buffers copied to host
 * memory, the displaced module run on the copies, the results copied back
 * (after MPI_Wait for nonblocking calls). The one place that knows what
 * each kind reads and writes. */
#include "coll_gpu.h"

/* The shapes a side of a call takes. */
typedef enum { ONE, PER_BLOCK, VECTOR, W_INT, W_AINT, TOTAL_OF_COUNTS } shape_t;

static shape_t send_shape(coll_gpu_kind_t kind)
{
    switch (kind) {
    case COLL_GPU_REDUCE_SCATTER_BLOCK: case COLL_GPU_ALLTOALL: case COLL_GPU_SCATTER:
    case COLL_GPU_NEIGHBOR_ALLTOALL: return PER_BLOCK;
    case COLL_GPU_REDUCE_SCATTER: return TOTAL_OF_COUNTS;
    case COLL_GPU_ALLTOALLV: case COLL_GPU_SCATTERV: case COLL_GPU_NEIGHBOR_ALLTOALLV: return VECTOR;
    case COLL_GPU_ALLTOALLW: return W_INT;
    case COLL_GPU_NEIGHBOR_ALLTOALLW: return W_AINT;
    default: return ONE;
    }
}

static shape_t recv_shape(coll_gpu_kind_t kind)
{
    switch (kind) {
    case COLL_GPU_ALLGATHER: case COLL_GPU_ALLTOALL: case COLL_GPU_GATHER: case COLL_GPU_NEIGHBOR_ALLGATHER:
    case COLL_GPU_NEIGHBOR_ALLTOALL: return PER_BLOCK;
    case COLL_GPU_ALLGATHERV: case COLL_GPU_ALLTOALLV: case COLL_GPU_GATHERV: case COLL_GPU_NEIGHBOR_ALLGATHERV:
    case COLL_GPU_NEIGHBOR_ALLTOALLV: return VECTOR;
    case COLL_GPU_ALLTOALLW: return W_INT;
    case COLL_GPU_NEIGHBOR_ALLTOALLW: return W_AINT;
    default: return ONE;
    }
}

static size_t sum_counts(const int *counts, int n)
{
    size_t total = 0;
    for (int i = 0; i < n; i++) total += counts[i] > 0 ? (size_t)counts[i] : 0;
    return total;
}

/* One side's host copy: `count` per block (or the arrays) of `dtype`. */
typedef struct {
    shape_t shape;
    const void *buf;
    size_t count;
    ompi_datatype_t *dtype;
    ompi_datatype_t *const *dtypes;
    const int *counts, *displs;
    const MPI_Aint *adispls;
    int blocks;
} side_t;

static void *stage_side(coll_gpu_stage_t *st, const side_t *s, bool in, bool out)
{
    switch (s->shape) {
    case ONE: return coll_gpu_stage(st, s->buf, s->dtype, s->count, in, out);
    case PER_BLOCK: return coll_gpu_stage(st, s->buf, s->dtype, s->count * (size_t)s->blocks, in, out);
    case TOTAL_OF_COUNTS: return coll_gpu_stage(st, s->buf, s->dtype, sum_counts(s->counts, s->blocks), in, out);
    case VECTOR: return coll_gpu_stage_v(st, s->buf, s->dtype, s->counts, s->displs, s->blocks, in, out);
    case W_INT: return coll_gpu_stage_w(st, s->buf, s->dtypes, s->counts, s->displs, s->blocks, in, out);
    case W_AINT: return coll_gpu_stage_w_aint(st, s->buf, s->dtypes, s->counts, s->adispls, s->blocks, in, out);
    }
    return NULL;
}

/* The receive side of a reduce_scatter(_block): in place it holds the whole
 * input but receives only this rank's block (at its start), so all of it
 * goes in and just the block comes back. Open MPI's coll/cuda staged only
 * the block and read past it. */
static void stage_scattered(coll_gpu_stage_t *st, coll_gpu_call_t *c, ompi_communicator_t *comm, int blocks)
{
    const bool ip = c->sbuf == MPI_IN_PLACE;
    const size_t mine = c->kind == COLL_GPU_REDUCE_SCATTER ? (size_t)c->rcounts[ompi_comm_rank(comm)] : c->rcount;
    const size_t total = c->kind == COLL_GPU_REDUCE_SCATTER ? sum_counts(c->rcounts, blocks) : mine * blocks;
    const bool device = coll_gpu_data_on_device(c->rbuf, c->rdtype, 0);
    c->rbuf = coll_gpu_stage(st, c->rbuf, c->rdtype, ip ? total : mine, ip, true);
    if (ip && device) coll_gpu_stage_limit_out(st, c->rdtype, 0, mine);
}

/* Whether the receive side goes in as well as out: in place it is the
 * input; exscan leaves rank 0's undefined, but copying it back unchanged
 * needs it copied in; a neighbourhood block from MPI_PROC_NULL (a
 * non-periodic Cartesian edge) is not written, nor are the gaps. */
static bool recv_in(const coll_gpu_call_t *c, ompi_communicator_t *comm)
{
    if (c->kind == COLL_GPU_BCAST)
        return OMPI_COMM_IS_INTER(comm) ? c->root == MPI_ROOT : c->root == ompi_comm_rank(comm);
    return c->sbuf == MPI_IN_PLACE || c->kind == COLL_GPU_EXSCAN || coll_gpu_kind_info(c->kind)->neighbor;
}

/* Replaces c's significant buffers by their host copies in `st`. */
static void stage_buffers(coll_gpu_stage_t *st, coll_gpu_call_t *c, ompi_communicator_t *comm)
{
    const coll_gpu_roles_t r = coll_gpu_call_roles(c, comm);
    int sblocks, rblocks;
    coll_gpu_call_blocks(c, comm, &sblocks, &rblocks);
    const bool reduction = coll_gpu_kind_info(c->kind)->reduction;
    if (r.send && c->sbuf != MPI_IN_PLACE) {
        side_t s = {send_shape(c->kind), c->sbuf, reduction ? c->rcount : c->scount, c->sdtype, c->sdtypes,
                    c->kind == COLL_GPU_REDUCE_SCATTER ? c->rcounts : c->scounts, c->sdispls, c->sdispls_aint,
                    sblocks};
        c->sbuf = stage_side(st, &s, true, false);
    }
    if (!r.recv) return;
    if (c->kind == COLL_GPU_REDUCE_SCATTER || c->kind == COLL_GPU_REDUCE_SCATTER_BLOCK) {
        stage_scattered(st, c, comm, rblocks);
        return;
    }
    const bool in = recv_in(c, comm), out = c->kind != COLL_GPU_BCAST || !in;
    side_t s = {recv_shape(c->kind), c->rbuf, c->rcount, c->rdtype, c->rdtypes, c->rcounts, c->rdispls,
                c->rdispls_aint, rblocks};
    c->rbuf = stage_side(st, &s, in, out);
}

int coll_gpu_call_staged(const coll_gpu_call_t *call, ompi_communicator_t *comm, ompi_request_t **request,
                         mca_coll_gpu_module_t *m)
{
    coll_gpu_call_t c = *call;
    coll_gpu_stage_t *st = coll_gpu_stage_new();
    if (st) stage_buffers(st, &c, comm);
    int rc = coll_gpu_stage_failed(st);
    if (rc) return rc;
    rc = coll_gpu_call_prev(&c, comm, request, &m->prev);
    return coll_gpu_stage_finish(st, rc, comm, request);
}
