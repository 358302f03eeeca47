/* MPI_Bcast / MPI_Ibcast. */
#include "coll_gpu.h"

static int bcast_staged(void *buf, int count, ompi_datatype_t *dtype, int root, ompi_communicator_t *comm,
                        ompi_request_t **request, mca_coll_gpu_module_t *m)
{
    int rc;
    if (ompi_comm_size(comm) == 1 && coll_gpu_self_copy(m, MPI_IN_PLACE, 0, dtype, buf, count, dtype, request, &rc)) return rc;
    bool is_root = ompi_comm_rank(comm) == root;
    coll_gpu_stage_t *st = coll_gpu_stage_new();
    void *hb = coll_gpu_stage(st, buf, dtype, count, is_root, !is_root);
    rc = coll_gpu_stage_failed(st);
    if (rc) return rc;
    rc = request ? m->prev.ibcast(hb, count, dtype, root, comm, request, m->prev.ibcast_module)
                 : m->prev.bcast(hb, count, dtype, root, comm, m->prev.bcast_module);
    return coll_gpu_stage_finish(st, rc, comm, request);
}

int mca_coll_gpu_bcast(void *buf, int count, ompi_datatype_t *dtype, int root, ompi_communicator_t *comm,
                       mca_coll_base_module_t *module)
{
    mca_coll_gpu_module_t *m = COLL_GPU_MODULE(module);
    bool dev = coll_gpu_data_on_device(buf, dtype, 0);
    int rc;
    if (coll_gpu_team_try(m, GPUCOLL_COLL_BCAST, NULL, buf, count, dtype, NULL, root, dev, &rc)) return rc;
    if (coll_gpu_hier_try(m, GPUCOLL_COLL_BCAST, NULL, buf, count, dtype, NULL, root, dev, &rc)) return rc;
    if (!dev) return m->prev.bcast(buf, count, dtype, root, comm, m->prev.bcast_module);
    return bcast_staged(buf, count, dtype, root, comm, NULL, m);
}

int mca_coll_gpu_ibcast(void *buf, int count, ompi_datatype_t *dtype, int root, ompi_communicator_t *comm,
                        ompi_request_t **request, mca_coll_base_module_t *module)
{
    mca_coll_gpu_module_t *m = COLL_GPU_MODULE(module);
    coll_gpu_call_t c = {.kind = GPUCOLL_COLL_BCAST, .rbuf = buf, .rcount = (size_t)count, .rdtype = dtype,
                         .root = root};
    int rc;
    if (coll_gpu_queued_try(m, &c, request, &rc)) return rc;
    if (!coll_gpu_data_on_device(buf, dtype, 0)) return coll_gpu_request_hold(m->prev.ibcast(buf, count, dtype, root, comm, request, m->prev.ibcast_module), request, comm);
    return bcast_staged(buf, count, dtype, root, comm, request, m);
}
