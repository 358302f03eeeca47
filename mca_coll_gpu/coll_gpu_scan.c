/* MPI_Scan / MPI_Exscan and their nonblocking forms: always staged. */
#include "coll_gpu.h"

static int scan_staged(bool exclusive, const void *sbuf, void *rbuf, int count, ompi_datatype_t *dtype,
                       ompi_op_t *op, ompi_communicator_t *comm, ompi_request_t **request, mca_coll_gpu_module_t *m)
{
    int rc;
    if (ompi_comm_size(comm) == 1 && coll_gpu_self_copy(m, sbuf, exclusive ? 0 : count, dtype, rbuf, count, dtype, request, &rc)) return rc;
    coll_gpu_stage_t *st = coll_gpu_stage_new();
    const void *hs = coll_gpu_stage(st, sbuf, dtype, count, true, false);
    /* Exscan leaves rank 0's rbuf undefined, but copying it back unchanged
     * needs it copied in first: do so whenever it is also the input. */
    void *hr = coll_gpu_stage(st, rbuf, dtype, count, sbuf == MPI_IN_PLACE || exclusive, true);
    rc = coll_gpu_stage_failed(st);
    if (rc) return rc;
    if (exclusive)
        rc = request ? m->prev.iexscan(hs, hr, count, dtype, op, comm, request, m->prev.iexscan_module)
                     : m->prev.exscan(hs, hr, count, dtype, op, comm, m->prev.exscan_module);
    else
        rc = request ? m->prev.iscan(hs, hr, count, dtype, op, comm, request, m->prev.iscan_module)
                     : m->prev.scan(hs, hr, count, dtype, op, comm, m->prev.scan_module);
    return coll_gpu_stage_finish(st, rc, comm, request);
}

#define COLL_GPU_SCAN_ENTRY(name, exclusive)                                                                     \
    int mca_coll_gpu_##name(const void *sbuf, void *rbuf, int count, ompi_datatype_t *dtype, ompi_op_t *op,    \
                            ompi_communicator_t *comm, mca_coll_base_module_t *module)                          \
    {                                                                                                           \
        mca_coll_gpu_module_t *m = COLL_GPU_MODULE(module);                                                     \
        if (!coll_gpu_data_on_device(sbuf, dtype, 0) && !coll_gpu_data_on_device(rbuf, dtype, 0))               \
            return m->prev.name(sbuf, rbuf, count, dtype, op, comm, m->prev.name##_module);                     \
        return scan_staged(exclusive, sbuf, rbuf, count, dtype, op, comm, NULL, m);                             \
    }                                                                                                           \
    int mca_coll_gpu_i##name(const void *sbuf, void *rbuf, int count, ompi_datatype_t *dtype, ompi_op_t *op,   \
                             ompi_communicator_t *comm, ompi_request_t **request, mca_coll_base_module_t *module) \
    {                                                                                                           \
        mca_coll_gpu_module_t *m = COLL_GPU_MODULE(module);                                                     \
        if (!coll_gpu_data_on_device(sbuf, dtype, 0) && !coll_gpu_data_on_device(rbuf, dtype, 0))               \
            return coll_gpu_request_hold(                                                                       \
                m->prev.i##name(sbuf, rbuf, count, dtype, op, comm, request, m->prev.i##name##_module), request, comm); \
        return scan_staged(exclusive, sbuf, rbuf, count, dtype, op, comm, request, m);                          \
    }

COLL_GPU_SCAN_ENTRY(scan, false)
COLL_GPU_SCAN_ENTRY(exscan, true)
