/* Where a collective goes: the one decision, for every kind and mode.
 *
 *   blocking     peer kernels (agreed) -> hierarchical -> (host buffers) displaced module
 *                                                      -> (device buffers) one-rank copy -> staged
 *   nonblocking  peer kernels (queued) -> the same host / device tail
 *   persistent   each start: the plan kept from the first start that found
 *                the peer kernels, else the nonblocking tail
 *
 * The first routes are asked by every rank whatever its buffers: their
 * answers are agreed (blocking) or derived from what all ranks know alike
 * (queued), so that all ranks of a communicator take the same route. A route
 * that declines passes the call on; the staged route and the displaced
 * module always take it. */
#include "coll_gpu.h"

typedef enum { ROUTE_PEER, ROUTE_HIER, ROUTE_QUEUED, ROUTE_PREV, ROUTE_SELF, ROUTE_STAGED } route_t;
static const char *const route_names[] = {"peer kernels", "hierarchical", "queued on the peer kernels",
                                          "displaced module", "one-rank copy", "staged"};

/* The routes `c` tries, in order. */
static int routes(const coll_gpu_call_t *c, const coll_gpu_where_t *w, bool blocking, route_t out[4])
{
    const coll_gpu_kind_info_t *k = coll_gpu_kind_info(c->kind);
    int n = 0;
    if (!w->inter) { /* no team on intercommunicators: their groups exchange, they do not share */
        if (blocking && k->peer) out[n++] = ROUTE_PEER;
        if (blocking && k->hier) out[n++] = ROUTE_HIER;
        if (!blocking && k->queued) out[n++] = ROUTE_QUEUED;
    }
    if (!w->any_device) {
        out[n++] = ROUTE_PREV;
        return n;
    }
    if (w->one_rank && !k->neighbor) out[n++] = ROUTE_SELF;
    out[n++] = ROUTE_STAGED;
    return n;
}

/* Runs `c` on route `r`: false if the route declines it. */
static bool take(route_t r, mca_coll_gpu_module_t *m, ompi_communicator_t *comm, const coll_gpu_call_t *c,
                 const coll_gpu_where_t *w, ompi_request_t **request, coll_gpu_request_t *persistent, int *rc)
{
    switch (r) {
    case ROUTE_PEER: return coll_gpu_team_try(m, c, w->device_ok, rc);
    case ROUTE_HIER: return coll_gpu_hier_try(m, c, w->device_ok, rc);
    case ROUTE_QUEUED:
        return persistent ? coll_gpu_persistent_queued(m, c, persistent, rc) : coll_gpu_queued_try(m, c, request, rc);
    case ROUTE_SELF: return coll_gpu_call_self(m, c, request, rc);
    case ROUTE_PREV:
        *rc = coll_gpu_call_prev(c, comm, request, &m->prev);
        /* Open MPI's libnbc requests do not hold their communicator. */
        if (request != NULL) *rc = coll_gpu_request_hold(*rc, request, comm);
        return true;
    case ROUTE_STAGED: *rc = coll_gpu_call_staged(c, comm, request, m); return true;
    }
    return false;
}

int coll_gpu_run_start(mca_coll_gpu_module_t *m, ompi_communicator_t *comm, const coll_gpu_call_t *c,
                       ompi_request_t **request, coll_gpu_request_t *persistent)
{
    coll_gpu_where_t w;
    int rc = coll_gpu_call_where(c, comm, &w);
    if (rc != OMPI_SUCCESS) return rc;
    route_t r[4];
    const int n = routes(c, &w, request == NULL && persistent == NULL, r);
    for (int i = 0; i < n; i++) {
        if (take(r[i], m, comm, c, &w, request, persistent, &rc)) {
            COLL_GPU_VERBOSE(60, "%s: %s%s: %s", comm->c_name, request ? "nonblocking " : "",
                             coll_gpu_kind_info(c->kind)->name, route_names[r[i]]);
            return rc;
        }
    }
    return OMPI_ERR_BAD_PARAM; /* not reached: the last route always takes the call */
}

int coll_gpu_run(mca_coll_gpu_module_t *m, ompi_communicator_t *comm, const coll_gpu_call_t *c,
                 ompi_request_t **request)
{
    return coll_gpu_run_start(m, comm, c, request, NULL);
}
