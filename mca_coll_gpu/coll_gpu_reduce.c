/* MPI_Reduce / MPI_Ireduce / MPI_Reduce_local. */
#include "coll_gpu.h"

static int reduce_staged(const void *sbuf, void *rbuf, int count, ompi_datatype_t *dtype, ompi_op_t *op, int root,
                         ompi_communicator_t *comm, ompi_request_t **request, mca_coll_gpu_module_t *m)
{
    int rc;
    if (ompi_comm_size(comm) == 1 && coll_gpu_self_copy(m, sbuf, count, dtype, rbuf, count, dtype, request, &rc)) return rc;
    bool is_root = ompi_comm_rank(comm) == root;
    coll_gpu_stage_t *st = coll_gpu_stage_new();
    const void *hs = coll_gpu_stage(st, sbuf, dtype, count, true, false);
    /* rbuf matters only at the root (where it is also the input if in place). */
    void *hr = is_root ? coll_gpu_stage(st, rbuf, dtype, count, sbuf == MPI_IN_PLACE, true) : rbuf;
    rc = coll_gpu_stage_failed(st);
    if (rc) return rc;
    rc = request ? m->prev.ireduce(hs, hr, count, dtype, op, root, comm, request, m->prev.ireduce_module)
                 : m->prev.reduce(hs, hr, count, dtype, op, root, comm, m->prev.reduce_module);
    return coll_gpu_stage_finish(st, rc, comm, request);
}

static bool reduce_on_device(const void *sbuf, void *rbuf, ompi_datatype_t *dtype, int root, ompi_communicator_t *comm,
                             bool *any)
{
    bool is_root = ompi_comm_rank(comm) == root;
    bool rdev = is_root && coll_gpu_data_on_device(rbuf, dtype, 0);
    bool sdev = sbuf == MPI_IN_PLACE ? rdev : coll_gpu_data_on_device(sbuf, dtype, 0);
    *any = rdev || sdev;
    return sdev && (rdev || !is_root);
}

int mca_coll_gpu_reduce(const void *sbuf, void *rbuf, int count, ompi_datatype_t *dtype, ompi_op_t *op, int root,
                        ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_gpu_module_t *m = COLL_GPU_MODULE(module);
    bool any;
    bool all = reduce_on_device(sbuf, rbuf, dtype, root, comm, &any);
    int rc;
    if (coll_gpu_team_try(m, GPUCOLL_COLL_REDUCE, sbuf, rbuf, count, dtype, op, root, all, &rc)) return rc;
    if (coll_gpu_hier_try(m, GPUCOLL_COLL_REDUCE, sbuf, rbuf, count, dtype, op, root, all, &rc)) return rc;
    if (!any) return m->prev.reduce(sbuf, rbuf, count, dtype, op, root, comm, m->prev.reduce_module);
    return reduce_staged(sbuf, rbuf, count, dtype, op, root, comm, NULL, m);
}

int mca_coll_gpu_ireduce(const void *sbuf, void *rbuf, int count, ompi_datatype_t *dtype, ompi_op_t *op, int root,
                         ompi_communicator_t *comm, ompi_request_t **request, mca_coll_base_module_t *module)
{
    mca_coll_gpu_module_t *m = COLL_GPU_MODULE(module);
    coll_gpu_call_t c = {.kind = GPUCOLL_COLL_REDUCE, .sbuf = sbuf, .rbuf = rbuf, .rcount = (size_t)count,
                         .rdtype = dtype, .op = op, .root = root};
    int rc;
    if (coll_gpu_queued_try(m, &c, request, &rc)) return rc;
    bool any;
    reduce_on_device(sbuf, rbuf, dtype, root, comm, &any);
    if (!any) return coll_gpu_request_hold(m->prev.ireduce(sbuf, rbuf, count, dtype, op, root, comm, request, m->prev.ireduce_module), request, comm);
    return reduce_staged(sbuf, rbuf, count, dtype, op, root, comm, request, m);
}

int mca_coll_gpu_reduce_local(const void *inbuf, void *inoutbuf, int count, ompi_datatype_t *dtype, ompi_op_t *op,
                              mca_coll_base_module_t *module)
{
    mca_coll_gpu_module_t *m = COLL_GPU_MODULE(module);
    bool in_dev = coll_gpu_data_on_device(inbuf, dtype, 0), io_dev = coll_gpu_data_on_device(inoutbuf, dtype, 0);
    if (!in_dev && !io_dev)
        return m->prev.reduce_local(inbuf, inoutbuf, count, dtype, op, m->prev.reduce_local_module);
    gpucoll_dtype_t gd = coll_gpu_map_dtype(dtype);
    gpucoll_op_t go = gd == GPUCOLL_DTYPE_NONE ? GPUCOLL_OP_NONE : coll_gpu_map_op(op, gd);
    if (in_dev && io_dev && go != GPUCOLL_OP_NONE && count > 0 && !mca_coll_gpu_component.stage_host_buffers) {
        gpucoll_status_t st = gpucoll_local_reduce(inoutbuf, inbuf, (size_t)count, gd, go);
        if (st == GPUCOLL_SUCCESS) return OMPI_SUCCESS;
        if (st != GPUCOLL_ERR_UNSUPPORTED) return coll_gpu_error(st, "MPI_Reduce_local on the GPU");
    }
    coll_gpu_stage_t *st = coll_gpu_stage_new();
    const void *hin = coll_gpu_stage(st, inbuf, dtype, count, true, false);
    void *hio = coll_gpu_stage(st, inoutbuf, dtype, count, true, true);
    int rc = coll_gpu_stage_failed(st);
    if (rc) return rc;
    rc = m->prev.reduce_local(hin, hio, count, dtype, op, m->prev.reduce_local_module);
    return coll_gpu_stage_finish(st, rc, NULL, NULL);
}
