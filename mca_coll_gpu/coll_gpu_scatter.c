/* MPI_Scatter(v) / MPI_Iscatter(v): always staged (rooted, rarely hot). */
#include "coll_gpu.h"

static bool scatter_any_device(const void *sbuf, ompi_datatype_t *sdtype, void *rbuf, ompi_datatype_t *rdtype, int root,
                          ompi_communicator_t *comm)
{
    return coll_gpu_data_on_device(rbuf, rdtype, 0) ||
           (ompi_comm_rank(comm) == root && coll_gpu_data_on_device(sbuf, sdtype, 0));
}

static int scatter_staged(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, int rcount,
                          ompi_datatype_t *rdtype, int root, ompi_communicator_t *comm, ompi_request_t **request,
                          mca_coll_gpu_module_t *m)
{
    int rc;
    if (ompi_comm_size(comm) == 1 && coll_gpu_self_copy(m, sbuf, scount, sdtype, rbuf, rcount, rdtype, request, &rc)) return rc;
    bool is_root = ompi_comm_rank(comm) == root;
    coll_gpu_stage_t *st = coll_gpu_stage_new();
    const void *hs = is_root ? coll_gpu_stage(st, sbuf, sdtype, (size_t)scount * ompi_comm_size(comm), true, false)
                             : sbuf;
    void *hr = coll_gpu_stage(st, rbuf, rdtype, rcount, false, true);
    rc = coll_gpu_stage_failed(st);
    if (rc) return rc;
    rc = request ? m->prev.iscatter(hs, scount, sdtype, hr, rcount, rdtype, root, comm, request,
                                    m->prev.iscatter_module)
                 : m->prev.scatter(hs, scount, sdtype, hr, rcount, rdtype, root, comm, m->prev.scatter_module);
    return coll_gpu_stage_finish(st, rc, comm, request);
}

int mca_coll_gpu_scatter(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, int rcount,
                         ompi_datatype_t *rdtype, int root, ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_gpu_module_t *m = COLL_GPU_MODULE(module);
    if (!scatter_any_device(sbuf, sdtype, rbuf, rdtype, root, comm))
        return m->prev.scatter(sbuf, scount, sdtype, rbuf, rcount, rdtype, root, comm, m->prev.scatter_module);
    return scatter_staged(sbuf, scount, sdtype, rbuf, rcount, rdtype, root, comm, NULL, m);
}

int mca_coll_gpu_iscatter(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, int rcount,
                          ompi_datatype_t *rdtype, int root, ompi_communicator_t *comm, ompi_request_t **request,
                          mca_coll_base_module_t *module)
{
    mca_coll_gpu_module_t *m = COLL_GPU_MODULE(module);
    if (!scatter_any_device(sbuf, sdtype, rbuf, rdtype, root, comm))
        return coll_gpu_request_hold(m->prev.iscatter(sbuf, scount, sdtype, rbuf, rcount, rdtype, root, comm, request,
                                m->prev.iscatter_module), request, comm);
    return scatter_staged(sbuf, scount, sdtype, rbuf, rcount, rdtype, root, comm, request, m);
}

static int scatterv_staged(const void *sbuf, const int *scounts, const int *displs, ompi_datatype_t *sdtype,
                           void *rbuf, int rcount, ompi_datatype_t *rdtype, int root, ompi_communicator_t *comm,
                           ompi_request_t **request, mca_coll_gpu_module_t *m)
{
    int rc;
    if (ompi_comm_size(comm) == 1 && coll_gpu_self_copy(m, (const char *)sbuf + coll_gpu_extent_of(sdtype, displs[0]), scounts[0], sdtype, rbuf, rcount, rdtype, request, &rc)) return rc;
    bool is_root = ompi_comm_rank(comm) == root;
    coll_gpu_stage_t *st = coll_gpu_stage_new();
    const void *hs = is_root ? coll_gpu_stage_v(st, sbuf, sdtype, scounts, displs, ompi_comm_size(comm), true, false)
                             : sbuf;
    void *hr = coll_gpu_stage(st, rbuf, rdtype, rcount, false, true);
    rc = coll_gpu_stage_failed(st);
    if (rc) return rc;
    rc = request ? m->prev.iscatterv(hs, scounts, displs, sdtype, hr, rcount, rdtype, root, comm, request,
                                     m->prev.iscatterv_module)
                 : m->prev.scatterv(hs, scounts, displs, sdtype, hr, rcount, rdtype, root, comm,
                                    m->prev.scatterv_module);
    return coll_gpu_stage_finish(st, rc, comm, request);
}

int mca_coll_gpu_scatterv(const void *sbuf, const int *scounts, const int *displs, ompi_datatype_t *sdtype,
                          void *rbuf, int rcount, ompi_datatype_t *rdtype, int root, ompi_communicator_t *comm,
                          mca_coll_base_module_t *module)
{
    mca_coll_gpu_module_t *m = COLL_GPU_MODULE(module);
    if (!scatter_any_device(sbuf, sdtype, rbuf, rdtype, root, comm))
        return m->prev.scatterv(sbuf, scounts, displs, sdtype, rbuf, rcount, rdtype, root, comm,
                                m->prev.scatterv_module);
    return scatterv_staged(sbuf, scounts, displs, sdtype, rbuf, rcount, rdtype, root, comm, NULL, m);
}

int mca_coll_gpu_iscatterv(const void *sbuf, const int *scounts, const int *displs, ompi_datatype_t *sdtype,
                           void *rbuf, int rcount, ompi_datatype_t *rdtype, int root, ompi_communicator_t *comm,
                           ompi_request_t **request, mca_coll_base_module_t *module)
{
    mca_coll_gpu_module_t *m = COLL_GPU_MODULE(module);
    if (!scatter_any_device(sbuf, sdtype, rbuf, rdtype, root, comm))
        return coll_gpu_request_hold(m->prev.iscatterv(sbuf, scounts, displs, sdtype, rbuf, rcount, rdtype, root, comm, request,
                                 m->prev.iscatterv_module), request, comm);
    return scatterv_staged(sbuf, scounts, displs, sdtype, rbuf, rcount, rdtype, root, comm, request, m);
}
