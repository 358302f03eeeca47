/* MPI_Allreduce / MPI_Iallreduce. */
#include "coll_gpu.h"

static int allreduce_staged(const void *sbuf, void *rbuf, int count, ompi_datatype_t *dtype, ompi_op_t *op,
                            ompi_communicator_t *comm, ompi_request_t **request, mca_coll_gpu_module_t *m)
{
    int rc;
    if (ompi_comm_size(comm) == 1 && coll_gpu_self_copy(m, sbuf, count, dtype, rbuf, count, dtype, request, &rc)) return rc;
    coll_gpu_stage_t *st = coll_gpu_stage_new();
    const void *hs = coll_gpu_stage(st, sbuf, dtype, count, true, false);
    void *hr = coll_gpu_stage(st, rbuf, dtype, count, sbuf == MPI_IN_PLACE, true);
    rc = coll_gpu_stage_failed(st);
    if (rc) return rc;
    rc = request ? m->prev.iallreduce(hs, hr, count, dtype, op, comm, request, m->prev.iallreduce_module)
                 : m->prev.allreduce(hs, hr, count, dtype, op, comm, m->prev.allreduce_module);
    return coll_gpu_stage_finish(st, rc, comm, request);
}

int mca_coll_gpu_allreduce(const void *sbuf, void *rbuf, int count, ompi_datatype_t *dtype, ompi_op_t *op,
                           ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_gpu_module_t *m = COLL_GPU_MODULE(module);
    bool rdev = coll_gpu_data_on_device(rbuf, dtype, 0),
         sdev = sbuf == MPI_IN_PLACE ? rdev : coll_gpu_data_on_device(sbuf, dtype, 0);
    int rc;
    if (coll_gpu_team_try(m, GPUCOLL_COLL_ALLREDUCE, sbuf, rbuf, count, dtype, op, 0, rdev && sdev, &rc)) return rc;
    if (coll_gpu_hier_try(m, GPUCOLL_COLL_ALLREDUCE, sbuf, rbuf, count, dtype, op, 0, rdev && sdev, &rc)) return rc;
    if (!rdev && !sdev) return m->prev.allreduce(sbuf, rbuf, count, dtype, op, comm, m->prev.allreduce_module);
    return allreduce_staged(sbuf, rbuf, count, dtype, op, comm, NULL, m);
}

int mca_coll_gpu_iallreduce(const void *sbuf, void *rbuf, int count, ompi_datatype_t *dtype, ompi_op_t *op,
                            ompi_communicator_t *comm, ompi_request_t **request, mca_coll_base_module_t *module)
{
    mca_coll_gpu_module_t *m = COLL_GPU_MODULE(module);
    coll_gpu_call_t c = {.kind = GPUCOLL_COLL_ALLREDUCE, .sbuf = sbuf, .rbuf = rbuf, .rcount = (size_t)count,
                         .rdtype = dtype, .op = op};
    int rc;
    if (coll_gpu_queued_try(m, &c, request, &rc)) return rc;
    if (!coll_gpu_data_on_device(sbuf, dtype, 0) && !coll_gpu_data_on_device(rbuf, dtype, 0))
        return coll_gpu_request_hold(m->prev.iallreduce(sbuf, rbuf, count, dtype, op, comm, request, m->prev.iallreduce_module), request, comm);
    return allreduce_staged(sbuf, rbuf, count, dtype, op, comm, request, m);
}
