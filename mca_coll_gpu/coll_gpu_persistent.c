/* Persistent collectives (MPI-4 *_init; MPIX_*_init in Open MPI 4.1).
 *
 * Open MPI's own persistent collectives (coll/libnbc) treat device buffers
 * as host memory and crash on them. Here the *_init call records the
 * arguments (it may not wait for other ranks, so it cannot decide more).
 * A start of allreduce, reduce, bcast, allgather, reduce_scatter_block or
 * alltoall plans the call for the peer kernels once (coll_gpu_queued.c) and
 * launches it; the other kinds (alltoallw and the neighbourhood ones among
 * them), and these where the peer kernels do not serve, run the component's
 * nonblocking collective (staged through host memory, exactly as MPI_I<coll>
 * does), and the request completes when that does.
 * Every rank's persistent requests take this route, whatever its buffers, so
 * that all ranks start the same kind of operation underneath.
 *
 * The request is the component's one request type (coll_gpu_request.c),
 * carrying the recorded call. */
#include "coll_gpu.h"

#include "ompi/mca/coll/base/coll_base_util.h"

typedef enum { P_ALLREDUCE, P_REDUCE, P_BCAST, P_ALLGATHER, P_ALLGATHERV, P_ALLTOALL, P_ALLTOALLV, P_ALLTOALLW,
               P_REDUCE_SCATTER, P_REDUCE_SCATTER_BLOCK, P_GATHER, P_GATHERV, P_SCATTER, P_SCATTERV,
               P_SCAN, P_EXSCAN, P_NEIGHBOR_ALLGATHER, P_NEIGHBOR_ALLGATHERV, P_NEIGHBOR_ALLTOALL,
               P_NEIGHBOR_ALLTOALLV, P_NEIGHBOR_ALLTOALLW } persist_kind_t;

/* The call as *_init recorded it: the record of a persistent request of the
 * component's request type (coll_gpu_request.c frees it with the request). */
typedef struct coll_gpu_persist_t {
    persist_kind_t kind;
    mca_coll_base_module_t *module;
    ompi_communicator_t *comm;
    /* The call as *_init received it (MPI keeps buffers and arrays valid
     * until the request is freed). */
    const void *sbuf;
    void *rbuf;
    int scount, rcount, root;
    const int *scounts, *sdispls, *rcounts, *rdispls;
    ompi_datatype_t *sdtype, *rdtype;
    ompi_datatype_t *const *sdtypes, *const *rdtypes; /* the w kinds */
    const MPI_Aint *sdispls_aint, *rdispls_aint;      /* neighbor_alltoallw */
    ompi_op_t *op;
    /* The six kinds the peer kernels take without agreement: planned at the
     * first start that finds the GPU path set up (a start decides as a
     * nonblocking call does, from what every rank knows alike), then each
     * start is one launch; NULL while they are staged. */
    coll_gpu_queued_t *q;
} coll_gpu_persist_t;

static void record_free(void *record)
{
    coll_gpu_persist_t *p = record;
    coll_gpu_queued_free(p->q);
    free(p);
}

/* `p` as the queued path names it; false for the kinds it does not take. */
static bool persist_call(const coll_gpu_persist_t *p, coll_gpu_call_t *c)
{
    coll_gpu_call_t x = {.sbuf = p->sbuf, .scount = (size_t)p->scount, .sdtype = p->sdtype, .rbuf = p->rbuf,
                         .rcount = (size_t)p->rcount, .rdtype = p->rdtype, .root = p->root};
    switch (p->kind) {
    case P_ALLREDUCE: x.kind = GPUCOLL_COLL_ALLREDUCE; x.op = p->op; break;
    case P_REDUCE: x.kind = GPUCOLL_COLL_REDUCE; x.op = p->op; break;
    case P_REDUCE_SCATTER_BLOCK: x.kind = GPUCOLL_COLL_REDUCE_SCATTER_BLOCK; x.op = p->op; break;
    case P_BCAST: x.kind = GPUCOLL_COLL_BCAST; break;
    case P_ALLGATHER: x.kind = GPUCOLL_COLL_ALLGATHER; break;
    case P_ALLTOALL: x.kind = GPUCOLL_COLL_ALLTOALL; break;
    default: return false;
    }
    *c = x;
    return true;
}

/* One start of `p` on the peer kernels: 1 if it was launched, 0 if it is
 * staged, an MPI error (nothing runs) otherwise. */
static int persist_start_queued(coll_gpu_persist_t *p, coll_gpu_request_t *r)
{
    coll_gpu_call_t c;
    if (!persist_call(p, &c)) return 0;
    int rc = OMPI_SUCCESS;
    if (p->q == NULL && !coll_gpu_queued_plan(COLL_GPU_MODULE(p->module), &c, true, &p->q, &rc)) return 0;
    if (p->q == NULL) return rc;
    if ((rc = coll_gpu_queued_start(p->q)) != OMPI_SUCCESS) return rc;
    coll_gpu_request_watch_queued(r, p->q, true);
    return 1;
}

/* The nonblocking collective for one start of `p`, through the module's
 * own slot: on an intercommunicator that is the intercommunicator entry
 * (coll_gpu_inter.c), elsewhere the ordinary one; a slot left empty (no
 * module below provides it) is an error, not a call through NULL. */
#define START(slot, ...) (m->coll_##slot ? m->coll_##slot(__VA_ARGS__, c, r, m) : OMPI_ERR_NOT_SUPPORTED)
static int start_inner(coll_gpu_persist_t *p, ompi_request_t **r)
{
    mca_coll_base_module_t *m = p->module;
    ompi_communicator_t *c = p->comm;
    switch (p->kind) {
    case P_ALLREDUCE: return START(iallreduce, p->sbuf, p->rbuf, p->rcount, p->rdtype, p->op);
    case P_REDUCE: return START(ireduce, p->sbuf, p->rbuf, p->rcount, p->rdtype, p->op, p->root);
    case P_BCAST: return START(ibcast, p->rbuf, p->rcount, p->rdtype, p->root);
    case P_ALLGATHER: return START(iallgather, p->sbuf, p->scount, p->sdtype, p->rbuf, p->rcount, p->rdtype);
    case P_ALLGATHERV:
        return START(iallgatherv, p->sbuf, p->scount, p->sdtype, p->rbuf, p->rcounts, p->rdispls, p->rdtype);
    case P_ALLTOALL: return START(ialltoall, p->sbuf, p->scount, p->sdtype, p->rbuf, p->rcount, p->rdtype);
    case P_ALLTOALLV:
        return START(ialltoallv, p->sbuf, p->scounts, p->sdispls, p->sdtype, p->rbuf, p->rcounts, p->rdispls,
                     p->rdtype);
    case P_ALLTOALLW:
        return START(ialltoallw, p->sbuf, p->scounts, p->sdispls, p->sdtypes, p->rbuf, p->rcounts, p->rdispls,
                     p->rdtypes);
    case P_REDUCE_SCATTER: return START(ireduce_scatter, p->sbuf, p->rbuf, p->rcounts, p->rdtype, p->op);
    case P_REDUCE_SCATTER_BLOCK:
        return START(ireduce_scatter_block, p->sbuf, p->rbuf, p->rcount, p->rdtype, p->op);
    case P_GATHER:
        return START(igather, p->sbuf, p->scount, p->sdtype, p->rbuf, p->rcount, p->rdtype, p->root);
    case P_GATHERV:
        return START(igatherv, p->sbuf, p->scount, p->sdtype, p->rbuf, p->rcounts, p->rdispls, p->rdtype, p->root);
    case P_SCATTER:
        return START(iscatter, p->sbuf, p->scount, p->sdtype, p->rbuf, p->rcount, p->rdtype, p->root);
    case P_SCATTERV:
        return START(iscatterv, p->sbuf, p->scounts, p->sdispls, p->sdtype, p->rbuf, p->rcount, p->rdtype, p->root);
    case P_SCAN: return START(iscan, p->sbuf, p->rbuf, p->rcount, p->rdtype, p->op);
    case P_EXSCAN: return START(iexscan, p->sbuf, p->rbuf, p->rcount, p->rdtype, p->op);
    case P_NEIGHBOR_ALLGATHER:
        return START(ineighbor_allgather, p->sbuf, p->scount, p->sdtype, p->rbuf, p->rcount, p->rdtype);
    case P_NEIGHBOR_ALLGATHERV:
        return START(ineighbor_allgatherv, p->sbuf, p->scount, p->sdtype, p->rbuf, p->rcounts, p->rdispls,
                     p->rdtype);
    case P_NEIGHBOR_ALLTOALL:
        return START(ineighbor_alltoall, p->sbuf, p->scount, p->sdtype, p->rbuf, p->rcount, p->rdtype);
    case P_NEIGHBOR_ALLTOALLV:
        return START(ineighbor_alltoallv, p->sbuf, p->scounts, p->sdispls, p->sdtype, p->rbuf, p->rcounts,
                     p->rdispls, p->rdtype);
    case P_NEIGHBOR_ALLTOALLW:
        return START(ineighbor_alltoallw, p->sbuf, p->scounts, p->sdispls_aint, p->sdtypes, p->rbuf, p->rcounts,
                     p->rdispls_aint, p->rdtypes);
    }
    return OMPI_ERR_BAD_PARAM;
}
#undef START

static int persist_start(size_t count, ompi_request_t **requests)
{
    for (size_t i = 0; i < count; i++) {
        ompi_request_t *req = requests[i];
        if (req == NULL || req->req_state == OMPI_REQUEST_ACTIVE) return OMPI_ERR_BAD_PARAM;
        coll_gpu_persist_t *p = coll_gpu_request_record(req);
        req->req_state = OMPI_REQUEST_ACTIVE;
        req->req_complete = REQUEST_PENDING;
        req->req_status.MPI_ERROR = MPI_SUCCESS;
        int queued = persist_start_queued(p, (coll_gpu_request_t *)req);
        if (queued == 1) continue;
        ompi_request_t *inner = NULL;
        int rc = queued != 0 ? queued : start_inner(p, &inner);
        if (rc != OMPI_SUCCESS || inner == NULL) {
            /* Nothing runs: the start is over, with its error. */
            if (inner) ompi_request_free(&inner);
            req->req_status.MPI_ERROR = rc != OMPI_SUCCESS ? rc : MPI_ERR_INTERN;
            ompi_request_complete(req, true);
            continue;
        }
        coll_gpu_request_watch_inner((coll_gpu_request_t *)req, inner, NULL);
    }
    coll_gpu_pending_progress(); /* one already done (a one-rank copy) completes at once */
    return OMPI_SUCCESS;
}

static int persist_new(persist_kind_t kind, ompi_communicator_t *comm, mca_coll_base_module_t *module,
                       ompi_request_t **request, coll_gpu_persist_t **out)
{
    coll_gpu_persist_t *p = calloc(1, sizeof *p);
    coll_gpu_request_t *r = p ? coll_gpu_request_new(comm, true) : NULL; /* inactive, complete */
    if (r == NULL) {
        free(p);
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    coll_gpu_request_set_record(r, p, record_free);
    coll_gpu_request_mpi(r)->req_start = persist_start;
    p->kind = kind;
    p->comm = comm;
    p->module = module;
    *request = coll_gpu_request_mpi(r);
    *out = p;
    return OMPI_SUCCESS;
}

/* Recording each kind's arguments: a reduction (count, dtype, op). */
static int persist_reduction(persist_kind_t kind, const void *sbuf, void *rbuf, int count, ompi_datatype_t *dtype,
                             ompi_op_t *op, int root, const int *rcounts, ompi_communicator_t *comm,
                             ompi_request_t **request, mca_coll_base_module_t *module)
{
    coll_gpu_persist_t *p;
    int rc = persist_new(kind, comm, module, request, &p);
    if (rc != OMPI_SUCCESS) return rc;
    p->sbuf = sbuf;
    p->rbuf = rbuf;
    p->rcount = count;
    p->rdtype = dtype;
    p->op = op;
    p->root = root;
    p->rcounts = rcounts;
    return OMPI_SUCCESS;
}

/* Data movement: send and receive sides. */
static int persist_move(persist_kind_t kind, const void *sbuf, int scount, const int *scounts, const int *sdispls,
                        ompi_datatype_t *sdtype, void *rbuf, int rcount, const int *rcounts, const int *rdispls,
                        ompi_datatype_t *rdtype, int root, ompi_communicator_t *comm, ompi_request_t **request,
                        mca_coll_base_module_t *module)
{
    coll_gpu_persist_t *p;
    int rc = persist_new(kind, comm, module, request, &p);
    if (rc != OMPI_SUCCESS) return rc;
    p->sbuf = sbuf;
    p->scount = scount;
    p->scounts = scounts;
    p->sdispls = sdispls;
    p->sdtype = sdtype;
    p->rbuf = rbuf;
    p->rcount = rcount;
    p->rcounts = rcounts;
    p->rdispls = rdispls;
    p->rdtype = rdtype;
    p->root = root;
    return OMPI_SUCCESS;
}

/* The w kinds: a datatype per block, int or MPI_Aint byte displacements. */
static int persist_w(persist_kind_t kind, const void *sbuf, const int *scounts, const int *sdispls,
                     const MPI_Aint *sdispls_aint, ompi_datatype_t *const *sdtypes, void *rbuf, const int *rcounts,
                     const int *rdispls, const MPI_Aint *rdispls_aint, ompi_datatype_t *const *rdtypes,
                     ompi_communicator_t *comm, ompi_request_t **request, mca_coll_base_module_t *module)
{
    coll_gpu_persist_t *p;
    int rc = persist_move(kind, sbuf, 0, scounts, sdispls, NULL, rbuf, 0, rcounts, rdispls, NULL, 0, comm, request,
                          module);
    if (rc != OMPI_SUCCESS) return rc;
    p = coll_gpu_request_record(*request);
    p->sdtypes = sdtypes;
    p->rdtypes = rdtypes;
    p->sdispls_aint = sdispls_aint;
    p->rdispls_aint = rdispls_aint;
    return OMPI_SUCCESS;
}

int mca_coll_gpu_allreduce_init(const void *sbuf, void *rbuf, int count, ompi_datatype_t *dtype, ompi_op_t *op,
                                ompi_communicator_t *comm, ompi_info_t *info, ompi_request_t **request,
                                mca_coll_base_module_t *module)
{
    (void)info;
    return persist_reduction(P_ALLREDUCE, sbuf, rbuf, count, dtype, op, 0, NULL, comm, request, module);
}

int mca_coll_gpu_reduce_init(const void *sbuf, void *rbuf, int count, ompi_datatype_t *dtype, ompi_op_t *op,
                             int root, ompi_communicator_t *comm, ompi_info_t *info, ompi_request_t **request,
                             mca_coll_base_module_t *module)
{
    (void)info;
    return persist_reduction(P_REDUCE, sbuf, rbuf, count, dtype, op, root, NULL, comm, request, module);
}

int mca_coll_gpu_reduce_scatter_init(const void *sbuf, void *rbuf, const int *rcounts, ompi_datatype_t *dtype,
                                     ompi_op_t *op, ompi_communicator_t *comm, ompi_info_t *info,
                                     ompi_request_t **request, mca_coll_base_module_t *module)
{
    (void)info;
    return persist_reduction(P_REDUCE_SCATTER, sbuf, rbuf, 0, dtype, op, 0, rcounts, comm, request, module);
}

int mca_coll_gpu_reduce_scatter_block_init(const void *sbuf, void *rbuf, int rcount, ompi_datatype_t *dtype,
                                           ompi_op_t *op, ompi_communicator_t *comm, ompi_info_t *info,
                                           ompi_request_t **request, mca_coll_base_module_t *module)
{
    (void)info;
    return persist_reduction(P_REDUCE_SCATTER_BLOCK, sbuf, rbuf, rcount, dtype, op, 0, NULL, comm, request, module);
}

int mca_coll_gpu_scan_init(const void *sbuf, void *rbuf, int count, ompi_datatype_t *dtype, ompi_op_t *op,
                           ompi_communicator_t *comm, ompi_info_t *info, ompi_request_t **request,
                           mca_coll_base_module_t *module)
{
    (void)info;
    return persist_reduction(P_SCAN, sbuf, rbuf, count, dtype, op, 0, NULL, comm, request, module);
}

int mca_coll_gpu_exscan_init(const void *sbuf, void *rbuf, int count, ompi_datatype_t *dtype, ompi_op_t *op,
                             ompi_communicator_t *comm, ompi_info_t *info, ompi_request_t **request,
                             mca_coll_base_module_t *module)
{
    (void)info;
    return persist_reduction(P_EXSCAN, sbuf, rbuf, count, dtype, op, 0, NULL, comm, request, module);
}

int mca_coll_gpu_bcast_init(void *buf, int count, ompi_datatype_t *dtype, int root, ompi_communicator_t *comm,
                            ompi_info_t *info, ompi_request_t **request, mca_coll_base_module_t *module)
{
    (void)info;
    return persist_move(P_BCAST, NULL, 0, NULL, NULL, NULL, buf, count, NULL, NULL, dtype, root, comm, request,
                        module);
}

int mca_coll_gpu_allgather_init(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, int rcount,
                                ompi_datatype_t *rdtype, ompi_communicator_t *comm, ompi_info_t *info,
                                ompi_request_t **request, mca_coll_base_module_t *module)
{
    (void)info;
    return persist_move(P_ALLGATHER, sbuf, scount, NULL, NULL, sdtype, rbuf, rcount, NULL, NULL, rdtype, 0, comm,
                        request, module);
}

int mca_coll_gpu_allgatherv_init(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf,
                                 const int *rcounts, const int *displs, ompi_datatype_t *rdtype,
                                 ompi_communicator_t *comm, ompi_info_t *info, ompi_request_t **request,
                                 mca_coll_base_module_t *module)
{
    (void)info;
    return persist_move(P_ALLGATHERV, sbuf, scount, NULL, NULL, sdtype, rbuf, 0, rcounts, displs, rdtype, 0, comm,
                        request, module);
}

int mca_coll_gpu_alltoall_init(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, int rcount,
                               ompi_datatype_t *rdtype, ompi_communicator_t *comm, ompi_info_t *info,
                               ompi_request_t **request, mca_coll_base_module_t *module)
{
    (void)info;
    return persist_move(P_ALLTOALL, sbuf, scount, NULL, NULL, sdtype, rbuf, rcount, NULL, NULL, rdtype, 0, comm,
                        request, module);
}

int mca_coll_gpu_alltoallv_init(const void *sbuf, const int *scounts, const int *sdispls, ompi_datatype_t *sdtype,
                                void *rbuf, const int *rcounts, const int *rdispls, ompi_datatype_t *rdtype,
                                ompi_communicator_t *comm, ompi_info_t *info, ompi_request_t **request,
                                mca_coll_base_module_t *module)
{
    (void)info;
    return persist_move(P_ALLTOALLV, sbuf, 0, scounts, sdispls, sdtype, rbuf, 0, rcounts, rdispls, rdtype, 0, comm,
                        request, module);
}

int mca_coll_gpu_gather_init(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, int rcount,
                             ompi_datatype_t *rdtype, int root, ompi_communicator_t *comm, ompi_info_t *info,
                             ompi_request_t **request, mca_coll_base_module_t *module)
{
    (void)info;
    return persist_move(P_GATHER, sbuf, scount, NULL, NULL, sdtype, rbuf, rcount, NULL, NULL, rdtype, root, comm,
                        request, module);
}

int mca_coll_gpu_gatherv_init(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, const int *rcounts,
                              const int *displs, ompi_datatype_t *rdtype, int root, ompi_communicator_t *comm,
                              ompi_info_t *info, ompi_request_t **request, mca_coll_base_module_t *module)
{
    (void)info;
    return persist_move(P_GATHERV, sbuf, scount, NULL, NULL, sdtype, rbuf, 0, rcounts, displs, rdtype, root, comm,
                        request, module);
}

int mca_coll_gpu_scatter_init(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, int rcount,
                              ompi_datatype_t *rdtype, int root, ompi_communicator_t *comm, ompi_info_t *info,
                              ompi_request_t **request, mca_coll_base_module_t *module)
{
    (void)info;
    return persist_move(P_SCATTER, sbuf, scount, NULL, NULL, sdtype, rbuf, rcount, NULL, NULL, rdtype, root, comm,
                        request, module);
}

int mca_coll_gpu_scatterv_init(const void *sbuf, const int *scounts, const int *displs, ompi_datatype_t *sdtype,
                               void *rbuf, int rcount, ompi_datatype_t *rdtype, int root, ompi_communicator_t *comm,
                               ompi_info_t *info, ompi_request_t **request, mca_coll_base_module_t *module)
{
    (void)info;
    return persist_move(P_SCATTERV, sbuf, 0, scounts, displs, sdtype, rbuf, rcount, NULL, NULL, rdtype, root, comm,
                        request, module);
}

int mca_coll_gpu_alltoallw_init(const void *sbuf, const int *scounts, const int *sdispls,
                                ompi_datatype_t *const *sdtypes, void *rbuf, const int *rcounts, const int *rdispls,
                                ompi_datatype_t *const *rdtypes, ompi_communicator_t *comm, ompi_info_t *info,
                                ompi_request_t **request, mca_coll_base_module_t *module)
{
    (void)info;
    return persist_w(P_ALLTOALLW, sbuf, scounts, sdispls, NULL, sdtypes, rbuf, rcounts, rdispls, NULL, rdtypes, comm,
                     request, module);
}

int mca_coll_gpu_neighbor_allgather_init(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf,
                                         int rcount, ompi_datatype_t *rdtype, ompi_communicator_t *comm,
                                         ompi_info_t *info, ompi_request_t **request, mca_coll_base_module_t *module)
{
    (void)info;
    return persist_move(P_NEIGHBOR_ALLGATHER, sbuf, scount, NULL, NULL, sdtype, rbuf, rcount, NULL, NULL, rdtype, 0,
                        comm, request, module);
}

int mca_coll_gpu_neighbor_allgatherv_init(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf,
                                          const int *rcounts, const int *displs, ompi_datatype_t *rdtype,
                                          ompi_communicator_t *comm, ompi_info_t *info, ompi_request_t **request,
                                          mca_coll_base_module_t *module)
{
    (void)info;
    return persist_move(P_NEIGHBOR_ALLGATHERV, sbuf, scount, NULL, NULL, sdtype, rbuf, 0, rcounts, displs, rdtype, 0,
                        comm, request, module);
}

int mca_coll_gpu_neighbor_alltoall_init(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf,
                                        int rcount, ompi_datatype_t *rdtype, ompi_communicator_t *comm,
                                        ompi_info_t *info, ompi_request_t **request, mca_coll_base_module_t *module)
{
    (void)info;
    return persist_move(P_NEIGHBOR_ALLTOALL, sbuf, scount, NULL, NULL, sdtype, rbuf, rcount, NULL, NULL, rdtype, 0,
                        comm, request, module);
}

int mca_coll_gpu_neighbor_alltoallv_init(const void *sbuf, const int *scounts, const int *sdispls,
                                         ompi_datatype_t *sdtype, void *rbuf, const int *rcounts,
                                         const int *rdispls, ompi_datatype_t *rdtype, ompi_communicator_t *comm,
                                         ompi_info_t *info, ompi_request_t **request,
                                         mca_coll_base_module_t *module)
{
    (void)info;
    return persist_move(P_NEIGHBOR_ALLTOALLV, sbuf, 0, scounts, sdispls, sdtype, rbuf, 0, rcounts, rdispls, rdtype,
                        0, comm, request, module);
}

int mca_coll_gpu_neighbor_alltoallw_init(const void *sbuf, const int *scounts, const MPI_Aint *sdispls,
                                         ompi_datatype_t *const *sdtypes, void *rbuf, const int *rcounts,
                                         const MPI_Aint *rdispls, ompi_datatype_t *const *rdtypes,
                                         ompi_communicator_t *comm, ompi_info_t *info, ompi_request_t **request,
                                         mca_coll_base_module_t *module)
{
    (void)info;
    return persist_w(P_NEIGHBOR_ALLTOALLW, sbuf, scounts, NULL, sdispls, sdtypes, rbuf, rcounts, NULL, rdispls,
                     rdtypes, comm, request, module);
}
