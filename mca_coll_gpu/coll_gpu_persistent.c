/* Persistent collectives (MPI-4 *_init; MPIX_*_init in Open MPI 4.1).
 *
 * Open MPI's own persistent collectives (coll/libnbc) treat device buffers
 * as host memory and crash on them. Here *_init records the call (it may
 * not wait for other ranks, so it cannot decide more), and each MPI_Start
 * takes the route a nonblocking call takes (coll_gpu_run_start): the
 * queued kinds plan once for the peer kernels, at the first start that
 * finds them set up, and then each start is one launch; every other start
 * runs the nonblocking call, and the request completes when that does.
 * Every rank's persistent requests take this route, whatever its buffers,
 * so that all ranks start the same kind of operation underneath.
 *
 * The request is the component's one request type (coll_gpu_request.c),
 * carrying the record. */
#include "coll_gpu.h"

typedef struct coll_gpu_persist {
    coll_gpu_call_t call; /* as *_init received it: MPI keeps buffers and arrays valid until the free */
    mca_coll_gpu_module_t *module;
    ompi_communicator_t *comm;
    coll_gpu_queued_t *q; /* the peer kernels' plan, once a start made one */
} coll_gpu_persist_t;

static void record_free(void *record)
{
    coll_gpu_persist_t *p = record;
    coll_gpu_queued_free(p->q);
    free(p);
}

bool coll_gpu_persistent_queued(mca_coll_gpu_module_t *m, const coll_gpu_call_t *c, coll_gpu_request_t *r, int *rc)
{
    coll_gpu_persist_t *p = coll_gpu_request_record(coll_gpu_request_mpi(r));
    *rc = OMPI_SUCCESS;
    if (p->q && coll_gpu_queued_retired(p->q)) { /* every rank's: its starts stage from here on */
        coll_gpu_queued_free(p->q);
        p->q = NULL;
    }
    if (p->q == NULL && !coll_gpu_queued_plan(m, c, true, &p->q, rc)) return false;
    if (p->q == NULL) return true; /* *rc: this rank's error */
    if ((*rc = coll_gpu_queued_start(p->q)) != OMPI_SUCCESS) return true;
    coll_gpu_request_watch_queued(r, p->q, true);
    return true;
}

static void start_one(ompi_request_t *req)
{
    coll_gpu_persist_t *p = coll_gpu_request_record(req);
    req->req_state = OMPI_REQUEST_ACTIVE;
    req->req_complete = REQUEST_PENDING;
    req->req_status.MPI_ERROR = MPI_SUCCESS;
    req->req_type = OMPI_REQUEST_COLL;
    ompi_request_t *inner = NULL;
    int rc = coll_gpu_run_start(p->module, p->comm, &p->call, &inner, (coll_gpu_request_t *)req);
    if (rc == OMPI_SUCCESS && inner == NULL) return; /* queued: watched already */
    if (rc == OMPI_SUCCESS) {
        coll_gpu_request_watch_inner((coll_gpu_request_t *)req, inner, NULL);
        return;
    }
    /* Nothing runs: the start is over, with its error. */
    if (inner) ompi_request_free(&inner);
    coll_gpu_request_end(req, rc);
}

static int persist_start(size_t count, ompi_request_t **requests)
{
    for (size_t i = 0; i < count; i++)
        if (requests[i] == NULL || requests[i]->req_state == OMPI_REQUEST_ACTIVE) return OMPI_ERR_BAD_PARAM;
    for (size_t i = 0; i < count; i++) start_one(requests[i]);
    coll_gpu_pending_progress(); /* one already done (a one-rank copy) completes at once */
    return OMPI_SUCCESS;
}

int coll_gpu_persistent_new(mca_coll_gpu_module_t *m, ompi_communicator_t *comm, const coll_gpu_call_t *c,
                            ompi_request_t **request)
{
    coll_gpu_persist_t *p = calloc(1, sizeof *p);
    coll_gpu_request_t *r = p ? coll_gpu_request_new(comm, true) : NULL; /* inactive, complete */
    if (r == NULL) {
        free(p);
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    p->call = *c;
    p->module = m;
    p->comm = comm;
    coll_gpu_request_set_record(r, p, record_free);
    coll_gpu_request_mpi(r)->req_start = persist_start;
    *request = coll_gpu_request_mpi(r);
    return OMPI_SUCCESS;
}
