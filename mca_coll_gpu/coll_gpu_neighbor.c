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

typedef enum { N_ALLGATHER, N_ALLGATHERV, N_ALLTOALL, N_ALLTOALLV, N_ALLTOALLW } neighbor_kind_t;

/* One call's arguments, as the MPI call names them. */
typedef struct {
    neighbor_kind_t kind;
    const void *sbuf;
    void *rbuf;
    int scount, rcount;
    const int *scounts, *sdispls, *rcounts, *rdispls;
    const MPI_Aint *sdispls_w, *rdispls_w; /* alltoallw: bytes */
    ompi_datatype_t *sdtype, *rdtype;
    ompi_datatype_t *const *sdtypes, *const *rdtypes;
} neighbor_call_t;

/* The displaced module's blocking (request NULL) or nonblocking call. */
static int call_prev(const neighbor_call_t *c, ompi_communicator_t *comm, ompi_request_t **req, coll_gpu_prev_t *p)
{
    const void *s = c->sbuf;
    void *r = c->rbuf;
    switch (c->kind) {
    case N_ALLGATHER:
        return req ? p->ineighbor_allgather(s, c->scount, c->sdtype, r, c->rcount, c->rdtype, comm, req,
                                            p->ineighbor_allgather_module)
                   : p->neighbor_allgather(s, c->scount, c->sdtype, r, c->rcount, c->rdtype, comm,
                                           p->neighbor_allgather_module);
    case N_ALLGATHERV:
        return req ? p->ineighbor_allgatherv(s, c->scount, c->sdtype, r, c->rcounts, c->rdispls, c->rdtype, comm, req,
                                             p->ineighbor_allgatherv_module)
                   : p->neighbor_allgatherv(s, c->scount, c->sdtype, r, c->rcounts, c->rdispls, c->rdtype, comm,
                                            p->neighbor_allgatherv_module);
    case N_ALLTOALL:
        return req ? p->ineighbor_alltoall(s, c->scount, c->sdtype, r, c->rcount, c->rdtype, comm, req,
                                           p->ineighbor_alltoall_module)
                   : p->neighbor_alltoall(s, c->scount, c->sdtype, r, c->rcount, c->rdtype, comm,
                                          p->neighbor_alltoall_module);
    case N_ALLTOALLV:
        return req ? p->ineighbor_alltoallv(s, c->scounts, c->sdispls, c->sdtype, r, c->rcounts, c->rdispls,
                                            c->rdtype, comm, req, p->ineighbor_alltoallv_module)
                   : p->neighbor_alltoallv(s, c->scounts, c->sdispls, c->sdtype, r, c->rcounts, c->rdispls,
                                           c->rdtype, comm, p->neighbor_alltoallv_module);
    case N_ALLTOALLW:
        return req ? p->ineighbor_alltoallw(s, c->scounts, c->sdispls_w, c->sdtypes, r, c->rcounts, c->rdispls_w,
                                            c->rdtypes, comm, req, p->ineighbor_alltoallw_module)
                   : p->neighbor_alltoallw(s, c->scounts, c->sdispls_w, c->sdtypes, r, c->rcounts, c->rdispls_w,
                                           c->rdtypes, comm, p->neighbor_alltoallw_module);
    }
    return OMPI_ERR_BAD_PARAM;
}

/* A device buffer on either side (MPI_BOTTOM: the types carry the addresses). */
static bool on_device(const neighbor_call_t *c, int in, int out)
{
    if (c->kind == N_ALLTOALLW)
        return coll_gpu_w_data_on_device(c->sbuf, c->sdtypes, c->scounts, NULL, c->sdispls_w, out) ||
               coll_gpu_w_data_on_device(c->rbuf, c->rdtypes, c->rcounts, NULL, c->rdispls_w, in);
    return coll_gpu_data_on_device(c->sbuf, c->sdtype, 0) || coll_gpu_data_on_device(c->rbuf, c->rdtype, 0);
}

/* Replaces c's buffers by their host copies in `st`: blocks go to the
 * `out` destinations and come from the `in` sources. */
static void stage_buffers(coll_gpu_stage_t *st, neighbor_call_t *c, int in, int out)
{
    switch (c->kind) {
    case N_ALLGATHER:
        c->sbuf = coll_gpu_stage(st, c->sbuf, c->sdtype, (size_t)c->scount, true, false);
        c->rbuf = coll_gpu_stage(st, c->rbuf, c->rdtype, (size_t)c->rcount * (size_t)in, true, true);
        break;
    case N_ALLGATHERV:
        c->sbuf = coll_gpu_stage(st, c->sbuf, c->sdtype, (size_t)c->scount, true, false);
        c->rbuf = coll_gpu_stage_v(st, c->rbuf, c->rdtype, c->rcounts, c->rdispls, in, true, true);
        break;
    case N_ALLTOALL:
        c->sbuf = coll_gpu_stage(st, c->sbuf, c->sdtype, (size_t)c->scount * (size_t)out, true, false);
        c->rbuf = coll_gpu_stage(st, c->rbuf, c->rdtype, (size_t)c->rcount * (size_t)in, true, true);
        break;
    case N_ALLTOALLV:
        c->sbuf = coll_gpu_stage_v(st, c->sbuf, c->sdtype, c->scounts, c->sdispls, out, true, false);
        c->rbuf = coll_gpu_stage_v(st, c->rbuf, c->rdtype, c->rcounts, c->rdispls, in, true, true);
        break;
    case N_ALLTOALLW:
        c->sbuf = coll_gpu_stage_w_aint(st, c->sbuf, c->sdtypes, c->scounts, c->sdispls_w, out, true, false);
        c->rbuf = coll_gpu_stage_w_aint(st, c->rbuf, c->rdtypes, c->rcounts, c->rdispls_w, in, true, true);
        break;
    }
}

static int run(neighbor_call_t c, ompi_communicator_t *comm, ompi_request_t **request, mca_coll_base_module_t *module)
{
    mca_coll_gpu_module_t *m = COLL_GPU_MODULE(module);
    int in, out;
    if (!degrees(comm, &in, &out) || !on_device(&c, in, out)) return call_prev(&c, comm, request, &m->prev);
    coll_gpu_stage_t *st = coll_gpu_stage_new();
    if (st) stage_buffers(st, &c, in, out);
    int rc = coll_gpu_stage_failed(st);
    if (rc) return rc;
    rc = call_prev(&c, comm, request, &m->prev);
    return coll_gpu_stage_finish(st, rc, comm, request);
}

/* The entry points: a blocking and a nonblocking one per kind. */
int mca_coll_gpu_neighbor_allgather(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, int rcount,
                                    ompi_datatype_t *rdtype, ompi_communicator_t *comm,
                                    mca_coll_base_module_t *module)
{
    neighbor_call_t c = {.kind = N_ALLGATHER, .sbuf = sbuf, .scount = scount, .sdtype = sdtype, .rbuf = rbuf,
                         .rcount = rcount, .rdtype = rdtype};
    return run(c, comm, NULL, module);
}

int mca_coll_gpu_ineighbor_allgather(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, int rcount,
                                     ompi_datatype_t *rdtype, ompi_communicator_t *comm, ompi_request_t **request,
                                     mca_coll_base_module_t *module)
{
    neighbor_call_t c = {.kind = N_ALLGATHER, .sbuf = sbuf, .scount = scount, .sdtype = sdtype, .rbuf = rbuf,
                         .rcount = rcount, .rdtype = rdtype};
    return run(c, comm, request, module);
}

int mca_coll_gpu_neighbor_allgatherv(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf,
                                     const int *rcounts, const int *displs, ompi_datatype_t *rdtype,
                                     ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    neighbor_call_t c = {.kind = N_ALLGATHERV, .sbuf = sbuf, .scount = scount, .sdtype = sdtype, .rbuf = rbuf,
                         .rcounts = rcounts, .rdispls = displs, .rdtype = rdtype};
    return run(c, comm, NULL, module);
}

int mca_coll_gpu_ineighbor_allgatherv(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf,
                                      const int *rcounts, const int *displs, ompi_datatype_t *rdtype,
                                      ompi_communicator_t *comm, ompi_request_t **request,
                                      mca_coll_base_module_t *module)
{
    neighbor_call_t c = {.kind = N_ALLGATHERV, .sbuf = sbuf, .scount = scount, .sdtype = sdtype, .rbuf = rbuf,
                         .rcounts = rcounts, .rdispls = displs, .rdtype = rdtype};
    return run(c, comm, request, module);
}

int mca_coll_gpu_neighbor_alltoall(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, int rcount,
                                   ompi_datatype_t *rdtype, ompi_communicator_t *comm,
                                   mca_coll_base_module_t *module)
{
    neighbor_call_t c = {.kind = N_ALLTOALL, .sbuf = sbuf, .scount = scount, .sdtype = sdtype, .rbuf = rbuf,
                         .rcount = rcount, .rdtype = rdtype};
    return run(c, comm, NULL, module);
}

int mca_coll_gpu_ineighbor_alltoall(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, int rcount,
                                    ompi_datatype_t *rdtype, ompi_communicator_t *comm, ompi_request_t **request,
                                    mca_coll_base_module_t *module)
{
    neighbor_call_t c = {.kind = N_ALLTOALL, .sbuf = sbuf, .scount = scount, .sdtype = sdtype, .rbuf = rbuf,
                         .rcount = rcount, .rdtype = rdtype};
    return run(c, comm, request, module);
}

int mca_coll_gpu_neighbor_alltoallv(const void *sbuf, const int *scounts, const int *sdispls,
                                    ompi_datatype_t *sdtype, void *rbuf, const int *rcounts, const int *rdispls,
                                    ompi_datatype_t *rdtype, ompi_communicator_t *comm,
                                    mca_coll_base_module_t *module)
{
    neighbor_call_t c = {.kind = N_ALLTOALLV, .sbuf = sbuf, .scounts = scounts, .sdispls = sdispls, .sdtype = sdtype,
                         .rbuf = rbuf, .rcounts = rcounts, .rdispls = rdispls, .rdtype = rdtype};
    return run(c, comm, NULL, module);
}

int mca_coll_gpu_ineighbor_alltoallv(const void *sbuf, const int *scounts, const int *sdispls,
                                     ompi_datatype_t *sdtype, void *rbuf, const int *rcounts, const int *rdispls,
                                     ompi_datatype_t *rdtype, ompi_communicator_t *comm, ompi_request_t **request,
                                     mca_coll_base_module_t *module)
{
    neighbor_call_t c = {.kind = N_ALLTOALLV, .sbuf = sbuf, .scounts = scounts, .sdispls = sdispls, .sdtype = sdtype,
                         .rbuf = rbuf, .rcounts = rcounts, .rdispls = rdispls, .rdtype = rdtype};
    return run(c, comm, request, module);
}

int mca_coll_gpu_neighbor_alltoallw(const void *sbuf, const int *scounts, const MPI_Aint *sdispls,
                                    ompi_datatype_t *const *sdtypes, void *rbuf, const int *rcounts,
                                    const MPI_Aint *rdispls, ompi_datatype_t *const *rdtypes,
                                    ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    neighbor_call_t c = {.kind = N_ALLTOALLW, .sbuf = sbuf, .scounts = scounts, .sdispls_w = sdispls,
                         .sdtypes = sdtypes, .rbuf = rbuf, .rcounts = rcounts, .rdispls_w = rdispls,
                         .rdtypes = rdtypes};
    return run(c, comm, NULL, module);
}

int mca_coll_gpu_ineighbor_alltoallw(const void *sbuf, const int *scounts, const MPI_Aint *sdispls,
                                     ompi_datatype_t *const *sdtypes, void *rbuf, const int *rcounts,
                                     const MPI_Aint *rdispls, ompi_datatype_t *const *rdtypes,
                                     ompi_communicator_t *comm, ompi_request_t **request,
                                     mca_coll_base_module_t *module)
{
    neighbor_call_t c = {.kind = N_ALLTOALLW, .sbuf = sbuf, .scounts = scounts, .sdispls_w = sdispls,
                         .sdtypes = sdtypes, .rbuf = rbuf, .rcounts = rcounts, .rdispls_w = rdispls,
                         .rdtypes = rdtypes};
    return run(c, comm, request, module);
}
