/* Collectives on intercommunicators with device buffers.
 *
 * coll/inter, coll/basic and coll/libnbc serve intercommunicators by point
 * to point calls and by the local group's collectives on the user's buffers;
 * without a CUDA-aware PML a device pointer there is a host memcpy on GPU
 * memory: a crash. Here the device buffers are staged through host memory
 * and the displaced module runs on the copies. There is no peer kernel for
 * intercommunicators: their groups exchange, they do not share.
 *
 * What each call reads and writes (MPI's rules, as Open MPI implements them):
 * counts multiply the REMOTE group's size, except reduce_scatter(_block),
 * whose input is scattered over the LOCAL group; a root is MPI_ROOT (the
 * root, in its group), MPI_PROC_NULL (the rest of its group: no buffer is
 * significant) or the root's rank in the remote group. No MPI_IN_PLACE.
 * The persistent forms (coll_gpu_persistent.c) start these nonblocking
 * calls. */
#include "coll_gpu.h"

typedef enum {
    I_ALLGATHER, I_ALLGATHERV, I_ALLREDUCE, I_ALLTOALL, I_ALLTOALLV, I_ALLTOALLW, I_BCAST, I_GATHER, I_GATHERV,
    I_REDUCE, I_REDUCE_SCATTER, I_REDUCE_SCATTER_BLOCK, I_SCATTER, I_SCATTERV
} inter_kind_t;

/* One call's arguments, as the MPI call names them (bcast: rbuf). */
typedef struct {
    inter_kind_t kind;
    const void *sbuf;
    void *rbuf;
    int scount, rcount, root;
    const int *scounts, *sdispls, *rcounts, *rdispls;
    ompi_datatype_t *sdtype, *rdtype;
    ompi_datatype_t *const *sdtypes, *const *rdtypes;
    ompi_op_t *op;
} inter_call_t;

/* Which of c's buffers this rank's role makes significant: the root's group
 * passes no send buffer to gather and reduce and no receive buffer to
 * scatter, MPI_PROC_NULL ranks pass none (nor valid datatypes for them). */
typedef struct { bool send, recv; } roles_t;
static roles_t roles(const inter_call_t *c)
{
    const bool root = c->root == MPI_ROOT, none = c->root == MPI_PROC_NULL;
    switch (c->kind) {
    case I_BCAST: return (roles_t){false, !none}; /* root and receivers alike: rbuf */
    case I_GATHER: case I_GATHERV: case I_REDUCE: return (roles_t){!root && !none, root};
    case I_SCATTER: case I_SCATTERV: return (roles_t){root, !root && !none};
    default: return (roles_t){true, true};
    }
}

/* A device buffer among the significant ones. */
static bool on_device(const inter_call_t *c, roles_t r, ompi_communicator_t *comm)
{
    if (c->kind == I_ALLTOALLW) {
        const int n = ompi_comm_remote_size(comm);
        return coll_gpu_w_data_on_device(c->sbuf, c->sdtypes, c->scounts, c->sdispls, NULL, n) ||
               coll_gpu_w_data_on_device(c->rbuf, c->rdtypes, c->rcounts, c->rdispls, NULL, n);
    }
    ompi_datatype_t *sdtype = c->sdtype ? c->sdtype : c->rdtype; /* reductions name one type */
    return (r.send && coll_gpu_data_on_device(c->sbuf, sdtype, 0)) ||
           (r.recv && coll_gpu_data_on_device(c->rbuf, c->rdtype, 0));
}

/* Replaces c's buffers by their host copies in `st`. */
static void stage_buffers(coll_gpu_stage_t *st, inter_call_t *c, ompi_communicator_t *comm)
{
    const size_t remote = (size_t)ompi_comm_remote_size(comm), local = (size_t)ompi_comm_size(comm);
    const int R = (int)remote;
    const bool root = c->root == MPI_ROOT;
    switch (c->kind) {
    case I_BCAST:
        c->rbuf = coll_gpu_stage(st, c->rbuf, c->rdtype, (size_t)c->rcount, root, !root);
        break;
    case I_GATHER:
        if (root) c->rbuf = coll_gpu_stage(st, c->rbuf, c->rdtype, (size_t)c->rcount * remote, false, true);
        else c->sbuf = coll_gpu_stage(st, c->sbuf, c->sdtype, (size_t)c->scount, true, false);
        break;
    case I_GATHERV:
        if (root) c->rbuf = coll_gpu_stage_v(st, c->rbuf, c->rdtype, c->rcounts, c->rdispls, R, false, true);
        else c->sbuf = coll_gpu_stage(st, c->sbuf, c->sdtype, (size_t)c->scount, true, false);
        break;
    case I_SCATTER:
        if (root) c->sbuf = coll_gpu_stage(st, c->sbuf, c->sdtype, (size_t)c->scount * remote, true, false);
        else c->rbuf = coll_gpu_stage(st, c->rbuf, c->rdtype, (size_t)c->rcount, false, true);
        break;
    case I_SCATTERV:
        if (root) c->sbuf = coll_gpu_stage_v(st, c->sbuf, c->sdtype, c->scounts, c->sdispls, R, true, false);
        else c->rbuf = coll_gpu_stage(st, c->rbuf, c->rdtype, (size_t)c->rcount, false, true);
        break;
    case I_REDUCE:
        if (root) c->rbuf = coll_gpu_stage(st, c->rbuf, c->rdtype, (size_t)c->rcount, false, true);
        else c->sbuf = coll_gpu_stage(st, c->sbuf, c->rdtype, (size_t)c->rcount, true, false);
        break;
    case I_ALLREDUCE:
        c->sbuf = coll_gpu_stage(st, c->sbuf, c->rdtype, (size_t)c->rcount, true, false);
        c->rbuf = coll_gpu_stage(st, c->rbuf, c->rdtype, (size_t)c->rcount, false, true);
        break;
    case I_ALLGATHER:
        c->sbuf = coll_gpu_stage(st, c->sbuf, c->sdtype, (size_t)c->scount, true, false);
        c->rbuf = coll_gpu_stage(st, c->rbuf, c->rdtype, (size_t)c->rcount * remote, false, true);
        break;
    case I_ALLGATHERV:
        c->sbuf = coll_gpu_stage(st, c->sbuf, c->sdtype, (size_t)c->scount, true, false);
        c->rbuf = coll_gpu_stage_v(st, c->rbuf, c->rdtype, c->rcounts, c->rdispls, R, false, true);
        break;
    case I_ALLTOALL:
        c->sbuf = coll_gpu_stage(st, c->sbuf, c->sdtype, (size_t)c->scount * remote, true, false);
        c->rbuf = coll_gpu_stage(st, c->rbuf, c->rdtype, (size_t)c->rcount * remote, false, true);
        break;
    case I_ALLTOALLV:
        c->sbuf = coll_gpu_stage_v(st, c->sbuf, c->sdtype, c->scounts, c->sdispls, R, true, false);
        c->rbuf = coll_gpu_stage_v(st, c->rbuf, c->rdtype, c->rcounts, c->rdispls, R, false, true);
        break;
    case I_ALLTOALLW:
        c->sbuf = coll_gpu_stage_w(st, c->sbuf, c->sdtypes, c->scounts, c->sdispls, R, true, false);
        c->rbuf = coll_gpu_stage_w(st, c->rbuf, c->rdtypes, c->rcounts, c->rdispls, R, false, true);
        break;
    case I_REDUCE_SCATTER: {
        size_t total = 0;
        for (size_t i = 0; i < local; i++) total += (size_t)c->rcounts[i];
        c->sbuf = coll_gpu_stage(st, c->sbuf, c->rdtype, total, true, false);
        c->rbuf = coll_gpu_stage(st, c->rbuf, c->rdtype, (size_t)c->rcounts[ompi_comm_rank(comm)], false, true);
        break;
    }
    case I_REDUCE_SCATTER_BLOCK:
        c->sbuf = coll_gpu_stage(st, c->sbuf, c->rdtype, (size_t)c->rcount * local, true, false);
        c->rbuf = coll_gpu_stage(st, c->rbuf, c->rdtype, (size_t)c->rcount, false, true);
        break;
    }
}

/* The displaced module's blocking (request NULL) or nonblocking call. */
static int call_prev(const inter_call_t *c, ompi_communicator_t *comm, ompi_request_t **req, coll_gpu_prev_t *p)
{
    const void *s = c->sbuf;
    void *r = c->rbuf;
    switch (c->kind) {
    case I_ALLGATHER:
        return req ? p->iallgather(s, c->scount, c->sdtype, r, c->rcount, c->rdtype, comm, req, p->iallgather_module)
                   : p->allgather(s, c->scount, c->sdtype, r, c->rcount, c->rdtype, comm, p->allgather_module);
    case I_ALLGATHERV:
        return req ? p->iallgatherv(s, c->scount, c->sdtype, r, c->rcounts, c->rdispls, c->rdtype, comm, req,
                                    p->iallgatherv_module)
                   : p->allgatherv(s, c->scount, c->sdtype, r, c->rcounts, c->rdispls, c->rdtype, comm,
                                   p->allgatherv_module);
    case I_ALLREDUCE:
        return req ? p->iallreduce(s, r, c->rcount, c->rdtype, c->op, comm, req, p->iallreduce_module)
                   : p->allreduce(s, r, c->rcount, c->rdtype, c->op, comm, p->allreduce_module);
    case I_ALLTOALL:
        return req ? p->ialltoall(s, c->scount, c->sdtype, r, c->rcount, c->rdtype, comm, req, p->ialltoall_module)
                   : p->alltoall(s, c->scount, c->sdtype, r, c->rcount, c->rdtype, comm, p->alltoall_module);
    case I_ALLTOALLV:
        return req ? p->ialltoallv(s, c->scounts, c->sdispls, c->sdtype, r, c->rcounts, c->rdispls, c->rdtype, comm,
                                   req, p->ialltoallv_module)
                   : p->alltoallv(s, c->scounts, c->sdispls, c->sdtype, r, c->rcounts, c->rdispls, c->rdtype, comm,
                                  p->alltoallv_module);
    case I_ALLTOALLW:
        return req ? p->ialltoallw(s, c->scounts, c->sdispls, c->sdtypes, r, c->rcounts, c->rdispls, c->rdtypes,
                                   comm, req, p->ialltoallw_module)
                   : p->alltoallw(s, c->scounts, c->sdispls, c->sdtypes, r, c->rcounts, c->rdispls, c->rdtypes,
                                  comm, p->alltoallw_module);
    case I_BCAST:
        return req ? p->ibcast(r, c->rcount, c->rdtype, c->root, comm, req, p->ibcast_module)
                   : p->bcast(r, c->rcount, c->rdtype, c->root, comm, p->bcast_module);
    case I_GATHER:
        return req ? p->igather(s, c->scount, c->sdtype, r, c->rcount, c->rdtype, c->root, comm, req,
                                p->igather_module)
                   : p->gather(s, c->scount, c->sdtype, r, c->rcount, c->rdtype, c->root, comm, p->gather_module);
    case I_GATHERV:
        return req ? p->igatherv(s, c->scount, c->sdtype, r, c->rcounts, c->rdispls, c->rdtype, c->root, comm, req,
                                 p->igatherv_module)
                   : p->gatherv(s, c->scount, c->sdtype, r, c->rcounts, c->rdispls, c->rdtype, c->root, comm,
                                p->gatherv_module);
    case I_REDUCE:
        return req ? p->ireduce(s, r, c->rcount, c->rdtype, c->op, c->root, comm, req, p->ireduce_module)
                   : p->reduce(s, r, c->rcount, c->rdtype, c->op, c->root, comm, p->reduce_module);
    case I_REDUCE_SCATTER:
        return req ? p->ireduce_scatter(s, r, c->rcounts, c->rdtype, c->op, comm, req, p->ireduce_scatter_module)
                   : p->reduce_scatter(s, r, c->rcounts, c->rdtype, c->op, comm, p->reduce_scatter_module);
    case I_REDUCE_SCATTER_BLOCK:
        return req ? p->ireduce_scatter_block(s, r, c->rcount, c->rdtype, c->op, comm, req,
                                              p->ireduce_scatter_block_module)
                   : p->reduce_scatter_block(s, r, c->rcount, c->rdtype, c->op, comm, p->reduce_scatter_block_module);
    case I_SCATTER:
        return req ? p->iscatter(s, c->scount, c->sdtype, r, c->rcount, c->rdtype, c->root, comm, req,
                                 p->iscatter_module)
                   : p->scatter(s, c->scount, c->sdtype, r, c->rcount, c->rdtype, c->root, comm, p->scatter_module);
    case I_SCATTERV:
        return req ? p->iscatterv(s, c->scounts, c->sdispls, c->sdtype, r, c->rcount, c->rdtype, c->root, comm, req,
                                  p->iscatterv_module)
                   : p->scatterv(s, c->scounts, c->sdispls, c->sdtype, r, c->rcount, c->rdtype, c->root, comm,
                                 p->scatterv_module);
    }
    return OMPI_ERR_BAD_PARAM;
}

static int run(inter_call_t c, ompi_communicator_t *comm, ompi_request_t **request, mca_coll_base_module_t *module)
{
    mca_coll_gpu_module_t *m = COLL_GPU_MODULE(module);
    const roles_t r = roles(&c);
    /* MPI defines no MPI_IN_PLACE on intercommunicators, and Open MPI's
     * argument checks let it through to some modules (reduce_scatter),
     * which then use it as an address. */
    if ((r.send && c.sbuf == MPI_IN_PLACE) || (r.recv && c.rbuf == MPI_IN_PLACE)) {
        opal_output(0, "coll:gpu: %s: MPI_IN_PLACE is not defined on an intercommunicator", comm->c_name);
        return MPI_ERR_ARG;
    }
    if (!on_device(&c, r, comm)) return call_prev(&c, comm, request, &m->prev);
    coll_gpu_stage_t *st = coll_gpu_stage_new();
    if (st) stage_buffers(st, &c, comm);
    int rc = coll_gpu_stage_failed(st);
    if (rc) return rc;
    rc = call_prev(&c, comm, request, &m->prev);
    return coll_gpu_stage_finish(st, rc, comm, request);
}

/* The entry points: a blocking and a nonblocking one per kind. */

int mca_coll_gpu_inter_allgather(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, int rcount,
                                 ompi_datatype_t *rdtype, ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    inter_call_t c = {.kind = I_ALLGATHER, .sbuf = sbuf, .scount = scount, .sdtype = sdtype, .rbuf = rbuf,
                      .rcount = rcount, .rdtype = rdtype};
    return run(c, comm, NULL, module);
}

int mca_coll_gpu_inter_iallgather(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, int rcount,
                                  ompi_datatype_t *rdtype, ompi_communicator_t *comm, ompi_request_t **request,
                                  mca_coll_base_module_t *module)
{
    inter_call_t c = {.kind = I_ALLGATHER, .sbuf = sbuf, .scount = scount, .sdtype = sdtype, .rbuf = rbuf,
                      .rcount = rcount, .rdtype = rdtype};
    return run(c, comm, request, module);
}

int mca_coll_gpu_inter_allgatherv(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf,
                                  const int *rcounts, const int *displs, ompi_datatype_t *rdtype,
                                  ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    inter_call_t c = {.kind = I_ALLGATHERV, .sbuf = sbuf, .scount = scount, .sdtype = sdtype, .rbuf = rbuf,
                      .rcounts = rcounts, .rdispls = displs, .rdtype = rdtype};
    return run(c, comm, NULL, module);
}

int mca_coll_gpu_inter_iallgatherv(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf,
                                   const int *rcounts, const int *displs, ompi_datatype_t *rdtype,
                                   ompi_communicator_t *comm, ompi_request_t **request,
                                   mca_coll_base_module_t *module)
{
    inter_call_t c = {.kind = I_ALLGATHERV, .sbuf = sbuf, .scount = scount, .sdtype = sdtype, .rbuf = rbuf,
                      .rcounts = rcounts, .rdispls = displs, .rdtype = rdtype};
    return run(c, comm, request, module);
}

int mca_coll_gpu_inter_allreduce(const void *sbuf, void *rbuf, int count, ompi_datatype_t *dtype, ompi_op_t *op,
                                 ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    inter_call_t c = {.kind = I_ALLREDUCE, .sbuf = sbuf, .rbuf = rbuf, .rcount = count, .rdtype = dtype, .op = op};
    return run(c, comm, NULL, module);
}

int mca_coll_gpu_inter_iallreduce(const void *sbuf, void *rbuf, int count, ompi_datatype_t *dtype, ompi_op_t *op,
                                  ompi_communicator_t *comm, ompi_request_t **request, mca_coll_base_module_t *module)
{
    inter_call_t c = {.kind = I_ALLREDUCE, .sbuf = sbuf, .rbuf = rbuf, .rcount = count, .rdtype = dtype, .op = op};
    return run(c, comm, request, module);
}

int mca_coll_gpu_inter_alltoall(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, int rcount,
                                ompi_datatype_t *rdtype, ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    inter_call_t c = {.kind = I_ALLTOALL, .sbuf = sbuf, .scount = scount, .sdtype = sdtype, .rbuf = rbuf,
                      .rcount = rcount, .rdtype = rdtype};
    return run(c, comm, NULL, module);
}

int mca_coll_gpu_inter_ialltoall(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, int rcount,
                                 ompi_datatype_t *rdtype, ompi_communicator_t *comm, ompi_request_t **request,
                                 mca_coll_base_module_t *module)
{
    inter_call_t c = {.kind = I_ALLTOALL, .sbuf = sbuf, .scount = scount, .sdtype = sdtype, .rbuf = rbuf,
                      .rcount = rcount, .rdtype = rdtype};
    return run(c, comm, request, module);
}

int mca_coll_gpu_inter_alltoallv(const void *sbuf, const int *scounts, const int *sdispls, ompi_datatype_t *sdtype,
                                 void *rbuf, const int *rcounts, const int *rdispls, ompi_datatype_t *rdtype,
                                 ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    inter_call_t c = {.kind = I_ALLTOALLV, .sbuf = sbuf, .scounts = scounts, .sdispls = sdispls, .sdtype = sdtype,
                      .rbuf = rbuf, .rcounts = rcounts, .rdispls = rdispls, .rdtype = rdtype};
    return run(c, comm, NULL, module);
}

int mca_coll_gpu_inter_ialltoallv(const void *sbuf, const int *scounts, const int *sdispls, ompi_datatype_t *sdtype,
                                  void *rbuf, const int *rcounts, const int *rdispls, ompi_datatype_t *rdtype,
                                  ompi_communicator_t *comm, ompi_request_t **request, mca_coll_base_module_t *module)
{
    inter_call_t c = {.kind = I_ALLTOALLV, .sbuf = sbuf, .scounts = scounts, .sdispls = sdispls, .sdtype = sdtype,
                      .rbuf = rbuf, .rcounts = rcounts, .rdispls = rdispls, .rdtype = rdtype};
    return run(c, comm, request, module);
}

int mca_coll_gpu_inter_alltoallw(const void *sbuf, const int *scounts, const int *sdispls,
                                 ompi_datatype_t *const *sdtypes, void *rbuf, const int *rcounts, const int *rdispls,
                                 ompi_datatype_t *const *rdtypes, ompi_communicator_t *comm,
                                 mca_coll_base_module_t *module)
{
    inter_call_t c = {.kind = I_ALLTOALLW, .sbuf = sbuf, .scounts = scounts, .sdispls = sdispls, .sdtypes = sdtypes,
                      .rbuf = rbuf, .rcounts = rcounts, .rdispls = rdispls, .rdtypes = rdtypes};
    return run(c, comm, NULL, module);
}

int mca_coll_gpu_inter_ialltoallw(const void *sbuf, const int *scounts, const int *sdispls,
                                  ompi_datatype_t *const *sdtypes, void *rbuf, const int *rcounts, const int *rdispls,
                                  ompi_datatype_t *const *rdtypes, ompi_communicator_t *comm,
                                  ompi_request_t **request, mca_coll_base_module_t *module)
{
    inter_call_t c = {.kind = I_ALLTOALLW, .sbuf = sbuf, .scounts = scounts, .sdispls = sdispls, .sdtypes = sdtypes,
                      .rbuf = rbuf, .rcounts = rcounts, .rdispls = rdispls, .rdtypes = rdtypes};
    return run(c, comm, request, module);
}

int mca_coll_gpu_inter_bcast(void *buf, int count, ompi_datatype_t *dtype, int root, ompi_communicator_t *comm,
                             mca_coll_base_module_t *module)
{
    inter_call_t c = {.kind = I_BCAST, .rbuf = buf, .rcount = count, .rdtype = dtype, .root = root};
    return run(c, comm, NULL, module);
}

int mca_coll_gpu_inter_ibcast(void *buf, int count, ompi_datatype_t *dtype, int root, ompi_communicator_t *comm,
                              ompi_request_t **request, mca_coll_base_module_t *module)
{
    inter_call_t c = {.kind = I_BCAST, .rbuf = buf, .rcount = count, .rdtype = dtype, .root = root};
    return run(c, comm, request, module);
}

int mca_coll_gpu_inter_gather(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, int rcount,
                              ompi_datatype_t *rdtype, int root, ompi_communicator_t *comm,
                              mca_coll_base_module_t *module)
{
    inter_call_t c = {.kind = I_GATHER, .sbuf = sbuf, .scount = scount, .sdtype = sdtype, .rbuf = rbuf,
                      .rcount = rcount, .rdtype = rdtype, .root = root};
    return run(c, comm, NULL, module);
}

int mca_coll_gpu_inter_igather(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, int rcount,
                               ompi_datatype_t *rdtype, int root, ompi_communicator_t *comm, ompi_request_t **request,
                               mca_coll_base_module_t *module)
{
    inter_call_t c = {.kind = I_GATHER, .sbuf = sbuf, .scount = scount, .sdtype = sdtype, .rbuf = rbuf,
                      .rcount = rcount, .rdtype = rdtype, .root = root};
    return run(c, comm, request, module);
}

int mca_coll_gpu_inter_gatherv(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, const int *rcounts,
                               const int *displs, ompi_datatype_t *rdtype, int root, ompi_communicator_t *comm,
                               mca_coll_base_module_t *module)
{
    inter_call_t c = {.kind = I_GATHERV, .sbuf = sbuf, .scount = scount, .sdtype = sdtype, .rbuf = rbuf,
                      .rcounts = rcounts, .rdispls = displs, .rdtype = rdtype, .root = root};
    return run(c, comm, NULL, module);
}

int mca_coll_gpu_inter_igatherv(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, const int *rcounts,
                                const int *displs, ompi_datatype_t *rdtype, int root, ompi_communicator_t *comm,
                                ompi_request_t **request, mca_coll_base_module_t *module)
{
    inter_call_t c = {.kind = I_GATHERV, .sbuf = sbuf, .scount = scount, .sdtype = sdtype, .rbuf = rbuf,
                      .rcounts = rcounts, .rdispls = displs, .rdtype = rdtype, .root = root};
    return run(c, comm, request, module);
}

int mca_coll_gpu_inter_reduce(const void *sbuf, void *rbuf, int count, ompi_datatype_t *dtype, ompi_op_t *op,
                              int root, ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    inter_call_t c = {.kind = I_REDUCE, .sbuf = sbuf, .rbuf = rbuf, .rcount = count, .rdtype = dtype, .op = op,
                      .root = root};
    return run(c, comm, NULL, module);
}

int mca_coll_gpu_inter_ireduce(const void *sbuf, void *rbuf, int count, ompi_datatype_t *dtype, ompi_op_t *op,
                               int root, ompi_communicator_t *comm, ompi_request_t **request,
                               mca_coll_base_module_t *module)
{
    inter_call_t c = {.kind = I_REDUCE, .sbuf = sbuf, .rbuf = rbuf, .rcount = count, .rdtype = dtype, .op = op,
                      .root = root};
    return run(c, comm, request, module);
}

int mca_coll_gpu_inter_reduce_scatter(const void *sbuf, void *rbuf, const int *rcounts, ompi_datatype_t *dtype,
                                      ompi_op_t *op, ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    inter_call_t c = {.kind = I_REDUCE_SCATTER, .sbuf = sbuf, .rbuf = rbuf, .rcounts = rcounts, .rdtype = dtype,
                      .op = op};
    return run(c, comm, NULL, module);
}

int mca_coll_gpu_inter_ireduce_scatter(const void *sbuf, void *rbuf, const int *rcounts, ompi_datatype_t *dtype,
                                       ompi_op_t *op, ompi_communicator_t *comm, ompi_request_t **request,
                                       mca_coll_base_module_t *module)
{
    inter_call_t c = {.kind = I_REDUCE_SCATTER, .sbuf = sbuf, .rbuf = rbuf, .rcounts = rcounts, .rdtype = dtype,
                      .op = op};
    return run(c, comm, request, module);
}

int mca_coll_gpu_inter_reduce_scatter_block(const void *sbuf, void *rbuf, int rcount, ompi_datatype_t *dtype,
                                            ompi_op_t *op, ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    inter_call_t c = {.kind = I_REDUCE_SCATTER_BLOCK, .sbuf = sbuf, .rbuf = rbuf, .rcount = rcount, .rdtype = dtype,
                      .op = op};
    return run(c, comm, NULL, module);
}

int mca_coll_gpu_inter_ireduce_scatter_block(const void *sbuf, void *rbuf, int rcount, ompi_datatype_t *dtype,
                                             ompi_op_t *op, ompi_communicator_t *comm, ompi_request_t **request,
                                             mca_coll_base_module_t *module)
{
    inter_call_t c = {.kind = I_REDUCE_SCATTER_BLOCK, .sbuf = sbuf, .rbuf = rbuf, .rcount = rcount, .rdtype = dtype,
                      .op = op};
    return run(c, comm, request, module);
}

int mca_coll_gpu_inter_scatter(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, int rcount,
                               ompi_datatype_t *rdtype, int root, ompi_communicator_t *comm,
                               mca_coll_base_module_t *module)
{
    inter_call_t c = {.kind = I_SCATTER, .sbuf = sbuf, .scount = scount, .sdtype = sdtype, .rbuf = rbuf,
                      .rcount = rcount, .rdtype = rdtype, .root = root};
    return run(c, comm, NULL, module);
}

int mca_coll_gpu_inter_iscatter(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, int rcount,
                                ompi_datatype_t *rdtype, int root, ompi_communicator_t *comm,
                                ompi_request_t **request, mca_coll_base_module_t *module)
{
    inter_call_t c = {.kind = I_SCATTER, .sbuf = sbuf, .scount = scount, .sdtype = sdtype, .rbuf = rbuf,
                      .rcount = rcount, .rdtype = rdtype, .root = root};
    return run(c, comm, request, module);
}

int mca_coll_gpu_inter_scatterv(const void *sbuf, const int *scounts, const int *displs, ompi_datatype_t *sdtype,
                                void *rbuf, int rcount, ompi_datatype_t *rdtype, int root, ompi_communicator_t *comm,
                                mca_coll_base_module_t *module)
{
    inter_call_t c = {.kind = I_SCATTERV, .sbuf = sbuf, .scounts = scounts, .sdispls = displs, .sdtype = sdtype,
                      .rbuf = rbuf, .rcount = rcount, .rdtype = rdtype, .root = root};
    return run(c, comm, NULL, module);
}

int mca_coll_gpu_inter_iscatterv(const void *sbuf, const int *scounts, const int *displs, ompi_datatype_t *sdtype,
                                 void *rbuf, int rcount, ompi_datatype_t *rdtype, int root, ompi_communicator_t *comm,
                                 ompi_request_t **request, mca_coll_base_module_t *module)
{
    inter_call_t c = {.kind = I_SCATTERV, .sbuf = sbuf, .scounts = scounts, .sdispls = displs, .sdtype = sdtype,
                      .rbuf = rbuf, .rcount = rcount, .rdtype = rdtype, .root = root};
    return run(c, comm, request, module);
}
