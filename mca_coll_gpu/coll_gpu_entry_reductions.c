/* The entry points of the reductions: each names its MPI arguments in a call
 * record and hands it to coll_gpu_run (coll_gpu_route.c), which decides
 * where it runs. MPI_Reduce_local and MPI_Barrier are here too. */
#include "coll_gpu.h"

/* MPI_Allreduce */
COLL_GPU_ENTRIES(allreduce, (const void *sbuf, void *rbuf, int count, ompi_datatype_t *dtype, ompi_op_t *op),
                 .kind = COLL_GPU_ALLREDUCE, .sbuf = sbuf, .rbuf = rbuf, .rcount = (size_t)count, .sdtype = dtype,
                 .rdtype = dtype, .op = op)

/* MPI_Reduce */
COLL_GPU_ENTRIES(reduce, (const void *sbuf, void *rbuf, int count, ompi_datatype_t *dtype, ompi_op_t *op, int root),
                 .kind = COLL_GPU_REDUCE, .sbuf = sbuf, .rbuf = rbuf, .rcount = (size_t)count, .sdtype = dtype,
                 .rdtype = dtype, .op = op, .root = root)

/* MPI_Reduce_scatter */
COLL_GPU_ENTRIES(reduce_scatter, (const void *sbuf, void *rbuf, const int *rcounts, ompi_datatype_t *dtype,
                 ompi_op_t *op),
                 .kind = COLL_GPU_REDUCE_SCATTER, .sbuf = sbuf, .rbuf = rbuf, .rcounts = rcounts, .sdtype = dtype,
                 .rdtype = dtype, .op = op)

/* MPI_Reduce_scatter_block */
COLL_GPU_ENTRIES(reduce_scatter_block, (const void *sbuf, void *rbuf, int rcount, ompi_datatype_t *dtype,
                 ompi_op_t *op),
                 .kind = COLL_GPU_REDUCE_SCATTER_BLOCK, .sbuf = sbuf, .rbuf = rbuf, .rcount = (size_t)rcount,
                 .sdtype = dtype, .rdtype = dtype, .op = op)

/* MPI_Scan */
COLL_GPU_ENTRIES(scan, (const void *sbuf, void *rbuf, int count, ompi_datatype_t *dtype, ompi_op_t *op),
                 .kind = COLL_GPU_SCAN, .sbuf = sbuf, .rbuf = rbuf, .rcount = (size_t)count, .sdtype = dtype,
                 .rdtype = dtype, .op = op)

/* MPI_Exscan */
COLL_GPU_ENTRIES(exscan, (const void *sbuf, void *rbuf, int count, ompi_datatype_t *dtype, ompi_op_t *op),
                 .kind = COLL_GPU_EXSCAN, .sbuf = sbuf, .rbuf = rbuf, .rcount = (size_t)count, .sdtype = dtype,
                 .rdtype = dtype, .op = op)

/* MPI_Reduce_local: on the GPU where both buffers are device memory of this
 * GPU and the type and op have a kernel; staged otherwise (buffers on two
 * GPUs included: a kernel cannot read both). */
static int reduce_local(const void *inbuf, void *inoutbuf, int count, ompi_datatype_t *dtype, ompi_op_t *op,
                        mca_coll_base_module_t *module)
{
    mca_coll_gpu_module_t *m = COLL_GPU_MODULE(module);
    bool in_dev = coll_gpu_data_on_device(inbuf, dtype, 0), io_dev = coll_gpu_data_on_device(inoutbuf, dtype, 0);
    if (!in_dev && !io_dev) return m->prev.reduce_local(inbuf, inoutbuf, count, dtype, op, m->prev.reduce_local_module);
    gpucoll_dtype_t gd;
    gpucoll_op_t go;
    const bool mapped = coll_gpu_map_reduction(dtype, op, &gd, &go);
    if (in_dev && io_dev && mapped && count > 0 && !mca_coll_gpu_component.stage_host_buffers) {
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

/* MPI_Barrier: the displaced barrier, then the communicator's GPU path set
 * up where every rank can use it (coll_gpu_team_after_barrier). */
static int barrier(ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_gpu_module_t *m = COLL_GPU_MODULE(module);
    int rc = m->prev.barrier(comm, m->prev.barrier_module);
    return rc == OMPI_SUCCESS ? coll_gpu_team_after_barrier(m) : rc;
}

mca_coll_gpu_module_t *coll_gpu_module_of(ompi_communicator_t *comm)
{
    if (comm == NULL || comm == MPI_COMM_NULL || comm->c_coll == NULL || OMPI_COMM_IS_INTER(comm)) return NULL;
    if (comm->c_coll->coll_allreduce != allreduce) return NULL;
    return COLL_GPU_MODULE(comm->c_coll->coll_allreduce_module);
}

void coll_gpu_entries_install_reductions(mca_coll_base_module_t *m, bool inter)
{
    COLL_GPU_INSTALL_ENTRIES(m, allreduce);
    COLL_GPU_INSTALL_ENTRIES(m, reduce);
    COLL_GPU_INSTALL_ENTRIES(m, reduce_scatter);
    COLL_GPU_INSTALL_ENTRIES(m, reduce_scatter_block);
    if (!inter) { /* MPI defines no scan on intercommunicators; barrier and reduce_local carry no data there */
        COLL_GPU_INSTALL_ENTRIES(m, scan);
        COLL_GPU_INSTALL_ENTRIES(m, exscan);
        m->coll_reduce_local = reduce_local;
        m->coll_barrier = barrier;
    }
}
