/* The entry points of data movement: each names its MPI arguments in a call
 * record and hands it to coll_gpu_run (coll_gpu_route.c), which decides
 * where it runs. */
#include "coll_gpu.h"

/* MPI_Bcast, its nonblocking and persistent forms */
static coll_gpu_call_t bcast_call(void *buf, int count, ompi_datatype_t *dtype, int root)
{
    return (coll_gpu_call_t){
        .kind = COLL_GPU_BCAST, .rbuf = buf, .rcount = (size_t)count, .sdtype = dtype, .rdtype = dtype, .root = root};
}

static int bcast(void *buf, int count, ompi_datatype_t *dtype, int root, ompi_communicator_t *comm,
                 mca_coll_base_module_t *module)
{
    coll_gpu_call_t c = bcast_call(buf, count, dtype, root);
    return coll_gpu_run(COLL_GPU_MODULE(module), comm, &c, NULL);
}

static int ibcast(void *buf, int count, ompi_datatype_t *dtype, int root, ompi_communicator_t *comm,
                  ompi_request_t **request, mca_coll_base_module_t *module)
{
    coll_gpu_call_t c = bcast_call(buf, count, dtype, root);
    return coll_gpu_run(COLL_GPU_MODULE(module), comm, &c, request);
}

static int bcast_init(void *buf, int count, ompi_datatype_t *dtype, int root, ompi_communicator_t *comm,
                      ompi_info_t *info, ompi_request_t **request, mca_coll_base_module_t *module)
{
    (void)info;
    coll_gpu_call_t c = bcast_call(buf, count, dtype, root);
    return coll_gpu_persistent_new(COLL_GPU_MODULE(module), comm, &c, request);
}

/* MPI_Allgather, its nonblocking and persistent forms */
static coll_gpu_call_t allgather_call(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, int rcount,
                                      ompi_datatype_t *rdtype)
{
    return (coll_gpu_call_t){.kind = COLL_GPU_ALLGATHER,
                             .sbuf = sbuf,
                             .scount = (size_t)scount,
                             .sdtype = sdtype,
                             .rbuf = rbuf,
                             .rcount = (size_t)rcount,
                             .rdtype = rdtype};
}

static int allgather(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, int rcount,
                     ompi_datatype_t *rdtype, ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    coll_gpu_call_t c = allgather_call(sbuf, scount, sdtype, rbuf, rcount, rdtype);
    return coll_gpu_run(COLL_GPU_MODULE(module), comm, &c, NULL);
}

static int iallgather(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, int rcount,
                      ompi_datatype_t *rdtype, ompi_communicator_t *comm, ompi_request_t **request,
                      mca_coll_base_module_t *module)
{
    coll_gpu_call_t c = allgather_call(sbuf, scount, sdtype, rbuf, rcount, rdtype);
    return coll_gpu_run(COLL_GPU_MODULE(module), comm, &c, request);
}

static int allgather_init(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, int rcount,
                          ompi_datatype_t *rdtype, ompi_communicator_t *comm, ompi_info_t *info,
                          ompi_request_t **request, mca_coll_base_module_t *module)
{
    (void)info;
    coll_gpu_call_t c = allgather_call(sbuf, scount, sdtype, rbuf, rcount, rdtype);
    return coll_gpu_persistent_new(COLL_GPU_MODULE(module), comm, &c, request);
}

/* MPI_Allgatherv, its nonblocking and persistent forms */
static coll_gpu_call_t allgatherv_call(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf,
                                       const int *rcounts, const int *displs, ompi_datatype_t *rdtype)
{
    return (coll_gpu_call_t){.kind = COLL_GPU_ALLGATHERV,
                             .sbuf = sbuf,
                             .scount = (size_t)scount,
                             .sdtype = sdtype,
                             .rbuf = rbuf,
                             .rcounts = rcounts,
                             .rdispls = displs,
                             .rdtype = rdtype};
}

static int allgatherv(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, const int *rcounts,
                      const int *displs, ompi_datatype_t *rdtype, ompi_communicator_t *comm,
                      mca_coll_base_module_t *module)
{
    coll_gpu_call_t c = allgatherv_call(sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype);
    return coll_gpu_run(COLL_GPU_MODULE(module), comm, &c, NULL);
}

static int iallgatherv(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, const int *rcounts,
                       const int *displs, ompi_datatype_t *rdtype, ompi_communicator_t *comm, ompi_request_t **request,
                       mca_coll_base_module_t *module)
{
    coll_gpu_call_t c = allgatherv_call(sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype);
    return coll_gpu_run(COLL_GPU_MODULE(module), comm, &c, request);
}

static int allgatherv_init(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, const int *rcounts,
                           const int *displs, ompi_datatype_t *rdtype, ompi_communicator_t *comm, ompi_info_t *info,
                           ompi_request_t **request, mca_coll_base_module_t *module)
{
    (void)info;
    coll_gpu_call_t c = allgatherv_call(sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype);
    return coll_gpu_persistent_new(COLL_GPU_MODULE(module), comm, &c, request);
}

/* MPI_Alltoall, its nonblocking and persistent forms */
static coll_gpu_call_t alltoall_call(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, int rcount,
                                     ompi_datatype_t *rdtype)
{
    return (coll_gpu_call_t){.kind = COLL_GPU_ALLTOALL,
                             .sbuf = sbuf,
                             .scount = (size_t)scount,
                             .sdtype = sdtype,
                             .rbuf = rbuf,
                             .rcount = (size_t)rcount,
                             .rdtype = rdtype};
}

static int alltoall(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, int rcount,
                    ompi_datatype_t *rdtype, ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    coll_gpu_call_t c = alltoall_call(sbuf, scount, sdtype, rbuf, rcount, rdtype);
    return coll_gpu_run(COLL_GPU_MODULE(module), comm, &c, NULL);
}

static int ialltoall(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, int rcount,
                     ompi_datatype_t *rdtype, ompi_communicator_t *comm, ompi_request_t **request,
                     mca_coll_base_module_t *module)
{
    coll_gpu_call_t c = alltoall_call(sbuf, scount, sdtype, rbuf, rcount, rdtype);
    return coll_gpu_run(COLL_GPU_MODULE(module), comm, &c, request);
}

static int alltoall_init(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, int rcount,
                         ompi_datatype_t *rdtype, ompi_communicator_t *comm, ompi_info_t *info,
                         ompi_request_t **request, mca_coll_base_module_t *module)
{
    (void)info;
    coll_gpu_call_t c = alltoall_call(sbuf, scount, sdtype, rbuf, rcount, rdtype);
    return coll_gpu_persistent_new(COLL_GPU_MODULE(module), comm, &c, request);
}

/* MPI_Alltoallv, its nonblocking and persistent forms */
static coll_gpu_call_t alltoallv_call(const void *sbuf, const int *scounts, const int *sdispls, ompi_datatype_t *sdtype,
                                      void *rbuf, const int *rcounts, const int *rdispls, ompi_datatype_t *rdtype)
{
    return (coll_gpu_call_t){.kind = COLL_GPU_ALLTOALLV,
                             .sbuf = sbuf,
                             .scounts = scounts,
                             .sdispls = sdispls,
                             .sdtype = sdtype,
                             .rbuf = rbuf,
                             .rcounts = rcounts,
                             .rdispls = rdispls,
                             .rdtype = rdtype};
}

static int alltoallv(const void *sbuf, const int *scounts, const int *sdispls, ompi_datatype_t *sdtype, void *rbuf,
                     const int *rcounts, const int *rdispls, ompi_datatype_t *rdtype, ompi_communicator_t *comm,
                     mca_coll_base_module_t *module)
{
    coll_gpu_call_t c = alltoallv_call(sbuf, scounts, sdispls, sdtype, rbuf, rcounts, rdispls, rdtype);
    return coll_gpu_run(COLL_GPU_MODULE(module), comm, &c, NULL);
}

static int ialltoallv(const void *sbuf, const int *scounts, const int *sdispls, ompi_datatype_t *sdtype, void *rbuf,
                      const int *rcounts, const int *rdispls, ompi_datatype_t *rdtype, ompi_communicator_t *comm,
                      ompi_request_t **request, mca_coll_base_module_t *module)
{
    coll_gpu_call_t c = alltoallv_call(sbuf, scounts, sdispls, sdtype, rbuf, rcounts, rdispls, rdtype);
    return coll_gpu_run(COLL_GPU_MODULE(module), comm, &c, request);
}

static int alltoallv_init(const void *sbuf, const int *scounts, const int *sdispls, ompi_datatype_t *sdtype, void *rbuf,
                          const int *rcounts, const int *rdispls, ompi_datatype_t *rdtype, ompi_communicator_t *comm,
                          ompi_info_t *info, ompi_request_t **request, mca_coll_base_module_t *module)
{
    (void)info;
    coll_gpu_call_t c = alltoallv_call(sbuf, scounts, sdispls, sdtype, rbuf, rcounts, rdispls, rdtype);
    return coll_gpu_persistent_new(COLL_GPU_MODULE(module), comm, &c, request);
}

/* MPI_Alltoallw, its nonblocking and persistent forms */
static coll_gpu_call_t alltoallw_call(const void *sbuf, const int *scounts, const int *sdispls,
                                      ompi_datatype_t *const *sdtypes, void *rbuf, const int *rcounts,
                                      const int *rdispls, ompi_datatype_t *const *rdtypes)
{
    return (coll_gpu_call_t){.kind = COLL_GPU_ALLTOALLW,
                             .sbuf = sbuf,
                             .scounts = scounts,
                             .sdispls = sdispls,
                             .sdtypes = sdtypes,
                             .rbuf = rbuf,
                             .rcounts = rcounts,
                             .rdispls = rdispls,
                             .rdtypes = rdtypes};
}

static int alltoallw(const void *sbuf, const int *scounts, const int *sdispls, ompi_datatype_t *const *sdtypes,
                     void *rbuf, const int *rcounts, const int *rdispls, ompi_datatype_t *const *rdtypes,
                     ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    coll_gpu_call_t c = alltoallw_call(sbuf, scounts, sdispls, sdtypes, rbuf, rcounts, rdispls, rdtypes);
    return coll_gpu_run(COLL_GPU_MODULE(module), comm, &c, NULL);
}

static int ialltoallw(const void *sbuf, const int *scounts, const int *sdispls, ompi_datatype_t *const *sdtypes,
                      void *rbuf, const int *rcounts, const int *rdispls, ompi_datatype_t *const *rdtypes,
                      ompi_communicator_t *comm, ompi_request_t **request, mca_coll_base_module_t *module)
{
    coll_gpu_call_t c = alltoallw_call(sbuf, scounts, sdispls, sdtypes, rbuf, rcounts, rdispls, rdtypes);
    return coll_gpu_run(COLL_GPU_MODULE(module), comm, &c, request);
}

static int alltoallw_init(const void *sbuf, const int *scounts, const int *sdispls, ompi_datatype_t *const *sdtypes,
                          void *rbuf, const int *rcounts, const int *rdispls, ompi_datatype_t *const *rdtypes,
                          ompi_communicator_t *comm, ompi_info_t *info, ompi_request_t **request,
                          mca_coll_base_module_t *module)
{
    (void)info;
    coll_gpu_call_t c = alltoallw_call(sbuf, scounts, sdispls, sdtypes, rbuf, rcounts, rdispls, rdtypes);
    return coll_gpu_persistent_new(COLL_GPU_MODULE(module), comm, &c, request);
}

/* MPI_Gather, its nonblocking and persistent forms */
static coll_gpu_call_t gather_call(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, int rcount,
                                   ompi_datatype_t *rdtype, int root)
{
    return (coll_gpu_call_t){.kind = COLL_GPU_GATHER,
                             .sbuf = sbuf,
                             .scount = (size_t)scount,
                             .sdtype = sdtype,
                             .rbuf = rbuf,
                             .rcount = (size_t)rcount,
                             .rdtype = rdtype,
                             .root = root};
}

static int gather(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, int rcount,
                  ompi_datatype_t *rdtype, int root, ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    coll_gpu_call_t c = gather_call(sbuf, scount, sdtype, rbuf, rcount, rdtype, root);
    return coll_gpu_run(COLL_GPU_MODULE(module), comm, &c, NULL);
}

static int igather(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, int rcount,
                   ompi_datatype_t *rdtype, int root, ompi_communicator_t *comm, ompi_request_t **request,
                   mca_coll_base_module_t *module)
{
    coll_gpu_call_t c = gather_call(sbuf, scount, sdtype, rbuf, rcount, rdtype, root);
    return coll_gpu_run(COLL_GPU_MODULE(module), comm, &c, request);
}

static int gather_init(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, int rcount,
                       ompi_datatype_t *rdtype, int root, ompi_communicator_t *comm, ompi_info_t *info,
                       ompi_request_t **request, mca_coll_base_module_t *module)
{
    (void)info;
    coll_gpu_call_t c = gather_call(sbuf, scount, sdtype, rbuf, rcount, rdtype, root);
    return coll_gpu_persistent_new(COLL_GPU_MODULE(module), comm, &c, request);
}

/* MPI_Gatherv, its nonblocking and persistent forms */
static coll_gpu_call_t gatherv_call(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf,
                                    const int *rcounts, const int *displs, ompi_datatype_t *rdtype, int root)
{
    return (coll_gpu_call_t){.kind = COLL_GPU_GATHERV,
                             .sbuf = sbuf,
                             .scount = (size_t)scount,
                             .sdtype = sdtype,
                             .rbuf = rbuf,
                             .rcounts = rcounts,
                             .rdispls = displs,
                             .rdtype = rdtype,
                             .root = root};
}

static int gatherv(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, const int *rcounts,
                   const int *displs, ompi_datatype_t *rdtype, int root, ompi_communicator_t *comm,
                   mca_coll_base_module_t *module)
{
    coll_gpu_call_t c = gatherv_call(sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype, root);
    return coll_gpu_run(COLL_GPU_MODULE(module), comm, &c, NULL);
}

static int igatherv(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, const int *rcounts,
                    const int *displs, ompi_datatype_t *rdtype, int root, ompi_communicator_t *comm,
                    ompi_request_t **request, mca_coll_base_module_t *module)
{
    coll_gpu_call_t c = gatherv_call(sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype, root);
    return coll_gpu_run(COLL_GPU_MODULE(module), comm, &c, request);
}

static int gatherv_init(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, const int *rcounts,
                        const int *displs, ompi_datatype_t *rdtype, int root, ompi_communicator_t *comm,
                        ompi_info_t *info, ompi_request_t **request, mca_coll_base_module_t *module)
{
    (void)info;
    coll_gpu_call_t c = gatherv_call(sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype, root);
    return coll_gpu_persistent_new(COLL_GPU_MODULE(module), comm, &c, request);
}

/* MPI_Scatter, its nonblocking and persistent forms */
static coll_gpu_call_t scatter_call(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, int rcount,
                                    ompi_datatype_t *rdtype, int root)
{
    return (coll_gpu_call_t){.kind = COLL_GPU_SCATTER,
                             .sbuf = sbuf,
                             .scount = (size_t)scount,
                             .sdtype = sdtype,
                             .rbuf = rbuf,
                             .rcount = (size_t)rcount,
                             .rdtype = rdtype,
                             .root = root};
}

static int scatter(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, int rcount,
                   ompi_datatype_t *rdtype, int root, ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    coll_gpu_call_t c = scatter_call(sbuf, scount, sdtype, rbuf, rcount, rdtype, root);
    return coll_gpu_run(COLL_GPU_MODULE(module), comm, &c, NULL);
}

static int iscatter(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, int rcount,
                    ompi_datatype_t *rdtype, int root, ompi_communicator_t *comm, ompi_request_t **request,
                    mca_coll_base_module_t *module)
{
    coll_gpu_call_t c = scatter_call(sbuf, scount, sdtype, rbuf, rcount, rdtype, root);
    return coll_gpu_run(COLL_GPU_MODULE(module), comm, &c, request);
}

static int scatter_init(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, int rcount,
                        ompi_datatype_t *rdtype, int root, ompi_communicator_t *comm, ompi_info_t *info,
                        ompi_request_t **request, mca_coll_base_module_t *module)
{
    (void)info;
    coll_gpu_call_t c = scatter_call(sbuf, scount, sdtype, rbuf, rcount, rdtype, root);
    return coll_gpu_persistent_new(COLL_GPU_MODULE(module), comm, &c, request);
}

/* MPI_Scatterv, its nonblocking and persistent forms */
static coll_gpu_call_t scatterv_call(const void *sbuf, const int *scounts, const int *displs, ompi_datatype_t *sdtype,
                                     void *rbuf, int rcount, ompi_datatype_t *rdtype, int root)
{
    return (coll_gpu_call_t){.kind = COLL_GPU_SCATTERV,
                             .sbuf = sbuf,
                             .scounts = scounts,
                             .sdtype = sdtype,
                             .rbuf = rbuf,
                             .rcount = (size_t)rcount,
                             .sdispls = displs,
                             .rdtype = rdtype,
                             .root = root};
}

static int scatterv(const void *sbuf, const int *scounts, const int *displs, ompi_datatype_t *sdtype, void *rbuf,
                    int rcount, ompi_datatype_t *rdtype, int root, ompi_communicator_t *comm,
                    mca_coll_base_module_t *module)
{
    coll_gpu_call_t c = scatterv_call(sbuf, scounts, displs, sdtype, rbuf, rcount, rdtype, root);
    return coll_gpu_run(COLL_GPU_MODULE(module), comm, &c, NULL);
}

static int iscatterv(const void *sbuf, const int *scounts, const int *displs, ompi_datatype_t *sdtype, void *rbuf,
                     int rcount, ompi_datatype_t *rdtype, int root, ompi_communicator_t *comm, ompi_request_t **request,
                     mca_coll_base_module_t *module)
{
    coll_gpu_call_t c = scatterv_call(sbuf, scounts, displs, sdtype, rbuf, rcount, rdtype, root);
    return coll_gpu_run(COLL_GPU_MODULE(module), comm, &c, request);
}

static int scatterv_init(const void *sbuf, const int *scounts, const int *displs, ompi_datatype_t *sdtype, void *rbuf,
                         int rcount, ompi_datatype_t *rdtype, int root, ompi_communicator_t *comm, ompi_info_t *info,
                         ompi_request_t **request, mca_coll_base_module_t *module)
{
    (void)info;
    coll_gpu_call_t c = scatterv_call(sbuf, scounts, displs, sdtype, rbuf, rcount, rdtype, root);
    return coll_gpu_persistent_new(COLL_GPU_MODULE(module), comm, &c, request);
}

void coll_gpu_entries_install_movement(mca_coll_base_module_t *m)
{
    m->coll_bcast = bcast;
    m->coll_ibcast = ibcast;
    m->coll_bcast_init = bcast_init;
    m->coll_allgather = allgather;
    m->coll_iallgather = iallgather;
    m->coll_allgather_init = allgather_init;
    m->coll_allgatherv = allgatherv;
    m->coll_iallgatherv = iallgatherv;
    m->coll_allgatherv_init = allgatherv_init;
    m->coll_alltoall = alltoall;
    m->coll_ialltoall = ialltoall;
    m->coll_alltoall_init = alltoall_init;
    m->coll_alltoallv = alltoallv;
    m->coll_ialltoallv = ialltoallv;
    m->coll_alltoallv_init = alltoallv_init;
    m->coll_alltoallw = alltoallw;
    m->coll_ialltoallw = ialltoallw;
    m->coll_alltoallw_init = alltoallw_init;
    m->coll_gather = gather;
    m->coll_igather = igather;
    m->coll_gather_init = gather_init;
    m->coll_gatherv = gatherv;
    m->coll_igatherv = igatherv;
    m->coll_gatherv_init = gatherv_init;
    m->coll_scatter = scatter;
    m->coll_iscatter = iscatter;
    m->coll_scatter_init = scatter_init;
    m->coll_scatterv = scatterv;
    m->coll_iscatterv = iscatterv;
    m->coll_scatterv_init = scatterv_init;
}
