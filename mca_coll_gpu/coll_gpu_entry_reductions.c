/* The entry points of the reductions: each names its MPI arguments in a call
 * record and hands it to coll_gpu_run (coll_gpu_route.c), which decides
 * where it runs. MPI_Reduce_local and MPI_Barrier are here too. */
#include "coll_gpu.h"

/* MPI_Allreduce, its nonblocking and persistent forms */
static coll_gpu_call_t allreduce_call(const void *sbuf, void *rbuf, int count, ompi_datatype_t *dtype, ompi_op_t *op)
{
    return (coll_gpu_call_t){.kind = COLL_GPU_ALLREDUCE,
                             .sbuf = sbuf,
                             .rbuf = rbuf,
                             .rcount = (size_t)count,
                             .sdtype = dtype,
                             .rdtype = dtype,
                             .op = op};
}

static int allreduce(const void *sbuf, void *rbuf, int count, ompi_datatype_t *dtype, ompi_op_t *op,
                     ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    coll_gpu_call_t c = allreduce_call(sbuf, rbuf, count, dtype, op);
    return coll_gpu_run(COLL_GPU_MODULE(module), comm, &c, NULL);
}

static int iallreduce(const void *sbuf, void *rbuf, int count, ompi_datatype_t *dtype, ompi_op_t *op,
                      ompi_communicator_t *comm, ompi_request_t **request, mca_coll_base_module_t *module)
{
    coll_gpu_call_t c = allreduce_call(sbuf, rbuf, count, dtype, op);
    return coll_gpu_run(COLL_GPU_MODULE(module), comm, &c, request);
}

static int allreduce_init(const void *sbuf, void *rbuf, int count, ompi_datatype_t *dtype, ompi_op_t *op,
                          ompi_communicator_t *comm, ompi_info_t *info, ompi_request_t **request,
                          mca_coll_base_module_t *module)
{
    (void)info;
    coll_gpu_call_t c = allreduce_call(sbuf, rbuf, count, dtype, op);
    return coll_gpu_persistent_new(COLL_GPU_MODULE(module), comm, &c, request);
}

/* MPI_Reduce, its nonblocking and persistent forms */
static coll_gpu_call_t reduce_call(const void *sbuf, void *rbuf, int count, ompi_datatype_t *dtype, ompi_op_t *op,
                                   int root)
{
    return (coll_gpu_call_t){.kind = COLL_GPU_REDUCE,
                             .sbuf = sbuf,
                             .rbuf = rbuf,
                             .rcount = (size_t)count,
                             .sdtype = dtype,
                             .rdtype = dtype,
                             .op = op,
                             .root = root};
}

static int reduce(const void *sbuf, void *rbuf, int count, ompi_datatype_t *dtype, ompi_op_t *op, int root,
                  ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    coll_gpu_call_t c = reduce_call(sbuf, rbuf, count, dtype, op, root);
    return coll_gpu_run(COLL_GPU_MODULE(module), comm, &c, NULL);
}

static int ireduce(const void *sbuf, void *rbuf, int count, ompi_datatype_t *dtype, ompi_op_t *op, int root,
                   ompi_communicator_t *comm, ompi_request_t **request, mca_coll_base_module_t *module)
{
    coll_gpu_call_t c = reduce_call(sbuf, rbuf, count, dtype, op, root);
    return coll_gpu_run(COLL_GPU_MODULE(module), comm, &c, request);
}

static int reduce_init(const void *sbuf, void *rbuf, int count, ompi_datatype_t *dtype, ompi_op_t *op, int root,
                       ompi_communicator_t *comm, ompi_info_t *info, ompi_request_t **request,
                       mca_coll_base_module_t *module)
{
    (void)info;
    coll_gpu_call_t c = reduce_call(sbuf, rbuf, count, dtype, op, root);
    return coll_gpu_persistent_new(COLL_GPU_MODULE(module), comm, &c, request);
}

/* MPI_Reduce_scatter, its nonblocking and persistent forms */
static coll_gpu_call_t reduce_scatter_call(const void *sbuf, void *rbuf, const int *rcounts, ompi_datatype_t *dtype,
                                           ompi_op_t *op)
{
    return (coll_gpu_call_t){.kind = COLL_GPU_REDUCE_SCATTER,
                             .sbuf = sbuf,
                             .rbuf = rbuf,
                             .rcounts = rcounts,
                             .sdtype = dtype,
                             .rdtype = dtype,
                             .op = op};
}

static int reduce_scatter(const void *sbuf, void *rbuf, const int *rcounts, ompi_datatype_t *dtype, ompi_op_t *op,
                          ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    coll_gpu_call_t c = reduce_scatter_call(sbuf, rbuf, rcounts, dtype, op);
    return coll_gpu_run(COLL_GPU_MODULE(module), comm, &c, NULL);
}

static int ireduce_scatter(const void *sbuf, void *rbuf, const int *rcounts, ompi_datatype_t *dtype, ompi_op_t *op,
                           ompi_communicator_t *comm, ompi_request_t **request, mca_coll_base_module_t *module)
{
    coll_gpu_call_t c = reduce_scatter_call(sbuf, rbuf, rcounts, dtype, op);
    return coll_gpu_run(COLL_GPU_MODULE(module), comm, &c, request);
}

static int reduce_scatter_init(const void *sbuf, void *rbuf, const int *rcounts, ompi_datatype_t *dtype, ompi_op_t *op,
                               ompi_communicator_t *comm, ompi_info_t *info, ompi_request_t **request,
                               mca_coll_base_module_t *module)
{
    (void)info;
    coll_gpu_call_t c = reduce_scatter_call(sbuf, rbuf, rcounts, dtype, op);
    return coll_gpu_persistent_new(COLL_GPU_MODULE(module), comm, &c, request);
}

/* MPI_Reduce_scatter_block, its nonblocking and persistent forms */
static coll_gpu_call_t reduce_scatter_block_call(const void *sbuf, void *rbuf, int rcount, ompi_datatype_t *dtype,
                                                 ompi_op_t *op)
{
    return (coll_gpu_call_t){.kind = COLL_GPU_REDUCE_SCATTER_BLOCK,
                             .sbuf = sbuf,
                             .rbuf = rbuf,
                             .rcount = (size_t)rcount,
                             .sdtype = dtype,
                             .rdtype = dtype,
                             .op = op};
}

static int reduce_scatter_block(const void *sbuf, void *rbuf, int rcount, ompi_datatype_t *dtype, ompi_op_t *op,
                                ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    coll_gpu_call_t c = reduce_scatter_block_call(sbuf, rbuf, rcount, dtype, op);
    return coll_gpu_run(COLL_GPU_MODULE(module), comm, &c, NULL);
}

static int ireduce_scatter_block(const void *sbuf, void *rbuf, int rcount, ompi_datatype_t *dtype, ompi_op_t *op,
                                 ompi_communicator_t *comm, ompi_request_t **request, mca_coll_base_module_t *module)
{
    coll_gpu_call_t c = reduce_scatter_block_call(sbuf, rbuf, rcount, dtype, op);
    return coll_gpu_run(COLL_GPU_MODULE(module), comm, &c, request);
}

static int reduce_scatter_block_init(const void *sbuf, void *rbuf, int rcount, ompi_datatype_t *dtype, ompi_op_t *op,
                                     ompi_communicator_t *comm, ompi_info_t *info, ompi_request_t **request,
                                     mca_coll_base_module_t *module)
{
    (void)info;
    coll_gpu_call_t c = reduce_scatter_block_call(sbuf, rbuf, rcount, dtype, op);
    return coll_gpu_persistent_new(COLL_GPU_MODULE(module), comm, &c, request);
}

/* MPI_Scan, its nonblocking and persistent forms */
static coll_gpu_call_t scan_call(const void *sbuf, void *rbuf, int count, ompi_datatype_t *dtype, ompi_op_t *op)
{
    return (coll_gpu_call_t){.kind = COLL_GPU_SCAN,
                             .sbuf = sbuf,
                             .rbuf = rbuf,
                             .rcount = (size_t)count,
                             .sdtype = dtype,
                             .rdtype = dtype,
                             .op = op};
}

static int scan(const void *sbuf, void *rbuf, int count, ompi_datatype_t *dtype, ompi_op_t *op,
                ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    coll_gpu_call_t c = scan_call(sbuf, rbuf, count, dtype, op);
    return coll_gpu_run(COLL_GPU_MODULE(module), comm, &c, NULL);
}

static int iscan(const void *sbuf, void *rbuf, int count, ompi_datatype_t *dtype, ompi_op_t *op,
                 ompi_communicator_t *comm, ompi_request_t **request, mca_coll_base_module_t *module)
{
    coll_gpu_call_t c = scan_call(sbuf, rbuf, count, dtype, op);
    return coll_gpu_run(COLL_GPU_MODULE(module), comm, &c, request);
}

static int scan_init(const void *sbuf, void *rbuf, int count, ompi_datatype_t *dtype, ompi_op_t *op,
                     ompi_communicator_t *comm, ompi_info_t *info, ompi_request_t **request,
                     mca_coll_base_module_t *module)
{
    (void)info;
    coll_gpu_call_t c = scan_call(sbuf, rbuf, count, dtype, op);
    return coll_gpu_persistent_new(COLL_GPU_MODULE(module), comm, &c, request);
}

/* MPI_Exscan, its nonblocking and persistent forms */
static coll_gpu_call_t exscan_call(const void *sbuf, void *rbuf, int count, ompi_datatype_t *dtype, ompi_op_t *op)
{
    return (coll_gpu_call_t){.kind = COLL_GPU_EXSCAN,
                             .sbuf = sbuf,
                             .rbuf = rbuf,
                             .rcount = (size_t)count,
                             .sdtype = dtype,
                             .rdtype = dtype,
                             .op = op};
}

static int exscan(const void *sbuf, void *rbuf, int count, ompi_datatype_t *dtype, ompi_op_t *op,
                  ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    coll_gpu_call_t c = exscan_call(sbuf, rbuf, count, dtype, op);
    return coll_gpu_run(COLL_GPU_MODULE(module), comm, &c, NULL);
}

static int iexscan(const void *sbuf, void *rbuf, int count, ompi_datatype_t *dtype, ompi_op_t *op,
                   ompi_communicator_t *comm, ompi_request_t **request, mca_coll_base_module_t *module)
{
    coll_gpu_call_t c = exscan_call(sbuf, rbuf, count, dtype, op);
    return coll_gpu_run(COLL_GPU_MODULE(module), comm, &c, request);
}

static int exscan_init(const void *sbuf, void *rbuf, int count, ompi_datatype_t *dtype, ompi_op_t *op,
                       ompi_communicator_t *comm, ompi_info_t *info, ompi_request_t **request,
                       mca_coll_base_module_t *module)
{
    (void)info;
    coll_gpu_call_t c = exscan_call(sbuf, rbuf, count, dtype, op);
    return coll_gpu_persistent_new(COLL_GPU_MODULE(module), comm, &c, request);
}

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
    m->coll_allreduce = allreduce;
    m->coll_iallreduce = iallreduce;
    m->coll_allreduce_init = allreduce_init;
    m->coll_reduce = reduce;
    m->coll_ireduce = ireduce;
    m->coll_reduce_init = reduce_init;
    m->coll_reduce_scatter = reduce_scatter;
    m->coll_ireduce_scatter = ireduce_scatter;
    m->coll_reduce_scatter_init = reduce_scatter_init;
    m->coll_reduce_scatter_block = reduce_scatter_block;
    m->coll_ireduce_scatter_block = ireduce_scatter_block;
    m->coll_reduce_scatter_block_init = reduce_scatter_block_init;
    if (!inter) {
        m->coll_scan = scan;
        m->coll_iscan = iscan;
        m->coll_scan_init = scan_init;
    }
    if (!inter) {
        m->coll_exscan = exscan;
        m->coll_iexscan = iexscan;
        m->coll_exscan_init = exscan_init;
    }
    if (!inter) {
        m->coll_reduce_local = reduce_local;
        m->coll_barrier = barrier;
    }
}
