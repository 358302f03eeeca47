/* Nonblocking collectives on device buffers that the peer kernels do not
 * take (coll_gpu_queued.c): the displaced module runs the collective on
 * host copies; our request completes only after the results
 * are back in device memory, so MPI_Wait/Test never return early.
 *
 * The request derives from ompi_coll_base_nbc_request_t because the MPI
 * layer (ompi_coll_base_retain_op/datatypes) writes its fields after we
 * return. A progress callback watches the inner requests: these, and the
 * persistent requests' of coll_gpu_persistent.c (coll_gpu_pending_t). */
#include "coll_gpu.h"

#include <pthread.h>

#include "ompi/mca/coll/base/coll_base_util.h"
#include "opal/runtime/opal_progress.h"

typedef struct coll_gpu_request_t {
    ompi_coll_base_nbc_request_t super;
    coll_gpu_pending_t pending; /* the inner request, watched by progress */
    coll_gpu_stage_t *stage;
    /* Two owners: the application's handle (gone at request_free, which
     * MPI_Wait/Test also call) and the pending completion (gone once
     * request_complete is done with it). Whichever goes last frees it; the
     * two may run at once on different threads. */
    int32_t owners;
} coll_gpu_request_t;

static OBJ_CLASS_INSTANCE(coll_gpu_request_t, ompi_coll_base_nbc_request_t, NULL, NULL);

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
    coll_gpu_request_disown(&r->super.super, &r->owners); /* before completion: the progress callback frees it */
    return OMPI_SUCCESS;
}

int coll_gpu_request_cancel(ompi_request_t *request, int complete)
{
    (void)request;
    (void)complete;
    return MPI_ERR_REQUEST; /* collectives cannot be cancelled */
}

static void request_complete(coll_gpu_pending_t *w)
{
    coll_gpu_request_t *r = (coll_gpu_request_t *)((char *)w - offsetof(coll_gpu_request_t, pending));
    int rc = w->inner->req_status.MPI_ERROR;
    ompi_request_free(&w->inner);
    rc = coll_gpu_stage_release(r->stage, rc);
    r->stage = NULL;
    r->super.super.req_status.MPI_ERROR = rc;
    ompi_request_complete(&r->super.super, true);
    coll_gpu_request_disown(&r->super.super, &r->owners);
}

int coll_gpu_request_wrap(ompi_request_t **request, coll_gpu_stage_t *st, ompi_communicator_t *comm)
{
    coll_gpu_request_t *r = OBJ_NEW(coll_gpu_request_t);
    if (r == NULL) {
        /* Cannot track it: finish it here, which is still correct. */
        ompi_request_wait(request, MPI_STATUS_IGNORE);
        return coll_gpu_stage_release(st, OMPI_SUCCESS);
    }
    coll_gpu_request_init(&r->super.super, comm, false, request_free);
    r->pending.inner = *request;
    r->pending.ready = NULL;
    r->pending.complete = request_complete;
    r->stage = st;
    r->owners = 2;
    coll_gpu_pending_add(&r->pending);

    *request = &r->super.super;
    return OMPI_SUCCESS;
}

void coll_gpu_request_fini(void)
{
    pthread_mutex_lock(&pending_lock);
    if (progress_registered) opal_progress_unregister(coll_gpu_progress);
    progress_registered = false;
    pthread_mutex_unlock(&pending_lock);
}
