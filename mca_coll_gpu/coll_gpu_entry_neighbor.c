/* The entry points of the neighbourhood collectives (communicators with a
 * topology): staged through host memory where a buffer is on the device
 * (Open MPI's own modules send device pointers point to point, a crash
 * without a CUDA-aware PML); neighbour exchanges are halo-sized and have no
 * peer kernel. */
#include "coll_gpu.h"

/* MPI_Neighbor_allgather, its nonblocking and persistent forms */
static coll_gpu_call_t neighbor_allgather_call(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf,
                                               int rcount, ompi_datatype_t *rdtype)
{
    return (coll_gpu_call_t){.kind = COLL_GPU_NEIGHBOR_ALLGATHER,
                             .sbuf = sbuf,
                             .scount = (size_t)scount,
                             .sdtype = sdtype,
                             .rbuf = rbuf,
                             .rcount = (size_t)rcount,
                             .rdtype = rdtype};
}

static int neighbor_allgather(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, int rcount,
                              ompi_datatype_t *rdtype, ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    coll_gpu_call_t c = neighbor_allgather_call(sbuf, scount, sdtype, rbuf, rcount, rdtype);
    return coll_gpu_run(COLL_GPU_MODULE(module), comm, &c, NULL);
}

static int ineighbor_allgather(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, int rcount,
                               ompi_datatype_t *rdtype, ompi_communicator_t *comm, ompi_request_t **request,
                               mca_coll_base_module_t *module)
{
    coll_gpu_call_t c = neighbor_allgather_call(sbuf, scount, sdtype, rbuf, rcount, rdtype);
    return coll_gpu_run(COLL_GPU_MODULE(module), comm, &c, request);
}

static int neighbor_allgather_init(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, int rcount,
                                   ompi_datatype_t *rdtype, ompi_communicator_t *comm, ompi_info_t *info,
                                   ompi_request_t **request, mca_coll_base_module_t *module)
{
    (void)info;
    coll_gpu_call_t c = neighbor_allgather_call(sbuf, scount, sdtype, rbuf, rcount, rdtype);
    return coll_gpu_persistent_new(COLL_GPU_MODULE(module), comm, &c, request);
}

/* MPI_Neighbor_allgatherv, its nonblocking and persistent forms */
static coll_gpu_call_t neighbor_allgatherv_call(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf,
                                                const int *rcounts, const int *displs, ompi_datatype_t *rdtype)
{
    return (coll_gpu_call_t){.kind = COLL_GPU_NEIGHBOR_ALLGATHERV,
                             .sbuf = sbuf,
                             .scount = (size_t)scount,
                             .sdtype = sdtype,
                             .rbuf = rbuf,
                             .rcounts = rcounts,
                             .rdispls = displs,
                             .rdtype = rdtype};
}

static int neighbor_allgatherv(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, const int *rcounts,
                               const int *displs, ompi_datatype_t *rdtype, ompi_communicator_t *comm,
                               mca_coll_base_module_t *module)
{
    coll_gpu_call_t c = neighbor_allgatherv_call(sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype);
    return coll_gpu_run(COLL_GPU_MODULE(module), comm, &c, NULL);
}

static int ineighbor_allgatherv(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, const int *rcounts,
                                const int *displs, ompi_datatype_t *rdtype, ompi_communicator_t *comm,
                                ompi_request_t **request, mca_coll_base_module_t *module)
{
    coll_gpu_call_t c = neighbor_allgatherv_call(sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype);
    return coll_gpu_run(COLL_GPU_MODULE(module), comm, &c, request);
}

static int neighbor_allgatherv_init(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf,
                                    const int *rcounts, const int *displs, ompi_datatype_t *rdtype,
                                    ompi_communicator_t *comm, ompi_info_t *info, ompi_request_t **request,
                                    mca_coll_base_module_t *module)
{
    (void)info;
    coll_gpu_call_t c = neighbor_allgatherv_call(sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype);
    return coll_gpu_persistent_new(COLL_GPU_MODULE(module), comm, &c, request);
}

/* MPI_Neighbor_alltoall, its nonblocking and persistent forms */
static coll_gpu_call_t neighbor_alltoall_call(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf,
                                              int rcount, ompi_datatype_t *rdtype)
{
    return (coll_gpu_call_t){.kind = COLL_GPU_NEIGHBOR_ALLTOALL,
                             .sbuf = sbuf,
                             .scount = (size_t)scount,
                             .sdtype = sdtype,
                             .rbuf = rbuf,
                             .rcount = (size_t)rcount,
                             .rdtype = rdtype};
}

static int neighbor_alltoall(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, int rcount,
                             ompi_datatype_t *rdtype, ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    coll_gpu_call_t c = neighbor_alltoall_call(sbuf, scount, sdtype, rbuf, rcount, rdtype);
    return coll_gpu_run(COLL_GPU_MODULE(module), comm, &c, NULL);
}

static int ineighbor_alltoall(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, int rcount,
                              ompi_datatype_t *rdtype, ompi_communicator_t *comm, ompi_request_t **request,
                              mca_coll_base_module_t *module)
{
    coll_gpu_call_t c = neighbor_alltoall_call(sbuf, scount, sdtype, rbuf, rcount, rdtype);
    return coll_gpu_run(COLL_GPU_MODULE(module), comm, &c, request);
}

static int neighbor_alltoall_init(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, int rcount,
                                  ompi_datatype_t *rdtype, ompi_communicator_t *comm, ompi_info_t *info,
                                  ompi_request_t **request, mca_coll_base_module_t *module)
{
    (void)info;
    coll_gpu_call_t c = neighbor_alltoall_call(sbuf, scount, sdtype, rbuf, rcount, rdtype);
    return coll_gpu_persistent_new(COLL_GPU_MODULE(module), comm, &c, request);
}

/* MPI_Neighbor_alltoallv, its nonblocking and persistent forms */
static coll_gpu_call_t neighbor_alltoallv_call(const void *sbuf, const int *scounts, const int *sdispls,
                                               ompi_datatype_t *sdtype, void *rbuf, const int *rcounts,
                                               const int *rdispls, ompi_datatype_t *rdtype)
{
    return (coll_gpu_call_t){.kind = COLL_GPU_NEIGHBOR_ALLTOALLV,
                             .sbuf = sbuf,
                             .scounts = scounts,
                             .sdispls = sdispls,
                             .sdtype = sdtype,
                             .rbuf = rbuf,
                             .rcounts = rcounts,
                             .rdispls = rdispls,
                             .rdtype = rdtype};
}

static int neighbor_alltoallv(const void *sbuf, const int *scounts, const int *sdispls, ompi_datatype_t *sdtype,
                              void *rbuf, const int *rcounts, const int *rdispls, ompi_datatype_t *rdtype,
                              ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    coll_gpu_call_t c = neighbor_alltoallv_call(sbuf, scounts, sdispls, sdtype, rbuf, rcounts, rdispls, rdtype);
    return coll_gpu_run(COLL_GPU_MODULE(module), comm, &c, NULL);
}

static int ineighbor_alltoallv(const void *sbuf, const int *scounts, const int *sdispls, ompi_datatype_t *sdtype,
                               void *rbuf, const int *rcounts, const int *rdispls, ompi_datatype_t *rdtype,
                               ompi_communicator_t *comm, ompi_request_t **request, mca_coll_base_module_t *module)
{
    coll_gpu_call_t c = neighbor_alltoallv_call(sbuf, scounts, sdispls, sdtype, rbuf, rcounts, rdispls, rdtype);
    return coll_gpu_run(COLL_GPU_MODULE(module), comm, &c, request);
}

static int neighbor_alltoallv_init(const void *sbuf, const int *scounts, const int *sdispls, ompi_datatype_t *sdtype,
                                   void *rbuf, const int *rcounts, const int *rdispls, ompi_datatype_t *rdtype,
                                   ompi_communicator_t *comm, ompi_info_t *info, ompi_request_t **request,
                                   mca_coll_base_module_t *module)
{
    (void)info;
    coll_gpu_call_t c = neighbor_alltoallv_call(sbuf, scounts, sdispls, sdtype, rbuf, rcounts, rdispls, rdtype);
    return coll_gpu_persistent_new(COLL_GPU_MODULE(module), comm, &c, request);
}

/* MPI_Neighbor_alltoallw, its nonblocking and persistent forms */
static coll_gpu_call_t neighbor_alltoallw_call(const void *sbuf, const int *scounts, const MPI_Aint *sdispls,
                                               ompi_datatype_t *const *sdtypes, void *rbuf, const int *rcounts,
                                               const MPI_Aint *rdispls, ompi_datatype_t *const *rdtypes)
{
    return (coll_gpu_call_t){.kind = COLL_GPU_NEIGHBOR_ALLTOALLW,
                             .sbuf = sbuf,
                             .scounts = scounts,
                             .sdispls_aint = sdispls,
                             .sdtypes = sdtypes,
                             .rbuf = rbuf,
                             .rcounts = rcounts,
                             .rdispls_aint = rdispls,
                             .rdtypes = rdtypes};
}

static int neighbor_alltoallw(const void *sbuf, const int *scounts, const MPI_Aint *sdispls,
                              ompi_datatype_t *const *sdtypes, void *rbuf, const int *rcounts, const MPI_Aint *rdispls,
                              ompi_datatype_t *const *rdtypes, ompi_communicator_t *comm,
                              mca_coll_base_module_t *module)
{
    coll_gpu_call_t c = neighbor_alltoallw_call(sbuf, scounts, sdispls, sdtypes, rbuf, rcounts, rdispls, rdtypes);
    return coll_gpu_run(COLL_GPU_MODULE(module), comm, &c, NULL);
}

static int ineighbor_alltoallw(const void *sbuf, const int *scounts, const MPI_Aint *sdispls,
                               ompi_datatype_t *const *sdtypes, void *rbuf, const int *rcounts, const MPI_Aint *rdispls,
                               ompi_datatype_t *const *rdtypes, ompi_communicator_t *comm, ompi_request_t **request,
                               mca_coll_base_module_t *module)
{
    coll_gpu_call_t c = neighbor_alltoallw_call(sbuf, scounts, sdispls, sdtypes, rbuf, rcounts, rdispls, rdtypes);
    return coll_gpu_run(COLL_GPU_MODULE(module), comm, &c, request);
}

static int neighbor_alltoallw_init(const void *sbuf, const int *scounts, const MPI_Aint *sdispls,
                                   ompi_datatype_t *const *sdtypes, void *rbuf, const int *rcounts,
                                   const MPI_Aint *rdispls, ompi_datatype_t *const *rdtypes, ompi_communicator_t *comm,
                                   ompi_info_t *info, ompi_request_t **request, mca_coll_base_module_t *module)
{
    (void)info;
    coll_gpu_call_t c = neighbor_alltoallw_call(sbuf, scounts, sdispls, sdtypes, rbuf, rcounts, rdispls, rdtypes);
    return coll_gpu_persistent_new(COLL_GPU_MODULE(module), comm, &c, request);
}

void coll_gpu_entries_install_neighbor(mca_coll_base_module_t *m)
{
    m->coll_neighbor_allgather = neighbor_allgather;
    m->coll_ineighbor_allgather = ineighbor_allgather;
    m->coll_neighbor_allgather_init = neighbor_allgather_init;
    m->coll_neighbor_allgatherv = neighbor_allgatherv;
    m->coll_ineighbor_allgatherv = ineighbor_allgatherv;
    m->coll_neighbor_allgatherv_init = neighbor_allgatherv_init;
    m->coll_neighbor_alltoall = neighbor_alltoall;
    m->coll_ineighbor_alltoall = ineighbor_alltoall;
    m->coll_neighbor_alltoall_init = neighbor_alltoall_init;
    m->coll_neighbor_alltoallv = neighbor_alltoallv;
    m->coll_ineighbor_alltoallv = ineighbor_alltoallv;
    m->coll_neighbor_alltoallv_init = neighbor_alltoallv_init;
    m->coll_neighbor_alltoallw = neighbor_alltoallw;
    m->coll_ineighbor_alltoallw = ineighbor_alltoallw;
    m->coll_neighbor_alltoallw_init = neighbor_alltoallw_init;
}
