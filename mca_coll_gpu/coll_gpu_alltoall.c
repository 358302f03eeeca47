/* MPI_Alltoall(v,w) / MPI_Ialltoall(v,w). */
#include "coll_gpu.h"

static int alltoall_staged(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, int rcount,
                           ompi_datatype_t *rdtype, ompi_communicator_t *comm, ompi_request_t **request,
                           mca_coll_gpu_module_t *m)
{
    int rc;
    if (ompi_comm_size(comm) == 1 && coll_gpu_self_copy(m, sbuf, scount, sdtype, rbuf, rcount, rdtype, request, &rc)) return rc;
    int size = ompi_comm_size(comm);
    coll_gpu_stage_t *st = coll_gpu_stage_new();
    const void *hs = coll_gpu_stage(st, sbuf, sdtype, (size_t)scount * size, true, false);
    void *hr = coll_gpu_stage(st, rbuf, rdtype, (size_t)rcount * size, sbuf == MPI_IN_PLACE, true);
    rc = coll_gpu_stage_failed(st);
    if (rc) return rc;
    rc = request ? m->prev.ialltoall(hs, scount, sdtype, hr, rcount, rdtype, comm, request, m->prev.ialltoall_module)
                 : m->prev.alltoall(hs, scount, sdtype, hr, rcount, rdtype, comm, m->prev.alltoall_module);
    return coll_gpu_stage_finish(st, rc, comm, request);
}

int mca_coll_gpu_alltoall(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, int rcount,
                          ompi_datatype_t *rdtype, ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_gpu_module_t *m = COLL_GPU_MODULE(module);
    bool rdev = coll_gpu_data_on_device(rbuf, rdtype, 0),
         sdev = sbuf == MPI_IN_PLACE ? rdev : coll_gpu_data_on_device(sbuf, sdtype, 0);
    bool same = sbuf == MPI_IN_PLACE || (sdtype == rdtype && scount == rcount);
    int rc;
    if (coll_gpu_team_try(m, GPUCOLL_COLL_ALLTOALL, sbuf, rbuf, rcount, rdtype, NULL, 0, rdev && sdev && same, &rc))
        return rc;
    if (!rdev && !sdev)
        return m->prev.alltoall(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, m->prev.alltoall_module);
    return alltoall_staged(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, NULL, m);
}

int mca_coll_gpu_ialltoall(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, int rcount,
                           ompi_datatype_t *rdtype, ompi_communicator_t *comm, ompi_request_t **request,
                           mca_coll_base_module_t *module)
{
    mca_coll_gpu_module_t *m = COLL_GPU_MODULE(module);
    coll_gpu_call_t c = {.kind = GPUCOLL_COLL_ALLTOALL, .sbuf = sbuf, .scount = (size_t)scount, .sdtype = sdtype,
                         .rbuf = rbuf, .rcount = (size_t)rcount, .rdtype = rdtype};
    int rc;
    if (coll_gpu_queued_try(m, &c, request, &rc)) return rc;
    if (!coll_gpu_data_on_device(sbuf, sdtype, 0) && !coll_gpu_data_on_device(rbuf, rdtype, 0))
        return coll_gpu_request_hold(m->prev.ialltoall(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, request, m->prev.ialltoall_module), request, comm);
    return alltoall_staged(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, request, m);
}

static int alltoallv_staged(const void *sbuf, const int *scounts, const int *sdispls, ompi_datatype_t *sdtype,
                            void *rbuf, const int *rcounts, const int *rdispls, ompi_datatype_t *rdtype,
                            ompi_communicator_t *comm, ompi_request_t **request, mca_coll_gpu_module_t *m)
{
    int rc;
    /* In place the send arguments are ignored (they may be NULL). */
    bool ip = sbuf == MPI_IN_PLACE;
    if (ompi_comm_size(comm) == 1 &&
        coll_gpu_self_copy(m, ip ? sbuf : (const char *)sbuf + coll_gpu_extent_of(sdtype, sdispls[0]), ip ? 0 : scounts[0], ip ? rdtype : sdtype,
                           (char *)rbuf + coll_gpu_extent_of(rdtype, rdispls[0]), rcounts[0], rdtype, request, &rc)) return rc;
    int size = ompi_comm_size(comm);
    coll_gpu_stage_t *st = coll_gpu_stage_new();
    const void *hs = coll_gpu_stage_v(st, sbuf, sdtype, scounts, sdispls, size, true, false);
    void *hr = coll_gpu_stage_v(st, rbuf, rdtype, rcounts, rdispls, size, sbuf == MPI_IN_PLACE, true);
    rc = coll_gpu_stage_failed(st);
    if (rc) return rc;
    rc = request ? m->prev.ialltoallv(hs, scounts, sdispls, sdtype, hr, rcounts, rdispls, rdtype, comm, request,
                                      m->prev.ialltoallv_module)
                 : m->prev.alltoallv(hs, scounts, sdispls, sdtype, hr, rcounts, rdispls, rdtype, comm,
                                     m->prev.alltoallv_module);
    return coll_gpu_stage_finish(st, rc, comm, request);
}

int mca_coll_gpu_alltoallv(const void *sbuf, const int *scounts, const int *sdispls, ompi_datatype_t *sdtype,
                           void *rbuf, const int *rcounts, const int *rdispls, ompi_datatype_t *rdtype,
                           ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_gpu_module_t *m = COLL_GPU_MODULE(module);
    bool rdev = coll_gpu_data_on_device(rbuf, rdtype, 0),
         sdev = sbuf == MPI_IN_PLACE ? rdev : coll_gpu_data_on_device(sbuf, sdtype, 0);
    int rc;
    /* In place the send arguments are ignored (they may be NULL): the
     * receive ones stand in (and the peer path stages in-place calls). */
    bool ip = sbuf == MPI_IN_PLACE;
    if (coll_gpu_team_try_v(m, GPUCOLL_COLL_ALLTOALLV, sbuf, rbuf, ip ? rcounts : scounts, ip ? rdispls : sdispls,
                            rcounts, rdispls, rdtype, NULL, rdev && sdev && (ip || sdtype == rdtype), &rc))
        return rc;
    if (!rdev && !sdev)
        return m->prev.alltoallv(sbuf, scounts, sdispls, sdtype, rbuf, rcounts, rdispls, rdtype, comm,
                                 m->prev.alltoallv_module);
    return alltoallv_staged(sbuf, scounts, sdispls, sdtype, rbuf, rcounts, rdispls, rdtype, comm, NULL, m);
}

int mca_coll_gpu_ialltoallv(const void *sbuf, const int *scounts, const int *sdispls, ompi_datatype_t *sdtype,
                            void *rbuf, const int *rcounts, const int *rdispls, ompi_datatype_t *rdtype,
                            ompi_communicator_t *comm, ompi_request_t **request, mca_coll_base_module_t *module)
{
    mca_coll_gpu_module_t *m = COLL_GPU_MODULE(module);
    if (!coll_gpu_data_on_device(sbuf, sdtype, 0) && !coll_gpu_data_on_device(rbuf, rdtype, 0))
        return coll_gpu_request_hold(m->prev.ialltoallv(sbuf, scounts, sdispls, sdtype, rbuf, rcounts, rdispls, rdtype, comm, request,
                                  m->prev.ialltoallv_module), request, comm);
    return alltoallv_staged(sbuf, scounts, sdispls, sdtype, rbuf, rcounts, rdispls, rdtype, comm, request, m);
}

/* A device buffer on either side; with MPI_BOTTOM, the types carry the addresses. */
static bool alltoallw_on_device(const void *sbuf, const int *scounts, const int *sdispls,
                                ompi_datatype_t *const *sdtypes, void *rbuf, const int *rcounts, const int *rdispls,
                                ompi_datatype_t *const *rdtypes, ompi_communicator_t *comm)
{
    int n = ompi_comm_size(comm);
    return coll_gpu_w_data_on_device(sbuf, sdtypes, scounts, sdispls, NULL, n) ||
           coll_gpu_w_data_on_device(rbuf, rdtypes, rcounts, rdispls, NULL, n);
}

static int alltoallw_staged(const void *sbuf, const int *scounts, const int *sdispls, ompi_datatype_t *const *sdtypes,
                            void *rbuf, const int *rcounts, const int *rdispls, ompi_datatype_t *const *rdtypes,
                            ompi_communicator_t *comm, ompi_request_t **request, mca_coll_gpu_module_t *m)
{
    int rc;
    bool ip = sbuf == MPI_IN_PLACE; /* the send arguments are ignored (they may be NULL) */
    if (ompi_comm_size(comm) == 1 &&
        coll_gpu_self_copy(m, ip ? sbuf : (const char *)sbuf + sdispls[0], ip ? 0 : scounts[0], ip ? rdtypes[0] : sdtypes[0],
                           (char *)rbuf + rdispls[0], rcounts[0], rdtypes[0], request, &rc)) return rc;
    int size = ompi_comm_size(comm);
    coll_gpu_stage_t *st = coll_gpu_stage_new();
    const void *hs = sbuf == MPI_IN_PLACE ? sbuf : coll_gpu_stage_w(st, sbuf, sdtypes, scounts, sdispls, size, true, false);
    void *hr = coll_gpu_stage_w(st, rbuf, rdtypes, rcounts, rdispls, size, sbuf == MPI_IN_PLACE, true);
    rc = coll_gpu_stage_failed(st);
    if (rc) return rc;
    rc = request ? m->prev.ialltoallw(hs, scounts, sdispls, sdtypes, hr, rcounts, rdispls, rdtypes, comm, request,
                                      m->prev.ialltoallw_module)
                 : m->prev.alltoallw(hs, scounts, sdispls, sdtypes, hr, rcounts, rdispls, rdtypes, comm,
                                     m->prev.alltoallw_module);
    return coll_gpu_stage_finish(st, rc, comm, request);
}

int mca_coll_gpu_alltoallw(const void *sbuf, const int *scounts, const int *sdispls, ompi_datatype_t *const *sdtypes,
                           void *rbuf, const int *rcounts, const int *rdispls, ompi_datatype_t *const *rdtypes,
                           ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_gpu_module_t *m = COLL_GPU_MODULE(module);
    if (!alltoallw_on_device(sbuf, scounts, sdispls, sdtypes, rbuf, rcounts, rdispls, rdtypes, comm))
        return m->prev.alltoallw(sbuf, scounts, sdispls, sdtypes, rbuf, rcounts, rdispls, rdtypes, comm,
                                 m->prev.alltoallw_module);
    return alltoallw_staged(sbuf, scounts, sdispls, sdtypes, rbuf, rcounts, rdispls, rdtypes, comm, NULL, m);
}

int mca_coll_gpu_ialltoallw(const void *sbuf, const int *scounts, const int *sdispls, ompi_datatype_t *const *sdtypes,
                            void *rbuf, const int *rcounts, const int *rdispls, ompi_datatype_t *const *rdtypes,
                            ompi_communicator_t *comm, ompi_request_t **request, mca_coll_base_module_t *module)
{
    mca_coll_gpu_module_t *m = COLL_GPU_MODULE(module);
    if (!alltoallw_on_device(sbuf, scounts, sdispls, sdtypes, rbuf, rcounts, rdispls, rdtypes, comm))
        return coll_gpu_request_hold(m->prev.ialltoallw(sbuf, scounts, sdispls, sdtypes, rbuf, rcounts, rdispls, rdtypes, comm, request,
                                  m->prev.ialltoallw_module), request, comm);
    return alltoallw_staged(sbuf, scounts, sdispls, sdtypes, rbuf, rcounts, rdispls, rdtypes, comm, request, m);
}
