/* Nonblocking and persistent collectives on the peer kernels: MPI_I<coll>
 * and every MPI_Start launch the core's plan (gpucoll_plan_*): no host copy,
 * no waiting for another rank at the call; the request completes from Open
 * MPI's progress once the kernel is done. Allreduce, reduce, bcast,
 * allgather, reduce_scatter_block and alltoall.
 *
 * Which calls come here is decided from what every rank knows alike (the
 * core's gpucoll_plan_create says what), so every rank of a communicator
 * whose GPU path is set up sends these kinds here, whatever memory its own
 * buffers are in: the core copies buffers the kernels cannot use through
 * device memory, and a layout that is not one run of bytes (data movement
 * with a derived type) is packed here on the host. */
#include "coll_gpu.h"

#include <stdlib.h>

#include "ompi/mca/coll/base/coll_base_util.h"
#include "opal/datatype/opal_convertor.h"

/* One side of this rank's call whose layout is not one run of bytes:
 * packed into `packed` before each launch (in), unpacked after (out). */
typedef struct coll_gpu_pack {
    char *user;
    size_t count;
    ompi_datatype_t *dtype;
    char *packed;
    size_t bytes;
    bool in, out;
} coll_gpu_pack_t;

struct coll_gpu_queued {
    gpucoll_plan_t *plan;
    coll_gpu_pack_t pack[2]; /* send side, receive side */
    int npack;
    int deferred; /* an error of this rank's packing, returned once the launch it still made is over */
};

/* Packs (or unpacks) `p` through the host: a device buffer's span is
 * copied in first either way, since unpacking must keep the bytes between
 * its elements. */
static int pack_run(coll_gpu_pack_t *p, bool packing)
{
    ptrdiff_t gap = 0, span = opal_datatype_span(&p->dtype->super, p->count, &gap);
    char *host = p->user, *copy = NULL;
    if (coll_gpu_is_device(p->user + gap)) { /* with MPI_BOTTOM the type holds the address */
        if ((copy = malloc((size_t)span)) == NULL)
            return coll_gpu_error(GPUCOLL_ERR_NO_MEMORY, "packing a derived datatype");
        gpucoll_status_t s = gpucoll_copy(copy, p->user + gap, (size_t)span);
        if (s != GPUCOLL_SUCCESS) {
            free(copy);
            return coll_gpu_error(s, "copying a device buffer to pack it");
        }
        host = copy - gap;
    }
    opal_convertor_t conv;
    OBJ_CONSTRUCT(&conv, opal_convertor_t);
    struct iovec iov = {.iov_base = p->packed, .iov_len = p->bytes};
    uint32_t n = 1;
    size_t max = p->bytes;
    if (packing) {
        opal_convertor_copy_and_prepare_for_send(ompi_mpi_local_convertor, &p->dtype->super, p->count, host, 0, &conv);
        opal_convertor_pack(&conv, &iov, &n, &max);
    } else {
        opal_convertor_copy_and_prepare_for_recv(ompi_mpi_local_convertor, &p->dtype->super, p->count, host, 0, &conv);
        opal_convertor_unpack(&conv, &iov, &n, &max);
    }
    OBJ_DESTRUCT(&conv);
    int rc = OMPI_SUCCESS;
    if (copy) {
        if (!packing) {
            gpucoll_status_t s = gpucoll_copy_landed(p->user + gap, copy, (size_t)span);
            if (s != GPUCOLL_SUCCESS) rc = coll_gpu_error(s, "copying an unpacked buffer back to the device");
        }
        free(copy);
    }
    return rc;
}

/* Where the kernel finds one side of a data movement call of `count` x
 * `dtype` at `buf`: in the buffer itself when its layout is one run of
 * bytes, else in a packed copy. NULL (and *failed) without memory. */
static void *side(coll_gpu_queued_t *q, void *buf, size_t count, ompi_datatype_t *dtype, bool in, bool out,
                  bool *failed)
{
    gpucoll_coll_args_t bytes;
    ptrdiff_t first;
    if (coll_gpu_layout(dtype, count, 1, NULL, &bytes, &first)) return (char *)buf + first;
    coll_gpu_pack_t *p = &q->pack[q->npack];
    *p = (coll_gpu_pack_t){.user = buf, .count = count, .dtype = dtype, .bytes = count * dtype->super.size,
                           .in = in, .out = out};
    if ((p->packed = malloc(p->bytes)) == NULL) {
        *failed = true;
        return NULL;
    }
    OBJ_RETAIN(dtype);
    q->npack++;
    return p->packed;
}

void coll_gpu_queued_free(coll_gpu_queued_t *q)
{
    if (q == NULL) return;
    gpucoll_plan_free(q->plan);
    for (int i = 0; i < q->npack; i++) {
        free(q->pack[i].packed);
        OBJ_RELEASE(q->pack[i].dtype);
    }
    free(q);
}

bool coll_gpu_queued_plan(mca_coll_gpu_module_t *m, const coll_gpu_call_t *c, bool persistent, coll_gpu_queued_t **out,
                          int *rc)
{
    *out = NULL;
    /* Every rank sees the same: the team is built and its GPU side set up
     * only by blocking calls, which every rank makes alike; a rank staged by
     * info never lets it be set up (its agreements say "cannot"), so its
     * peers stage too. */
    if (m->team == NULL) return false;
    const int rank = ompi_comm_rank(m->comm), size = ompi_comm_size(m->comm);
    const bool in_place = c->sbuf == MPI_IN_PLACE;
    gpucoll_coll_args_t a = {.kind = (gpucoll_coll_kind_t)c->kind, .root = c->root, .local_ok = 1};
    coll_gpu_queued_t *q = calloc(1, sizeof *q);
    if (q == NULL) {
        *rc = coll_gpu_error(GPUCOLL_ERR_NO_MEMORY, "planning a nonblocking collective");
        return true;
    }
    bool failed = false;
    if (c->op != NULL) { /* reductions: one predefined type and op on every rank (MPI's rule) */
        ptrdiff_t first;
        if (!coll_gpu_layout(c->rdtype, c->rcount, 1, c->op, &a, &first)) a.count = 0; /* no kernel: staged, alike */
        a.sbuf = in_place ? NULL : c->sbuf;
        a.rbuf = c->rbuf;
    } else { /* data movement: bytes, which MPI's type signature rule makes equal */
        a.dtype = GPUCOLL_UINT8;
        a.op = GPUCOLL_OP_NONE;
        a.count = c->rcount * c->rdtype->super.size;
        size_t blocks = c->kind == COLL_GPU_BCAST ? 1 : (size_t)size;
        bool root = rank == c->root;
        if (c->kind == COLL_GPU_BCAST) {
            a.rbuf = a.count ? side(q, c->rbuf, c->rcount, c->rdtype, root, !root, &failed) : NULL;
        } else {
            size_t sblocks = c->kind == COLL_GPU_ALLTOALL ? (size_t)size : 1;
            if (!in_place && a.count)
                a.sbuf = side(q, (void *)c->sbuf, c->scount * sblocks, c->sdtype, true, false, &failed);
            if (a.count) a.rbuf = side(q, c->rbuf, c->rcount * blocks, c->rdtype, in_place, true, &failed);
        }
    }
    if (failed) {
        coll_gpu_queued_free(q);
        *rc = coll_gpu_error(GPUCOLL_ERR_NO_MEMORY, "packing a derived datatype");
        return true;
    }
    gpucoll_status_t st = a.count ? gpucoll_plan_create(m->team, &a, persistent, &q->plan) : GPUCOLL_ERR_UNSUPPORTED;
    if (st == GPUCOLL_ERR_UNSUPPORTED) {
        coll_gpu_queued_free(q);
        return false;
    }
    if (st != GPUCOLL_SUCCESS) {
        coll_gpu_queued_free(q);
        *rc = coll_gpu_error(st, "planning a nonblocking collective on the GPU");
        return true;
    }
    COLL_GPU_VERBOSE(50, "%s: nonblocking collective %d on %zu elements queued on the GPU (%s)", m->comm->c_name,
                     (int)a.kind, a.count, gpucoll_plan_algorithm(q->plan));
    *out = q;
    return true;
}

int coll_gpu_queued_start(coll_gpu_queued_t *q)
{
    q->deferred = OMPI_SUCCESS;
    /* A packing failure still launches (the peers' kernels wait for ours)
     * and fails the call once it is over. */
    for (int i = 0; i < q->npack && q->deferred == OMPI_SUCCESS; i++)
        if (q->pack[i].in) q->deferred = pack_run(&q->pack[i], true);
    gpucoll_status_t st = gpucoll_plan_launch(q->plan);
    return st == GPUCOLL_SUCCESS ? OMPI_SUCCESS : coll_gpu_error(st, "launching a nonblocking collective");
}

bool coll_gpu_queued_retired(const coll_gpu_queued_t *q) { return gpucoll_plan_retired(q->plan) != 0; }

bool coll_gpu_queued_test(coll_gpu_queued_t *q, int *rc)
{
    gpucoll_status_t st;
    if (!gpucoll_plan_test(q->plan, &st)) return false;
    *rc = st == GPUCOLL_SUCCESS ? q->deferred : coll_gpu_error(st, "a nonblocking collective on the GPU");
    for (int i = 0; i < q->npack && *rc == OMPI_SUCCESS; i++)
        if (q->pack[i].out) *rc = pack_run(&q->pack[i], false);
    return true;
}

/* MPI_I<coll> on the peer kernels: the component's request, watching the run. */
bool coll_gpu_queued_try(mca_coll_gpu_module_t *m, const coll_gpu_call_t *c, ompi_request_t **request, int *rc)
{
    coll_gpu_queued_t *q;
    if (!coll_gpu_queued_plan(m, c, false, &q, rc)) return false;
    if (q == NULL) return true; /* *rc says why */
    coll_gpu_request_t *r = coll_gpu_request_new(m->comm, false);
    *rc = coll_gpu_queued_start(q);
    if (*rc != OMPI_SUCCESS || r == NULL) {
        /* Nothing runs (the call fails here), or no request to track the
         * run: the peers' kernels wait for ours, so it is waited for here. */
        int done_rc = *rc;
        while (*rc == OMPI_SUCCESS && !coll_gpu_queued_test(q, &done_rc)) opal_progress();
        coll_gpu_queued_free(q);
        if (r) coll_gpu_request_drop(r);
        if (*rc == OMPI_SUCCESS) *rc = done_rc;
        return true;
    }
    coll_gpu_request_watch_queued(r, q, false);
    *request = coll_gpu_request_mpi(r);
    return true;
}
