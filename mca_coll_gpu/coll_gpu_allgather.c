/* MPI_Allgather(v) / MPI_Iallgather(v). */
#include "coll_gpu.h"

static int allgather_staged(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, int rcount,
                            ompi_datatype_t *rdtype, ompi_communicator_t *comm, ompi_request_t **request,
                            mca_coll_gpu_module_t *m)
{
    int rc;
    if (ompi_comm_size(comm) == 1 && coll_gpu_self_copy(m, sbuf, scount, sdtype, rbuf, rcount, rdtype, request, &rc)) return rc;
    int size = ompi_comm_size(comm);
    coll_gpu_stage_t *st = coll_gpu_stage_new();
    const void *hs = coll_gpu_stage(st, sbuf, sdtype, scount, true, false);
    /* In place, our own block is already in rbuf: bring it along. */
    void *hr = coll_gpu_stage(st, rbuf, rdtype, (size_t)rcount * size, sbuf == MPI_IN_PLACE, true);
    rc = coll_gpu_stage_failed(st);
    if (rc) return rc;
    rc = request ? m->prev.iallgather(hs, scount, sdtype, hr, rcount, rdtype, comm, request,
                                      m->prev.iallgather_module)
                 : m->prev.allgather(hs, scount, sdtype, hr, rcount, rdtype, comm, m->prev.allgather_module);
    return coll_gpu_stage_finish(st, rc, comm, request);
}

int mca_coll_gpu_allgather(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, int rcount,
                           ompi_datatype_t *rdtype, ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_gpu_module_t *m = COLL_GPU_MODULE(module);
    bool rdev = coll_gpu_data_on_device(rbuf, rdtype, 0),
         sdev = sbuf == MPI_IN_PLACE ? rdev : coll_gpu_data_on_device(sbuf, sdtype, 0);
    int rc;
    /* The peer path moves bytes in rdtype's layout; in place or same type on both sides. */
    bool same = sbuf == MPI_IN_PLACE || (sdtype == rdtype && scount == rcount);
    if (coll_gpu_team_try(m, GPUCOLL_COLL_ALLGATHER, sbuf, rbuf, rcount, rdtype, NULL, 0, rdev && sdev && same, &rc))
        return rc;
    if (coll_gpu_hier_try(m, GPUCOLL_COLL_ALLGATHER, sbuf, rbuf, rcount, rdtype, NULL, 0, rdev && sdev && same, &rc))
        return rc;
    if (!rdev && !sdev)
        return m->prev.allgather(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, m->prev.allgather_module);
    return allgather_staged(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, NULL, m);
}

int mca_coll_gpu_iallgather(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, int rcount,
                            ompi_datatype_t *rdtype, ompi_communicator_t *comm, ompi_request_t **request,
                            mca_coll_base_module_t *module)
{
    mca_coll_gpu_module_t *m = COLL_GPU_MODULE(module);
    coll_gpu_call_t c = {.kind = GPUCOLL_COLL_ALLGATHER, .sbuf = sbuf, .scount = (size_t)scount, .sdtype = sdtype,
                         .rbuf = rbuf, .rcount = (size_t)rcount, .rdtype = rdtype};
    int rc;
    if (coll_gpu_queued_try(m, &c, request, &rc)) return rc;
    if (!coll_gpu_data_on_device(sbuf, sdtype, 0) && !coll_gpu_data_on_device(rbuf, rdtype, 0))
        return coll_gpu_request_hold(m->prev.iallgather(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, request,
                                  m->prev.iallgather_module), request, comm);
    return allgather_staged(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, request, m);
}

static int allgatherv_staged(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, const int *rcounts,
                             const int *displs, ompi_datatype_t *rdtype, ompi_communicator_t *comm,
                             ompi_request_t **request, mca_coll_gpu_module_t *m)
{
    int rc;
    if (ompi_comm_size(comm) == 1 && coll_gpu_self_copy(m, sbuf, scount, sdtype, (char *)rbuf + coll_gpu_extent_of(rdtype, displs[0]), rcounts[0], rdtype, request, &rc)) return rc;
    coll_gpu_stage_t *st = coll_gpu_stage_new();
    const void *hs = coll_gpu_stage(st, sbuf, sdtype, scount, true, false);
    void *hr = coll_gpu_stage_v(st, rbuf, rdtype, rcounts, displs, ompi_comm_size(comm), sbuf == MPI_IN_PLACE, true);
    rc = coll_gpu_stage_failed(st);
    if (rc) return rc;
    rc = request ? m->prev.iallgatherv(hs, scount, sdtype, hr, rcounts, displs, rdtype, comm, request,
                                       m->prev.iallgatherv_module)
                 : m->prev.allgatherv(hs, scount, sdtype, hr, rcounts, displs, rdtype, comm,
                                      m->prev.allgatherv_module);
    return coll_gpu_stage_finish(st, rc, comm, request);
}

int mca_coll_gpu_allgatherv(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, const int *rcounts,
                            const int *displs, ompi_datatype_t *rdtype, ompi_communicator_t *comm,
                            mca_coll_base_module_t *module)
{
    mca_coll_gpu_module_t *m = COLL_GPU_MODULE(module);
    bool rdev = coll_gpu_data_on_device(rbuf, rdtype, 0),
         sdev = sbuf == MPI_IN_PLACE ? rdev : coll_gpu_data_on_device(sbuf, sdtype, 0);
    bool same = sbuf == MPI_IN_PLACE || (sdtype == rdtype && scount == rcounts[ompi_comm_rank(comm)]);
    int rc;
    if (coll_gpu_team_try_v(m, GPUCOLL_COLL_ALLGATHERV, sbuf, rbuf, rcounts, displs, NULL, NULL, rdtype, NULL,
                            rdev && sdev && same, &rc))
        return rc;
    if (!rdev && !sdev)
        return m->prev.allgatherv(sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype, comm,
                                  m->prev.allgatherv_module);
    return allgatherv_staged(sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype, comm, NULL, m);
}

int mca_coll_gpu_iallgatherv(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, const int *rcounts,
                             const int *displs, ompi_datatype_t *rdtype, ompi_communicator_t *comm,
                             ompi_request_t **request, mca_coll_base_module_t *module)
{
    mca_coll_gpu_module_t *m = COLL_GPU_MODULE(module);
    if (!coll_gpu_data_on_device(sbuf, sdtype, 0) && !coll_gpu_data_on_device(rbuf, rdtype, 0))
        return coll_gpu_request_hold(m->prev.iallgatherv(sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype, comm, request,
                                   m->prev.iallgatherv_module), request, comm);
    return allgatherv_staged(sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype, comm, request, m);
}
