/* Communicators of one rank (MPI_COMM_SELF, a split of one): every
 * collective is at most a copy from the send buffer to the receive buffer,
 * done on the GPU instead of through host memory. A reduction of a single
 * contribution is that contribution (MPI calls no op for it). */
#include "coll_gpu.h"

/* Start of the data of `count` elements of `dtype` at `buf` and its bytes,
 * if they form one run; false for a layout with holes. */
static bool one_run(const void *buf, size_t count, ompi_datatype_t *dtype, const char **start, size_t *bytes)
{
    *bytes = count * dtype->super.size;
    *start = buf;
    if (*bytes == 0) return true;
    if (!ompi_datatype_is_contiguous_memory_layout(dtype, count)) return false;
    ptrdiff_t true_lb, true_extent;
    ompi_datatype_get_true_extent(dtype, &true_lb, &true_extent);
    *start = (const char *)buf + true_lb;
    return true;
}

bool coll_gpu_self_copy(mca_coll_gpu_module_t *m, const void *sbuf, size_t scount, ompi_datatype_t *sdtype,
                        void *rbuf, size_t rcount, ompi_datatype_t *rdtype, ompi_request_t **request, int *rc)
{
    ompi_communicator_t *comm = m->comm;
    if (ompi_comm_size(comm) != 1 || m->force_staged || mca_coll_gpu_component.stage_host_buffers ||
        mca_coll_gpu_component.config.path == GPUCOLL_PATH_STAGED)
        return false;
    /* Callers come here with a device buffer only (calls on host memory go
     * to Open MPI first): no second look at the pointers. */
    bool in_place = sbuf == MPI_IN_PLACE || rbuf == MPI_IN_PLACE || (sbuf == rbuf && sbuf != MPI_BOTTOM);
    *rc = OMPI_SUCCESS;
    if (!in_place) {
        const char *from, *to;
        size_t sbytes, rbytes;
        if (!one_run(sbuf, scount, sdtype, &from, &sbytes) || !one_run(rbuf, rcount, rdtype, &to, &rbytes))
            return false; /* the staged path packs and unpacks on the host */
        if (sbytes > rbytes) {
            opal_output(0, "coll:gpu: %s: %zu bytes sent into room for %zu", comm->c_name, sbytes, rbytes);
            *rc = MPI_ERR_TRUNCATE;
            return true;
        }
        gpucoll_status_t st = gpucoll_local_copy((void *)to, from, sbytes);
        if (st != GPUCOLL_SUCCESS) *rc = coll_gpu_error(st, "one-rank collective");
    }
    /* Done before returning: the request is born complete. */
    if (request != NULL && *rc == OMPI_SUCCESS) *request = &ompi_request_empty;
    COLL_GPU_VERBOSE(50, "%s: one-rank collective on the GPU", comm->c_name);
    return true;
}

static const char *displaced(const void *buf, ompi_datatype_t *dtype, int n)
{
    return (const char *)buf + coll_gpu_extent_of(dtype, n);
}

bool coll_gpu_call_self(mca_coll_gpu_module_t *m, const coll_gpu_call_t *c, ompi_request_t **request, int *rc)
{
    /* What moves on one rank: block 0 of the send side into block 0 of the
     * receive side (in place: nothing). */
    const bool ip = c->sbuf == MPI_IN_PLACE;
    const void *s = c->sbuf;
    void *r = c->rbuf;
    size_t sn = c->scount, rn = c->rcount;
    ompi_datatype_t *sd = c->sdtype, *rd = c->rdtype;
    switch (c->kind) {
    case COLL_GPU_BCAST: s = MPI_IN_PLACE; break;
    case COLL_GPU_EXSCAN: sn = 0; break; /* rank 0's result is undefined */
    case COLL_GPU_ALLREDUCE: case COLL_GPU_REDUCE: case COLL_GPU_SCAN: case COLL_GPU_REDUCE_SCATTER_BLOCK:
        sn = c->rcount;
        break;
    case COLL_GPU_REDUCE_SCATTER: sn = rn = (size_t)c->rcounts[0]; break;
    case COLL_GPU_ALLGATHERV: case COLL_GPU_GATHERV:
        r = (void *)displaced(c->rbuf, rd, c->rdispls[0]);
        rn = (size_t)c->rcounts[0];
        break;
    case COLL_GPU_SCATTERV:
        s = displaced(c->sbuf, sd, c->sdispls[0]);
        sn = (size_t)c->scounts[0];
        break;
    case COLL_GPU_ALLTOALLV:
        s = ip ? s : displaced(c->sbuf, sd, c->sdispls[0]);
        sn = ip ? 0 : (size_t)c->scounts[0];
        r = (void *)displaced(c->rbuf, rd, c->rdispls[0]);
        rn = (size_t)c->rcounts[0];
        break;
    case COLL_GPU_ALLTOALLW:
        s = ip ? s : (const char *)c->sbuf + c->sdispls[0];
        sn = ip ? 0 : (size_t)c->scounts[0];
        sd = ip ? c->rdtypes[0] : c->sdtypes[0];
        r = (char *)c->rbuf + c->rdispls[0];
        rn = (size_t)c->rcounts[0];
        rd = c->rdtypes[0];
        break;
    default: break;
    }
    if (ip) sd = rd;
    return coll_gpu_self_copy(m, s, sn, sd, r, rn, rd, request, rc);
}
