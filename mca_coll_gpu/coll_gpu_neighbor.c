/* MPI_Neighbor_allgather(v) / alltoall(v,w) and their nonblocking forms on
 * communicators with a topology.
 *
 * Open MPI's own neighbourhood collectives (coll/basic, coll/libnbc) send
 * and receive the user's buffers point to point, which without a CUDA-aware
 * PML means host memcpy on device pointers: a crash. Device buffers are
 * staged through host memory here; neighbour exchanges are halo-sized and
 * have no peer kernel. The persistent forms are in coll_gpu_persistent.c.
 *
 * The block counts come from the topology: blocks are sent to the
 * outdegree neighbours and received from the indegree ones. A receive block
 * from MPI_PROC_NULL (a non-periodic Cartesian edge) is not written by the
 * collective, so receive buffers are always copied in as well as back. */
#include "coll_gpu.h"

#include "ompi/mca/topo/base/base.h"

/* False where the communicator has no topology: the displaced module is
 * called as is and reports that itself. */
static bool degrees(ompi_communicator_t *comm, int *in, int *out)
{
    *in = *out = 0;
    return OMPI_COMM_IS_TOPO(comm) && mca_topo_base_neighbor_count(comm, in, out) == OMPI_SUCCESS;
}

static int allgather_staged(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, int rcount,
                            ompi_datatype_t *rdtype, ompi_communicator_t *comm, ompi_request_t **request,
                            mca_coll_gpu_module_t *m)
{
    int in, out, rc;
    if (!degrees(comm, &in, &out))
        return request ? m->prev.ineighbor_allgather(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, request,
                                                     m->prev.ineighbor_allgather_module)
                       : m->prev.neighbor_allgather(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm,
                                                    m->prev.neighbor_allgather_module);
    coll_gpu_stage_t *st = coll_gpu_stage_new();
    const void *hs = coll_gpu_stage(st, sbuf, sdtype, (size_t)scount, true, false);
    void *hr = coll_gpu_stage(st, rbuf, rdtype, (size_t)rcount * (size_t)in, true, true);
    if ((rc = coll_gpu_stage_failed(st))) return rc;
    rc = request ? m->prev.ineighbor_allgather(hs, scount, sdtype, hr, rcount, rdtype, comm, request,
                                               m->prev.ineighbor_allgather_module)
                 : m->prev.neighbor_allgather(hs, scount, sdtype, hr, rcount, rdtype, comm,
                                              m->prev.neighbor_allgather_module);
    return coll_gpu_stage_finish(st, rc, comm, request);
}

int mca_coll_gpu_neighbor_allgather(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, int rcount,
                                    ompi_datatype_t *rdtype, ompi_communicator_t *comm,
                                    mca_coll_base_module_t *module)
{
    mca_coll_gpu_module_t *m = COLL_GPU_MODULE(module);
    if (!coll_gpu_data_on_device(sbuf, sdtype, 0) && !coll_gpu_data_on_device(rbuf, rdtype, 0))
        return m->prev.neighbor_allgather(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm,
                                          m->prev.neighbor_allgather_module);
    return allgather_staged(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, NULL, m);
}

int mca_coll_gpu_ineighbor_allgather(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, int rcount,
                                     ompi_datatype_t *rdtype, ompi_communicator_t *comm, ompi_request_t **request,
                                     mca_coll_base_module_t *module)
{
    mca_coll_gpu_module_t *m = COLL_GPU_MODULE(module);
    if (!coll_gpu_data_on_device(sbuf, sdtype, 0) && !coll_gpu_data_on_device(rbuf, rdtype, 0))
        return m->prev.ineighbor_allgather(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, request,
                                           m->prev.ineighbor_allgather_module);
    return allgather_staged(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, request, m);
}

static int allgatherv_staged(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, const int *rcounts,
                             const int *displs, ompi_datatype_t *rdtype, ompi_communicator_t *comm,
                             ompi_request_t **request, mca_coll_gpu_module_t *m)
{
    int in, out, rc;
    if (!degrees(comm, &in, &out))
        return request ? m->prev.ineighbor_allgatherv(sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype, comm,
                                                      request, m->prev.ineighbor_allgatherv_module)
                       : m->prev.neighbor_allgatherv(sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype, comm,
                                                     m->prev.neighbor_allgatherv_module);
    coll_gpu_stage_t *st = coll_gpu_stage_new();
    const void *hs = coll_gpu_stage(st, sbuf, sdtype, (size_t)scount, true, false);
    void *hr = coll_gpu_stage_v(st, rbuf, rdtype, rcounts, displs, in, true, true);
    if ((rc = coll_gpu_stage_failed(st))) return rc;
    rc = request ? m->prev.ineighbor_allgatherv(hs, scount, sdtype, hr, rcounts, displs, rdtype, comm, request,
                                                m->prev.ineighbor_allgatherv_module)
                 : m->prev.neighbor_allgatherv(hs, scount, sdtype, hr, rcounts, displs, rdtype, comm,
                                               m->prev.neighbor_allgatherv_module);
    return coll_gpu_stage_finish(st, rc, comm, request);
}

int mca_coll_gpu_neighbor_allgatherv(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf,
                                     const int *rcounts, const int *displs, ompi_datatype_t *rdtype,
                                     ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_gpu_module_t *m = COLL_GPU_MODULE(module);
    if (!coll_gpu_data_on_device(sbuf, sdtype, 0) && !coll_gpu_data_on_device(rbuf, rdtype, 0))
        return m->prev.neighbor_allgatherv(sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype, comm,
                                           m->prev.neighbor_allgatherv_module);
    return allgatherv_staged(sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype, comm, NULL, m);
}

int mca_coll_gpu_ineighbor_allgatherv(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf,
                                      const int *rcounts, const int *displs, ompi_datatype_t *rdtype,
                                      ompi_communicator_t *comm, ompi_request_t **request,
                                      mca_coll_base_module_t *module)
{
    mca_coll_gpu_module_t *m = COLL_GPU_MODULE(module);
    if (!coll_gpu_data_on_device(sbuf, sdtype, 0) && !coll_gpu_data_on_device(rbuf, rdtype, 0))
        return m->prev.ineighbor_allgatherv(sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype, comm, request,
                                            m->prev.ineighbor_allgatherv_module);
    return allgatherv_staged(sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype, comm, request, m);
}

static int alltoall_staged(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, int rcount,
                           ompi_datatype_t *rdtype, ompi_communicator_t *comm, ompi_request_t **request,
                           mca_coll_gpu_module_t *m)
{
    int in, out, rc;
    if (!degrees(comm, &in, &out))
        return request ? m->prev.ineighbor_alltoall(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, request,
                                                    m->prev.ineighbor_alltoall_module)
                       : m->prev.neighbor_alltoall(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm,
                                                   m->prev.neighbor_alltoall_module);
    coll_gpu_stage_t *st = coll_gpu_stage_new();
    const void *hs = coll_gpu_stage(st, sbuf, sdtype, (size_t)scount * (size_t)out, true, false);
    void *hr = coll_gpu_stage(st, rbuf, rdtype, (size_t)rcount * (size_t)in, true, true);
    if ((rc = coll_gpu_stage_failed(st))) return rc;
    rc = request ? m->prev.ineighbor_alltoall(hs, scount, sdtype, hr, rcount, rdtype, comm, request,
                                              m->prev.ineighbor_alltoall_module)
                 : m->prev.neighbor_alltoall(hs, scount, sdtype, hr, rcount, rdtype, comm,
                                             m->prev.neighbor_alltoall_module);
    return coll_gpu_stage_finish(st, rc, comm, request);
}

int mca_coll_gpu_neighbor_alltoall(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, int rcount,
                                   ompi_datatype_t *rdtype, ompi_communicator_t *comm,
                                   mca_coll_base_module_t *module)
{
    mca_coll_gpu_module_t *m = COLL_GPU_MODULE(module);
    if (!coll_gpu_data_on_device(sbuf, sdtype, 0) && !coll_gpu_data_on_device(rbuf, rdtype, 0))
        return m->prev.neighbor_alltoall(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm,
                                         m->prev.neighbor_alltoall_module);
    return alltoall_staged(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, NULL, m);
}

int mca_coll_gpu_ineighbor_alltoall(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, int rcount,
                                    ompi_datatype_t *rdtype, ompi_communicator_t *comm, ompi_request_t **request,
                                    mca_coll_base_module_t *module)
{
    mca_coll_gpu_module_t *m = COLL_GPU_MODULE(module);
    if (!coll_gpu_data_on_device(sbuf, sdtype, 0) && !coll_gpu_data_on_device(rbuf, rdtype, 0))
        return m->prev.ineighbor_alltoall(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, request,
                                          m->prev.ineighbor_alltoall_module);
    return alltoall_staged(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, request, m);
}

static int alltoallv_staged(const void *sbuf, const int *scounts, const int *sdispls, ompi_datatype_t *sdtype,
                            void *rbuf, const int *rcounts, const int *rdispls, ompi_datatype_t *rdtype,
                            ompi_communicator_t *comm, ompi_request_t **request, mca_coll_gpu_module_t *m)
{
    int in, out, rc;
    if (!degrees(comm, &in, &out))
        return request ? m->prev.ineighbor_alltoallv(sbuf, scounts, sdispls, sdtype, rbuf, rcounts, rdispls, rdtype,
                                                     comm, request, m->prev.ineighbor_alltoallv_module)
                       : m->prev.neighbor_alltoallv(sbuf, scounts, sdispls, sdtype, rbuf, rcounts, rdispls, rdtype,
                                                    comm, m->prev.neighbor_alltoallv_module);
    coll_gpu_stage_t *st = coll_gpu_stage_new();
    const void *hs = coll_gpu_stage_v(st, sbuf, sdtype, scounts, sdispls, out, true, false);
    void *hr = coll_gpu_stage_v(st, rbuf, rdtype, rcounts, rdispls, in, true, true);
    if ((rc = coll_gpu_stage_failed(st))) return rc;
    rc = request ? m->prev.ineighbor_alltoallv(hs, scounts, sdispls, sdtype, hr, rcounts, rdispls, rdtype, comm,
                                               request, m->prev.ineighbor_alltoallv_module)
                 : m->prev.neighbor_alltoallv(hs, scounts, sdispls, sdtype, hr, rcounts, rdispls, rdtype, comm,
                                              m->prev.neighbor_alltoallv_module);
    return coll_gpu_stage_finish(st, rc, comm, request);
}

int mca_coll_gpu_neighbor_alltoallv(const void *sbuf, const int *scounts, const int *sdispls,
                                    ompi_datatype_t *sdtype, void *rbuf, const int *rcounts, const int *rdispls,
                                    ompi_datatype_t *rdtype, ompi_communicator_t *comm,
                                    mca_coll_base_module_t *module)
{
    mca_coll_gpu_module_t *m = COLL_GPU_MODULE(module);
    if (!coll_gpu_data_on_device(sbuf, sdtype, 0) && !coll_gpu_data_on_device(rbuf, rdtype, 0))
        return m->prev.neighbor_alltoallv(sbuf, scounts, sdispls, sdtype, rbuf, rcounts, rdispls, rdtype, comm,
                                          m->prev.neighbor_alltoallv_module);
    return alltoallv_staged(sbuf, scounts, sdispls, sdtype, rbuf, rcounts, rdispls, rdtype, comm, NULL, m);
}

int mca_coll_gpu_ineighbor_alltoallv(const void *sbuf, const int *scounts, const int *sdispls,
                                     ompi_datatype_t *sdtype, void *rbuf, const int *rcounts, const int *rdispls,
                                     ompi_datatype_t *rdtype, ompi_communicator_t *comm, ompi_request_t **request,
                                     mca_coll_base_module_t *module)
{
    mca_coll_gpu_module_t *m = COLL_GPU_MODULE(module);
    if (!coll_gpu_data_on_device(sbuf, sdtype, 0) && !coll_gpu_data_on_device(rbuf, rdtype, 0))
        return m->prev.ineighbor_alltoallv(sbuf, scounts, sdispls, sdtype, rbuf, rcounts, rdispls, rdtype, comm,
                                           request, m->prev.ineighbor_alltoallv_module);
    return alltoallv_staged(sbuf, scounts, sdispls, sdtype, rbuf, rcounts, rdispls, rdtype, comm, request, m);
}

/* A device buffer on either side; with MPI_BOTTOM, the types carry the addresses. */
static bool alltoallw_on_device(const void *sbuf, const int *scounts, const MPI_Aint *sdispls,
                                ompi_datatype_t *const *sdtypes, void *rbuf, const int *rcounts,
                                const MPI_Aint *rdispls, ompi_datatype_t *const *rdtypes, ompi_communicator_t *comm)
{
    int in, out;
    if (!degrees(comm, &in, &out)) return false;
    return coll_gpu_w_data_on_device(sbuf, sdtypes, scounts, NULL, sdispls, out) ||
           coll_gpu_w_data_on_device(rbuf, rdtypes, rcounts, NULL, rdispls, in);
}

static int alltoallw_staged(const void *sbuf, const int *scounts, const MPI_Aint *sdispls,
                            ompi_datatype_t *const *sdtypes, void *rbuf, const int *rcounts, const MPI_Aint *rdispls,
                            ompi_datatype_t *const *rdtypes, ompi_communicator_t *comm, ompi_request_t **request,
                            mca_coll_gpu_module_t *m)
{
    int in, out, rc;
    if (!degrees(comm, &in, &out))
        return request ? m->prev.ineighbor_alltoallw(sbuf, scounts, sdispls, sdtypes, rbuf, rcounts, rdispls,
                                                     rdtypes, comm, request, m->prev.ineighbor_alltoallw_module)
                       : m->prev.neighbor_alltoallw(sbuf, scounts, sdispls, sdtypes, rbuf, rcounts, rdispls,
                                                    rdtypes, comm, m->prev.neighbor_alltoallw_module);
    coll_gpu_stage_t *st = coll_gpu_stage_new();
    const void *hs = coll_gpu_stage_w_aint(st, sbuf, sdtypes, scounts, sdispls, out, true, false);
    void *hr = coll_gpu_stage_w_aint(st, rbuf, rdtypes, rcounts, rdispls, in, true, true);
    if ((rc = coll_gpu_stage_failed(st))) return rc;
    rc = request ? m->prev.ineighbor_alltoallw(hs, scounts, sdispls, sdtypes, hr, rcounts, rdispls, rdtypes, comm,
                                               request, m->prev.ineighbor_alltoallw_module)
                 : m->prev.neighbor_alltoallw(hs, scounts, sdispls, sdtypes, hr, rcounts, rdispls, rdtypes, comm,
                                              m->prev.neighbor_alltoallw_module);
    return coll_gpu_stage_finish(st, rc, comm, request);
}

int mca_coll_gpu_neighbor_alltoallw(const void *sbuf, const int *scounts, const MPI_Aint *sdispls,
                                    ompi_datatype_t *const *sdtypes, void *rbuf, const int *rcounts,
                                    const MPI_Aint *rdispls, ompi_datatype_t *const *rdtypes,
                                    ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_gpu_module_t *m = COLL_GPU_MODULE(module);
    if (!alltoallw_on_device(sbuf, scounts, sdispls, sdtypes, rbuf, rcounts, rdispls, rdtypes, comm))
        return m->prev.neighbor_alltoallw(sbuf, scounts, sdispls, sdtypes, rbuf, rcounts, rdispls, rdtypes, comm,
                                          m->prev.neighbor_alltoallw_module);
    return alltoallw_staged(sbuf, scounts, sdispls, sdtypes, rbuf, rcounts, rdispls, rdtypes, comm, NULL, m);
}

int mca_coll_gpu_ineighbor_alltoallw(const void *sbuf, const int *scounts, const MPI_Aint *sdispls,
                                     ompi_datatype_t *const *sdtypes, void *rbuf, const int *rcounts,
                                     const MPI_Aint *rdispls, ompi_datatype_t *const *rdtypes,
                                     ompi_communicator_t *comm, ompi_request_t **request,
                                     mca_coll_base_module_t *module)
{
    mca_coll_gpu_module_t *m = COLL_GPU_MODULE(module);
    if (!alltoallw_on_device(sbuf, scounts, sdispls, sdtypes, rbuf, rcounts, rdispls, rdtypes, comm))
        return m->prev.ineighbor_alltoallw(sbuf, scounts, sdispls, sdtypes, rbuf, rcounts, rdispls, rdtypes, comm,
                                           request, m->prev.ineighbor_alltoallw_module);
    return alltoallw_staged(sbuf, scounts, sdispls, sdtypes, rbuf, rcounts, rdispls, rdtypes, comm, request, m);
}
