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
