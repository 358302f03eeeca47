/* MPI_Gather(v) / MPI_Igather(v): always staged (rooted, rarely hot). */
#include "coll_gpu.h"

static int gather_staged(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, int rcount,
                         ompi_datatype_t *rdtype, int root, ompi_communicator_t *comm, ompi_request_t **request,
                         mca_coll_gpu_module_t *m)
{
    int rc;
    if (ompi_comm_size(comm) == 1 && coll_gpu_self_copy(m, sbuf, scount, sdtype, rbuf, rcount, rdtype, request, &rc)) return rc;
    bool is_root = ompi_comm_rank(comm) == root;
    coll_gpu_stage_t *st = coll_gpu_stage_new();
    const void *hs = coll_gpu_stage(st, sbuf, sdtype, scount, true, false);
    void *hr = is_root ? coll_gpu_stage(st, rbuf, rdtype, (size_t)rcount * ompi_comm_size(comm),
                                        sbuf == MPI_IN_PLACE, true)
                       : rbuf;
    rc = coll_gpu_stage_failed(st);
    if (rc) return rc;
    rc = request ? m->prev.igather(hs, scount, sdtype, hr, rcount, rdtype, root, comm, request,
                                   m->prev.igather_module)
                 : m->prev.gather(hs, scount, sdtype, hr, rcount, rdtype, root, comm, m->prev.gather_module);
    return coll_gpu_stage_finish(st, rc, comm, request);
}

static bool gather_any_device(const void *sbuf, ompi_datatype_t *sdtype, void *rbuf, ompi_datatype_t *rdtype, int root,
                         ompi_communicator_t *comm)
{
    return coll_gpu_data_on_device(sbuf, sdtype, 0) ||
           (ompi_comm_rank(comm) == root && coll_gpu_data_on_device(rbuf, rdtype, 0));
}

int mca_coll_gpu_gather(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, int rcount,
                        ompi_datatype_t *rdtype, int root, ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_gpu_module_t *m = COLL_GPU_MODULE(module);
    if (!gather_any_device(sbuf, sdtype, rbuf, rdtype, root, comm))
        return m->prev.gather(sbuf, scount, sdtype, rbuf, rcount, rdtype, root, comm, m->prev.gather_module);
    return gather_staged(sbuf, scount, sdtype, rbuf, rcount, rdtype, root, comm, NULL, m);
}

int mca_coll_gpu_igather(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, int rcount,
                         ompi_datatype_t *rdtype, int root, ompi_communicator_t *comm, ompi_request_t **request,
                         mca_coll_base_module_t *module)
{
    mca_coll_gpu_module_t *m = COLL_GPU_MODULE(module);
    if (!gather_any_device(sbuf, sdtype, rbuf, rdtype, root, comm))
        return coll_gpu_request_hold(m->prev.igather(sbuf, scount, sdtype, rbuf, rcount, rdtype, root, comm, request,
                               m->prev.igather_module), request, comm);
    return gather_staged(sbuf, scount, sdtype, rbuf, rcount, rdtype, root, comm, request, m);
}

static int gatherv_staged(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, const int *rcounts,
                          const int *displs, ompi_datatype_t *rdtype, int root, ompi_communicator_t *comm,
                          ompi_request_t **request, mca_coll_gpu_module_t *m)
{
    int rc;
    if (ompi_comm_size(comm) == 1 && coll_gpu_self_copy(m, sbuf, scount, sdtype, (char *)rbuf + coll_gpu_extent_of(rdtype, displs[0]), rcounts[0], rdtype, request, &rc)) return rc;
    bool is_root = ompi_comm_rank(comm) == root;
    coll_gpu_stage_t *st = coll_gpu_stage_new();
    const void *hs = coll_gpu_stage(st, sbuf, sdtype, scount, true, false);
    void *hr = is_root ? coll_gpu_stage_v(st, rbuf, rdtype, rcounts, displs, ompi_comm_size(comm),
                                          sbuf == MPI_IN_PLACE, true)
                       : rbuf;
    rc = coll_gpu_stage_failed(st);
    if (rc) return rc;
    rc = request ? m->prev.igatherv(hs, scount, sdtype, hr, rcounts, displs, rdtype, root, comm, request,
                                    m->prev.igatherv_module)
                 : m->prev.gatherv(hs, scount, sdtype, hr, rcounts, displs, rdtype, root, comm,
                                   m->prev.gatherv_module);
    return coll_gpu_stage_finish(st, rc, comm, request);
}

int mca_coll_gpu_gatherv(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, const int *rcounts,
                         const int *displs, ompi_datatype_t *rdtype, int root, ompi_communicator_t *comm,
                         mca_coll_base_module_t *module)
{
    mca_coll_gpu_module_t *m = COLL_GPU_MODULE(module);
    if (!gather_any_device(sbuf, sdtype, rbuf, rdtype, root, comm))
        return m->prev.gatherv(sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype, root, comm,
                               m->prev.gatherv_module);
    return gatherv_staged(sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype, root, comm, NULL, m);
}

int mca_coll_gpu_igatherv(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, const int *rcounts,
                          const int *displs, ompi_datatype_t *rdtype, int root, ompi_communicator_t *comm,
                          ompi_request_t **request, mca_coll_base_module_t *module)
{
    mca_coll_gpu_module_t *m = COLL_GPU_MODULE(module);
    if (!gather_any_device(sbuf, sdtype, rbuf, rdtype, root, comm))
        return coll_gpu_request_hold(m->prev.igatherv(sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype, root, comm, request,
                                m->prev.igatherv_module), request, comm);
    return gatherv_staged(sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype, root, comm, request, m);
}
