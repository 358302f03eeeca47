/* MPI_Reduce_scatter(_block) / MPI_Ireduce_scatter(_block). */
#include "coll_gpu.h"

/* In place, rbuf holds the whole input but receives only this rank's block
 * (at its start): stage all of it in, copy back just the block. The staged
 * path of Open MPI's coll/cuda stages only the block and reads past it. */
static int reduce_scatter_staged(const void *sbuf, void *rbuf, size_t total, size_t mine, const int *rcounts,
                                 int rcount, ompi_datatype_t *dtype, ompi_op_t *op, ompi_communicator_t *comm,
                                 ompi_request_t **request, mca_coll_gpu_module_t *m)
{
    int rc;
    if (ompi_comm_size(comm) == 1 && coll_gpu_self_copy(m, sbuf, mine, dtype, rbuf, mine, dtype, request, &rc)) return rc;
    bool in_place = sbuf == MPI_IN_PLACE;
    coll_gpu_stage_t *st = coll_gpu_stage_new();
    const void *hs = coll_gpu_stage(st, sbuf, dtype, total, true, false);
    void *hr = coll_gpu_stage(st, rbuf, dtype, in_place ? total : mine, in_place, true);
    if (in_place && coll_gpu_data_on_device(rbuf, dtype, 0)) coll_gpu_stage_limit_out(st, dtype, 0, mine);
    rc = coll_gpu_stage_failed(st);
    if (rc) return rc;
    if (rcounts)
        rc = request ? m->prev.ireduce_scatter(hs, hr, rcounts, dtype, op, comm, request,
                                               m->prev.ireduce_scatter_module)
                     : m->prev.reduce_scatter(hs, hr, rcounts, dtype, op, comm, m->prev.reduce_scatter_module);
    else
        rc = request ? m->prev.ireduce_scatter_block(hs, hr, rcount, dtype, op, comm, request,
                                                     m->prev.ireduce_scatter_block_module)
                     : m->prev.reduce_scatter_block(hs, hr, rcount, dtype, op, comm,
                                                    m->prev.reduce_scatter_block_module);
    return coll_gpu_stage_finish(st, rc, comm, request);
}

static size_t sum_counts(const int *counts, int n)
{
    size_t total = 0;
    for (int i = 0; i < n; i++) total += counts[i] > 0 ? (size_t)counts[i] : 0;
    return total;
}

int mca_coll_gpu_reduce_scatter(const void *sbuf, void *rbuf, const int *rcounts, ompi_datatype_t *dtype,
                                ompi_op_t *op, ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_gpu_module_t *m = COLL_GPU_MODULE(module);
    bool rdev = coll_gpu_data_on_device(rbuf, dtype, 0),
         sdev = sbuf == MPI_IN_PLACE ? rdev : coll_gpu_data_on_device(sbuf, dtype, 0);
    int rc;
    if (coll_gpu_team_try_v(m, GPUCOLL_COLL_REDUCE_SCATTER, sbuf, rbuf, rcounts, NULL, NULL, NULL, dtype, op,
                            rdev && sdev, &rc))
        return rc;
    if (!rdev && !sdev)
        return m->prev.reduce_scatter(sbuf, rbuf, rcounts, dtype, op, comm, m->prev.reduce_scatter_module);
    int size = ompi_comm_size(comm);
    return reduce_scatter_staged(sbuf, rbuf, sum_counts(rcounts, size), (size_t)rcounts[ompi_comm_rank(comm)],
                                 rcounts, 0, dtype, op, comm, NULL, m);
}

int mca_coll_gpu_ireduce_scatter(const void *sbuf, void *rbuf, const int *rcounts, ompi_datatype_t *dtype,
                                 ompi_op_t *op, ompi_communicator_t *comm, ompi_request_t **request,
                                 mca_coll_base_module_t *module)
{
    mca_coll_gpu_module_t *m = COLL_GPU_MODULE(module);
    if (!coll_gpu_data_on_device(sbuf, dtype, 0) && !coll_gpu_data_on_device(rbuf, dtype, 0))
        return coll_gpu_request_hold(m->prev.ireduce_scatter(sbuf, rbuf, rcounts, dtype, op, comm, request, m->prev.ireduce_scatter_module), request, comm);
    int size = ompi_comm_size(comm);
    return reduce_scatter_staged(sbuf, rbuf, sum_counts(rcounts, size), (size_t)rcounts[ompi_comm_rank(comm)],
                                 rcounts, 0, dtype, op, comm, request, m);
}

int mca_coll_gpu_reduce_scatter_block(const void *sbuf, void *rbuf, int rcount, ompi_datatype_t *dtype,
                                      ompi_op_t *op, ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_gpu_module_t *m = COLL_GPU_MODULE(module);
    bool rdev = coll_gpu_data_on_device(rbuf, dtype, 0),
         sdev = sbuf == MPI_IN_PLACE ? rdev : coll_gpu_data_on_device(sbuf, dtype, 0);
    int rc;
    if (coll_gpu_team_try(m, GPUCOLL_COLL_REDUCE_SCATTER_BLOCK, sbuf, rbuf, rcount, dtype, op, 0, rdev && sdev, &rc))
        return rc;
    if (coll_gpu_hier_try(m, GPUCOLL_COLL_REDUCE_SCATTER_BLOCK, sbuf, rbuf, rcount, dtype, op, 0, rdev && sdev, &rc))
        return rc;
    if (!rdev && !sdev)
        return m->prev.reduce_scatter_block(sbuf, rbuf, rcount, dtype, op, comm, m->prev.reduce_scatter_block_module);
    size_t size = (size_t)ompi_comm_size(comm);
    return reduce_scatter_staged(sbuf, rbuf, size * rcount, rcount, NULL, rcount, dtype, op, comm, NULL, m);
}

int mca_coll_gpu_ireduce_scatter_block(const void *sbuf, void *rbuf, int rcount, ompi_datatype_t *dtype,
                                       ompi_op_t *op, ompi_communicator_t *comm, ompi_request_t **request,
                                       mca_coll_base_module_t *module)
{
    mca_coll_gpu_module_t *m = COLL_GPU_MODULE(module);
    coll_gpu_call_t c = {.kind = GPUCOLL_COLL_REDUCE_SCATTER_BLOCK, .sbuf = sbuf, .rbuf = rbuf,
                         .rcount = (size_t)rcount, .rdtype = dtype, .op = op};
    int rc;
    if (coll_gpu_queued_try(m, &c, request, &rc)) return rc;
    if (!coll_gpu_data_on_device(sbuf, dtype, 0) && !coll_gpu_data_on_device(rbuf, dtype, 0))
        return coll_gpu_request_hold(m->prev.ireduce_scatter_block(sbuf, rbuf, rcount, dtype, op, comm, request,
                                             m->prev.ireduce_scatter_block_module), request, comm);
    size_t size = (size_t)ompi_comm_size(comm);
    return reduce_scatter_staged(sbuf, rbuf, size * rcount, rcount, NULL, rcount, dtype, op, comm, request, m);
}
