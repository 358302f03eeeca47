/* The displaced module's collective for a call record: the one switch from
 * a kind to Open MPI's slots. */
#include "coll_gpu.h"

/* Blocking or nonblocking slot `name` of `p`, or an error where no module
 * below provides it (never a call through NULL). */
#define PREV(name, ...)                                                                                   \
    (req ? (p->i##name ? p->i##name(__VA_ARGS__, comm, req, p->i##name##_module) : OMPI_ERR_NOT_SUPPORTED) \
         : (p->name ? p->name(__VA_ARGS__, comm, p->name##_module) : OMPI_ERR_NOT_SUPPORTED))

static int prev_reduction(const coll_gpu_call_t *c, ompi_communicator_t *comm, ompi_request_t **req,
                          const coll_gpu_prev_t *p)
{
    const void *s = c->sbuf;
    void *r = c->rbuf;
    const int n = (int)c->rcount;
    switch (c->kind) {
    case COLL_GPU_ALLREDUCE: return PREV(allreduce, s, r, n, c->rdtype, c->op);
    case COLL_GPU_REDUCE: return PREV(reduce, s, r, n, c->rdtype, c->op, c->root);
    case COLL_GPU_REDUCE_SCATTER: return PREV(reduce_scatter, s, r, c->rcounts, c->rdtype, c->op);
    case COLL_GPU_REDUCE_SCATTER_BLOCK: return PREV(reduce_scatter_block, s, r, n, c->rdtype, c->op);
    case COLL_GPU_SCAN: return PREV(scan, s, r, n, c->rdtype, c->op);
    case COLL_GPU_EXSCAN: return PREV(exscan, s, r, n, c->rdtype, c->op);
    default: return OMPI_ERR_BAD_PARAM;
    }
}

static int prev_movement(const coll_gpu_call_t *c, ompi_communicator_t *comm, ompi_request_t **req,
                         const coll_gpu_prev_t *p)
{
    const void *s = c->sbuf;
    void *r = c->rbuf;
    const int sn = (int)c->scount, rn = (int)c->rcount;
    switch (c->kind) {
    case COLL_GPU_BCAST: return PREV(bcast, r, rn, c->rdtype, c->root);
    case COLL_GPU_ALLGATHER: return PREV(allgather, s, sn, c->sdtype, r, rn, c->rdtype);
    case COLL_GPU_ALLGATHERV: return PREV(allgatherv, s, sn, c->sdtype, r, c->rcounts, c->rdispls, c->rdtype);
    case COLL_GPU_ALLTOALL: return PREV(alltoall, s, sn, c->sdtype, r, rn, c->rdtype);
    case COLL_GPU_ALLTOALLV:
        return PREV(alltoallv, s, c->scounts, c->sdispls, c->sdtype, r, c->rcounts, c->rdispls, c->rdtype);
    case COLL_GPU_ALLTOALLW:
        return PREV(alltoallw, s, c->scounts, c->sdispls, c->sdtypes, r, c->rcounts, c->rdispls, c->rdtypes);
    case COLL_GPU_GATHER: return PREV(gather, s, sn, c->sdtype, r, rn, c->rdtype, c->root);
    case COLL_GPU_GATHERV: return PREV(gatherv, s, sn, c->sdtype, r, c->rcounts, c->rdispls, c->rdtype, c->root);
    case COLL_GPU_SCATTER: return PREV(scatter, s, sn, c->sdtype, r, rn, c->rdtype, c->root);
    case COLL_GPU_SCATTERV:
        return PREV(scatterv, s, c->scounts, c->sdispls, c->sdtype, r, rn, c->rdtype, c->root);
    default: return OMPI_ERR_BAD_PARAM;
    }
}

static int prev_neighbor(const coll_gpu_call_t *c, ompi_communicator_t *comm, ompi_request_t **req,
                         const coll_gpu_prev_t *p)
{
    const void *s = c->sbuf;
    void *r = c->rbuf;
    const int sn = (int)c->scount, rn = (int)c->rcount;
    switch (c->kind) {
    case COLL_GPU_NEIGHBOR_ALLGATHER: return PREV(neighbor_allgather, s, sn, c->sdtype, r, rn, c->rdtype);
    case COLL_GPU_NEIGHBOR_ALLGATHERV:
        return PREV(neighbor_allgatherv, s, sn, c->sdtype, r, c->rcounts, c->rdispls, c->rdtype);
    case COLL_GPU_NEIGHBOR_ALLTOALL: return PREV(neighbor_alltoall, s, sn, c->sdtype, r, rn, c->rdtype);
    case COLL_GPU_NEIGHBOR_ALLTOALLV:
        return PREV(neighbor_alltoallv, s, c->scounts, c->sdispls, c->sdtype, r, c->rcounts, c->rdispls, c->rdtype);
    case COLL_GPU_NEIGHBOR_ALLTOALLW:
        return PREV(neighbor_alltoallw, s, c->scounts, c->sdispls_aint, c->sdtypes, r, c->rcounts, c->rdispls_aint,
                    c->rdtypes);
    default: return OMPI_ERR_BAD_PARAM;
    }
}
#undef PREV

int coll_gpu_call_prev(const coll_gpu_call_t *c, ompi_communicator_t *comm, ompi_request_t **request,
                       const coll_gpu_prev_t *p)
{
    const coll_gpu_kind_info_t *k = coll_gpu_kind_info(c->kind);
    if (k->neighbor) return prev_neighbor(c, comm, request, p);
    if (k->reduction) return prev_reduction(c, comm, request, p);
    return prev_movement(c, comm, request, p);
}
