/* The component's one request type, for every nonblocking and persistent
 * collective, whatever runs it: the displaced module on host copies of
 * device buffers (staged: the request completes only after the results are
 * back in device memory, so MPI_Wait/Test never return early), or the peer
 * kernels (coll_gpu_queued.c). A progress callback watches each run in
 * flight (coll_gpu_pending_t) and completes the request when it is over.
 *
 * The request derives from ompi_coll_base_nbc_request_t because the MPI
 * layer (ompi_coll_base_retain_op/datatypes) writes its fields after we
 * return. It holds its communicator (coll_gpu_request_init). */
#include "coll_gpu.h"

#include <pthread.h>

#include "ompi/mca/coll/base/coll_base_util.h"
#include "opal/runtime/opal_progress.h"

struct coll_gpu_request {
    ompi_coll_base_nbc_request_t super;
    coll_gpu_pending_t pending; /* the run in flight, watched by progress */
    coll_gpu_stage_t *stage;    /* a staged run: host copies, released when it completes */
    coll_gpu_queued_t *q;       /* a run on the peer kernels */
    bool keep_q;                /* persistent: q outlives the run (the record frees it) */
    int rc;                     /* a run on the peer kernels: its outcome, once over */
    /* Owners: the application's handle (gone at request_free, which
     * MPI_Wait/Test also call) and the run in flight (gone once its
     * completion is done with it). Whichever goes last frees the request;
     * the two may run at once on different threads. */
    int32_t owners;
    void *record; /* persistent: the recorded call (coll_gpu_persistent.c) */
    void (*record_free)(void *);
};

static void request_destruct(coll_gpu_request_t *r)
{
    if (r->record_free) r->record_free(r->record);
}
static OBJ_CLASS_INSTANCE(coll_gpu_request_t, ompi_coll_base_nbc_request_t, NULL, request_destruct);

static pthread_mutex_t pending_lock = PTHREAD_MUTEX_INITIALIZER;
static coll_gpu_pending_t *pending;  /* inner requests not yet complete */
static int pending_count;            /* read without the lock on the fast path (atomically) */
static bool progress_registered;

static int coll_gpu_progress(void)
{
    if (__atomic_load_n(&pending_count, __ATOMIC_RELAXED) == 0) return 0;
    coll_gpu_pending_t *done = NULL;
    pthread_mutex_lock(&pending_lock);
    for (coll_gpu_pending_t **p = &pending; *p;) {
        coll_gpu_pending_t *w = *p;
        if (w->ready ? w->ready(w) : REQUEST_COMPLETE(w->inner)) {
            *p = w->next;
            w->next = done;
            done = w;
            __atomic_store_n(&pending_count, pending_count - 1, __ATOMIC_RELAXED);
        } else {
            p = &w->next;
        }
    }
    pthread_mutex_unlock(&pending_lock);
    int n = 0;
    /* Outside the lock: completion callbacks may start new collectives. */
    while (done) {
        coll_gpu_pending_t *w = done;
        done = w->next;
        w->complete(w);
        n++;
    }
    return n;
}

void coll_gpu_pending_add(coll_gpu_pending_t *w)
{
    pthread_mutex_lock(&pending_lock);
    if (!progress_registered) {
        opal_progress_register(coll_gpu_progress);
        progress_registered = true;
    }
    w->next = pending;
    pending = w;
    __atomic_store_n(&pending_count, pending_count + 1, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&pending_lock);
}

int coll_gpu_pending_progress(void) { return coll_gpu_progress(); }

/* Every request of the component holds its communicator, as the PML's
 * requests do: MPI lets the application free the communicator (or the
 * request) while the operation is pending, and the module, the team, its
 * GPU state and mapped buffers must outlive the operation. The last owner
 * lets go of both, so the communicator's destruction (and with it the
 * module's) may run here, from progress. */
void coll_gpu_request_init(ompi_request_t *r, ompi_communicator_t *comm, bool persistent,
                           ompi_request_free_fn_t free_fn)
{
    OMPI_REQUEST_INIT(r, persistent);
    r->req_state = persistent ? OMPI_REQUEST_INACTIVE : OMPI_REQUEST_ACTIVE;
    r->req_type = OMPI_REQUEST_COLL;
    r->req_free = free_fn;
    r->req_cancel = coll_gpu_request_cancel;
    r->req_mpi_object.comm = comm;
    r->req_status.MPI_ERROR = MPI_SUCCESS;
    OBJ_RETAIN(comm);
}

void coll_gpu_request_disown(ompi_request_t *request, int32_t *owners)
{
    if (__atomic_sub_fetch(owners, 1, __ATOMIC_ACQ_REL) != 0) return;
    ompi_communicator_t *comm = request->req_mpi_object.comm;
    OMPI_REQUEST_FINI(request);
    OBJ_RELEASE(request);
    OBJ_RELEASE(comm);
}

static int request_free(ompi_request_t **rp)
{
    coll_gpu_request_t *r = (coll_gpu_request_t *)*rp;
    *rp = MPI_REQUEST_NULL;
    coll_gpu_request_disown(&r->super.super, &r->owners); /* a run in flight keeps it until it completes */
    return OMPI_SUCCESS;
}

int coll_gpu_request_cancel(ompi_request_t *request, int complete)
{
    (void)request;
    (void)complete;
    return MPI_ERR_REQUEST; /* collectives cannot be cancelled */
}

coll_gpu_request_t *coll_gpu_request_new(ompi_communicator_t *comm, bool persistent)
{
    coll_gpu_request_t *r = OBJ_NEW(coll_gpu_request_t);
    if (r == NULL) return NULL;
    coll_gpu_request_init(&r->super.super, comm, persistent, request_free);
    r->stage = NULL;
    r->q = NULL;
    r->keep_q = false;
    r->rc = OMPI_SUCCESS;
    r->owners = 1;
    r->record = NULL;
    r->record_free = NULL;
    return r;
}

ompi_request_t *coll_gpu_request_mpi(coll_gpu_request_t *r) { return &r->super.super; }

void coll_gpu_request_drop(coll_gpu_request_t *r) { coll_gpu_request_disown(&r->super.super, &r->owners); }

void coll_gpu_request_set_record(coll_gpu_request_t *r, void *record, void (*record_free)(void *))
{
    r->record = record;
    r->record_free = record_free;
}

void *coll_gpu_request_record(ompi_request_t *request) { return ((coll_gpu_request_t *)request)->record; }

static coll_gpu_request_t *of_pending(coll_gpu_pending_t *w)
{
    return (coll_gpu_request_t *)((char *)w - offsetof(coll_gpu_request_t, pending));
}

/* Every run ends here: its outcome in the status, the request complete,
 * the run's ownership dropped. */
static void run_over(coll_gpu_request_t *r, int rc)
{
    coll_gpu_request_end(&r->super.super, rc);
    coll_gpu_request_disown(&r->super.super, &r->owners);
}

void coll_gpu_request_end(ompi_request_t *r, int rc)
{
    r->req_status.MPI_ERROR = rc;
    r->req_type = rc == MPI_SUCCESS ? OMPI_REQUEST_COLL : COLL_GPU_FAILED_REQUEST_TYPE;
    ompi_request_complete(r, true);
}

static void inner_complete(coll_gpu_pending_t *w)
{
    coll_gpu_request_t *r = of_pending(w);
    int rc = w->inner->req_status.MPI_ERROR;
    ompi_request_free(&w->inner);
    w->inner = NULL;
    if (r->stage) rc = coll_gpu_stage_release(r->stage, rc);
    r->stage = NULL;
    run_over(r, rc);
}

static bool queued_ready(coll_gpu_pending_t *w)
{
    coll_gpu_request_t *r = of_pending(w);
    return coll_gpu_queued_test(r->q, &r->rc);
}

static void queued_complete(coll_gpu_pending_t *w)
{
    coll_gpu_request_t *r = of_pending(w);
    if (!r->keep_q) coll_gpu_queued_free(r->q);
    if (!r->keep_q) r->q = NULL;
    run_over(r, r->rc);
}

void coll_gpu_request_watch_inner(coll_gpu_request_t *r, ompi_request_t *inner, coll_gpu_stage_t *st)
{
    __atomic_add_fetch(&r->owners, 1, __ATOMIC_ACQ_REL);
    r->stage = st;
    r->pending.inner = inner;
    r->pending.ready = NULL;
    r->pending.complete = inner_complete;
    coll_gpu_pending_add(&r->pending);
}

void coll_gpu_request_watch_queued(coll_gpu_request_t *r, coll_gpu_queued_t *q, bool keep)
{
    __atomic_add_fetch(&r->owners, 1, __ATOMIC_ACQ_REL);
    r->q = q;
    r->keep_q = keep;
    r->pending.inner = NULL;
    r->pending.ready = queued_ready;
    r->pending.complete = queued_complete;
    coll_gpu_pending_add(&r->pending);
}

int coll_gpu_request_wrap(ompi_request_t **request, coll_gpu_stage_t *st, ompi_communicator_t *comm)
{
    coll_gpu_request_t *r = coll_gpu_request_new(comm, false);
    if (r == NULL) {
        /* Cannot track it: finish it here, which is still correct. */
        ompi_request_wait(request, MPI_STATUS_IGNORE);
        return st ? coll_gpu_stage_release(st, OMPI_SUCCESS) : OMPI_SUCCESS;
    }
    coll_gpu_request_watch_inner(r, *request, st);
    *request = &r->super.super;
    return OMPI_SUCCESS;
}

int coll_gpu_request_hold(int rc, ompi_request_t **request, ompi_communicator_t *comm)
{
    if (rc != OMPI_SUCCESS || *request == NULL || *request == MPI_REQUEST_NULL) return rc;
    return coll_gpu_request_wrap(request, NULL, comm);
}

void coll_gpu_request_fini(void)
{
    pthread_mutex_lock(&pending_lock);
    if (progress_registered) opal_progress_unregister(coll_gpu_progress);
    progress_registered = false;
    pthread_mutex_unlock(&pending_lock);
}
