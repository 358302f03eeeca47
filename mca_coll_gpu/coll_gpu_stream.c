/* Stream-ordered collectives (include/coll_gpu_ext.h): the functions the
 * header finds by name (coll_gpu_impl_*). They are not Open MPI entry
 * points: the application calls them with its communicator, and they find
 * our module through the communicator's allreduce slot.
 *
 * Where a call can run on the GPU is decided from what every rank knows
 * alike: the communicator's stream team (built and set up collectively at
 * coll_gpu_stream_init or the first call) and the call's kind, count, type,
 * op and root. Everything else, on the GPU path, is this rank's own error
 * (its peers' kernels then give up on it): a buffer the GPU cannot address,
 * a data-movement type that is not one run of bytes. */
#include "coll_gpu.h"

#define COLL_GPU_EXPORT __attribute__((visibility("default")))

int coll_gpu_mpi_class(gpucoll_status_t st, const char *what)
{
    if (st == GPUCOLL_SUCCESS) return MPI_SUCCESS;
    (void)coll_gpu_error(st, what);
    switch (st) {
    case GPUCOLL_ERR_NO_MEMORY: return MPI_ERR_NO_MEM;
    case GPUCOLL_ERR_INVALID: return MPI_ERR_ARG;
    case GPUCOLL_ERR_UNSUPPORTED: return MPI_ERR_UNSUPPORTED_OPERATION;
    default: return MPI_ERR_OTHER;
    }
}

/* The stream team, built at the first call that needs it. Collective; must
 * not run while `stream` is captured (the caller checks). */
static bool stream_team(mca_coll_gpu_module_t *m)
{
    if (m == NULL || ompi_comm_size(m->comm) < 2) return false;
    return coll_gpu_stream_team_ensure(m);
}

COLL_GPU_EXPORT int coll_gpu_impl_stream_init(MPI_Comm comm);
COLL_GPU_EXPORT int coll_gpu_impl_stream_init(MPI_Comm comm)
{
    if (comm == NULL || comm == MPI_COMM_NULL) return MPI_ERR_COMM;
    mca_coll_gpu_module_t *m = coll_gpu_module_of(comm);
    int rc = m != NULL ? coll_gpu_stream_team_renew(m) : MPI_SUCCESS;
    if (rc != MPI_SUCCESS) return rc;
    bool ready = stream_team(m);
    COLL_GPU_VERBOSE(10, "%s: stream-ordered collectives %s", comm->c_name,
                     ready ? "run on the GPU" : "synchronise and run as ordinary collectives");
    return MPI_SUCCESS;
}

COLL_GPU_EXPORT int coll_gpu_impl_stream_status(MPI_Comm comm);
COLL_GPU_EXPORT int coll_gpu_impl_stream_status(MPI_Comm comm)
{
    mca_coll_gpu_module_t *m = coll_gpu_module_of(comm);
    if (m == NULL || m->stream_team == NULL) return MPI_SUCCESS;
    return coll_gpu_mpi_class(gpucoll_stream_status(m->stream_team), "an enqueued collective");
}

/* What each enqueued kind's arguments mean beyond the kind table
 * (coll_gpu_kind_info: reduction, rooted), by MPI's rules for its blocking
 * call: the one table the argument checks follow. */
static const struct {
    bool has_send;      /* a send buffer (MPI_IN_PLACE allowed) */
    bool own_send_type; /* sendcount / sendtype of its own */
    bool root_only;     /* the receive buffer matters, and MPI_IN_PLACE is allowed, at the root only */
    bool recv_per_rank; /* the receive buffer holds count elements per rank */
} kind_rules[COLL_GPU_ALLTOALL + 1] = {
    [COLL_GPU_ALLREDUCE] = {.has_send = true},
    [COLL_GPU_REDUCE] = {.has_send = true, .root_only = true},
    [COLL_GPU_BCAST] = {0},
    [COLL_GPU_ALLGATHER] = {.has_send = true, .own_send_type = true, .recv_per_rank = true},
    [COLL_GPU_REDUCE_SCATTER_BLOCK] = {.has_send = true},
    [COLL_GPU_ALLTOALL] = {.has_send = true, .own_send_type = true, .recv_per_rank = true},
};

static int check_type(ompi_datatype_t *dtype, int count)
{
    if (dtype == NULL || dtype == MPI_DATATYPE_NULL) return MPI_ERR_TYPE;
    if (count < 0) return MPI_ERR_COUNT;
    if (!opal_datatype_is_committed(&dtype->super) || !opal_datatype_is_valid(&dtype->super)) return MPI_ERR_TYPE;
    return MPI_SUCCESS;
}

/* Open MPI's rule (OMPI_CHECK_USER_BUFFER): NULL is MPI_BOTTOM, a buffer
 * only for a type whose data lie at absolute addresses. */
static bool null_buffer(const void *buf, ompi_datatype_t *dtype, size_t count)
{
    if (buf != NULL || count == 0 || dtype->super.size == 0) return false;
    if (ompi_datatype_is_predefined(dtype)) return true;
    ptrdiff_t true_lb, true_extent;
    ompi_datatype_get_true_extent(dtype, &true_lb, &true_extent);
    return true_lb == 0;
}

static int check_buffers(const coll_gpu_call_t *c, int count, ompi_communicator_t *comm)
{
    const bool inter = OMPI_COMM_IS_INTER(comm), root_side = !inter && ompi_comm_rank(comm) == c->root;
    const bool in_place = kind_rules[c->kind].has_send && c->sbuf == MPI_IN_PLACE;
    const size_t rblocks = kind_rules[c->kind].recv_per_rank ? (size_t)ompi_comm_size(comm) : 1;
    if (c->rbuf == MPI_IN_PLACE) return MPI_ERR_ARG;
    /* Intercommunicators name roots otherwise (MPI_ROOT, MPI_PROC_NULL): MPI judges them. */
    if (inter) return MPI_SUCCESS;
    if (in_place && kind_rules[c->kind].root_only && !root_side) return MPI_ERR_ARG;
    if ((!kind_rules[c->kind].root_only || root_side) && null_buffer(c->rbuf, c->rdtype, (size_t)count * rblocks))
        return MPI_ERR_BUFFER;
    if (kind_rules[c->kind].has_send && !in_place)
        if (null_buffer(c->sbuf, kind_rules[c->kind].own_send_type ? c->sdtype : c->rdtype, c->scount))
            return MPI_ERR_BUFFER;
    return MPI_SUCCESS;
}

/* Every enqueued call's arguments, as MPI would judge them, before anything
 * reads them: an error class, or MPI_SUCCESS. */
static int check_args(const coll_gpu_call_t *c, int count, ompi_communicator_t *comm)
{
    int rc;
    if (comm == NULL || ompi_comm_invalid(comm)) return MPI_ERR_COMM;
    if ((rc = check_type(c->rdtype, count)) != MPI_SUCCESS) return rc;
    if (kind_rules[c->kind].own_send_type && c->sbuf != MPI_IN_PLACE &&
        (rc = check_type(c->sdtype, (int)c->scount)) != MPI_SUCCESS)
        return rc;
    if (coll_gpu_kind_info(c->kind)->reduction) {
        char *msg = NULL;
        if (c->op == NULL || c->op == MPI_OP_NULL) return MPI_ERR_OP;
        if (!ompi_op_is_valid(c->op, c->rdtype, &msg, "an enqueued collective")) {
            COLL_GPU_VERBOSE(10, "%s", msg);
            free(msg);
            return MPI_ERR_OP;
        }
    }
    if (coll_gpu_kind_info(c->kind)->rooted && !OMPI_COMM_IS_INTER(comm) && (c->root < 0 || c->root >= ompi_comm_size(comm)))
        return MPI_ERR_ROOT;
    return check_buffers(c, count, comm);
}

/* Where this rank's side `buf` of a data-movement call starts as one run of
 * bytes (count x dtype), or false. */
static bool byte_run(const void *buf, size_t count, ompi_datatype_t *dtype, const void **start)
{
    gpucoll_coll_args_t bytes;
    ptrdiff_t first;
    if (!coll_gpu_layout(dtype, count, 1, NULL, &bytes, &first)) return false;
    *start = (const char *)buf + first;
    return true;
}

/* The ordinary collective, after the stream's work; what a call that cannot
 * run on the GPU amounts to. */
static int run_ordinary(const coll_gpu_call_t *c, MPI_Comm comm, int count, void *stream)
{
    gpucoll_status_t st = gpucoll_stream_synchronize(stream);
    if (st != GPUCOLL_SUCCESS) return coll_gpu_mpi_class(st, "an enqueued collective's fallback");
    switch (c->kind) {
    case COLL_GPU_ALLREDUCE: return MPI_Allreduce(c->sbuf, c->rbuf, count, c->rdtype, c->op, comm);
    case COLL_GPU_REDUCE: return MPI_Reduce(c->sbuf, c->rbuf, count, c->rdtype, c->op, c->root, comm);
    case COLL_GPU_BCAST: return MPI_Bcast(c->rbuf, count, c->rdtype, c->root, comm);
    case COLL_GPU_ALLGATHER:
        return MPI_Allgather(c->sbuf, (int)c->scount, c->sdtype, c->rbuf, count, c->rdtype, comm);
    case COLL_GPU_REDUCE_SCATTER_BLOCK:
        return MPI_Reduce_scatter_block(c->sbuf, c->rbuf, count, c->rdtype, c->op, comm);
    case COLL_GPU_ALLTOALL:
        return MPI_Alltoall(c->sbuf, (int)c->scount, c->sdtype, c->rbuf, count, c->rdtype, comm);
    default: return MPI_ERR_INTERN;
    }
}

/* A communicator of one rank: the result is the input, copied on the
 * stream. False where the layout is not one run of bytes. */
static bool self_copy(const coll_gpu_call_t *c, int *rc, void *stream)
{
    *rc = MPI_SUCCESS;
    if (c->kind == COLL_GPU_BCAST || c->sbuf == MPI_IN_PLACE) return true; /* nothing moves */
    const void *src, *dst;
    if (!byte_run(c->sbuf, c->scount, c->sdtype, &src) || !byte_run(c->rbuf, c->rcount, c->rdtype, &dst))
        return false;
    *rc = coll_gpu_mpi_class(gpucoll_copy_async((void *)dst, src, c->rcount * c->rdtype->super.size, stream),
                    "an enqueued collective on one rank");
    return true;
}

/* `c` on the stream team's kernels: true with *rc where it was enqueued or
 * failed on this rank alone (its peers' kernels then give up on it); false
 * where every rank falls back alike (no kernel for the type and op). */
static bool enqueue_on_gpu(mca_coll_gpu_module_t *m, const coll_gpu_call_t *c, size_t bytes, MPI_Comm comm,
                           void *stream, int *rc)
{
    const int size = ompi_comm_size(comm);
    gpucoll_coll_args_t a = {.kind = (gpucoll_coll_kind_t)c->kind, .root = c->root, .local_ok = 1};
    ptrdiff_t first;
    if (c->op != NULL) {
        /* Reductions: the same predefined type and op on every rank. */
        if (!coll_gpu_layout(c->rdtype, c->rcount, 1, c->op, &a, &first)) return false;
        a.sbuf = c->sbuf == MPI_IN_PLACE ? NULL : c->sbuf;
        a.rbuf = c->rbuf;
    } else {
        a.dtype = GPUCOLL_UINT8;
        a.op = GPUCOLL_OP_NONE;
        a.count = bytes;
        const size_t rblocks = c->kind == COLL_GPU_BCAST ? 1 : (size_t)size;
        const size_t sblocks = c->kind == COLL_GPU_ALLTOALL ? (size_t)size : 1;
        const void *r = NULL, *s = NULL;
        if (!byte_run(c->rbuf, c->rcount * rblocks, c->rdtype, &r) ||
            (c->kind != COLL_GPU_BCAST && c->sbuf != MPI_IN_PLACE &&
             !byte_run(c->sbuf, c->scount * sblocks, c->sdtype, &s))) {
            opal_output(0, "coll:gpu: rank %d: %s: an enqueued collective moves datatypes that are one run of "
                        "bytes only; the other ranks' kernels will give up on this one",
                        ompi_comm_rank(comm), comm->c_name);
            *rc = MPI_ERR_TYPE;
            return true;
        }
        a.rbuf = (void *)r;
        a.sbuf = s;
    }
    gpucoll_status_t st = gpucoll_stream_enqueue(m->stream_team, &a, stream);
    if (st == GPUCOLL_ERR_UNSUPPORTED) return false;
    if (st == GPUCOLL_SUCCESS)
        COLL_GPU_VERBOSE(50, "%s: collective %d on %zu elements enqueued (%s)", comm->c_name, (int)a.kind, a.count,
                         gpucoll_team_last_algorithm(m->stream_team));
    *rc = coll_gpu_mpi_class(st, "an enqueued collective");
    return true;
}

/* Every enqueue call: `c` as the MPI call names it (scount/rcount per rank
 * block, as in coll_gpu_call_t); `count` the int count to hand the
 * ordinary collective. */
static int enqueue(const coll_gpu_call_t *c, int count, MPI_Comm comm, void *stream)
{
    int rc = check_args(c, count, comm);
    if (rc != MPI_SUCCESS) return rc;
    const size_t bytes = (size_t)count * c->rdtype->super.size;
    if (bytes == 0) return MPI_SUCCESS; /* alike on every rank (MPI's type signature rule) */
    mca_coll_gpu_module_t *m = coll_gpu_module_of(comm);
    if (ompi_comm_size(comm) == 1 && self_copy(c, &rc, stream)) return rc;
    /* Built outside a capture only: the set-up allocates and synchronises.
     * Once built, the core alone asks about the capture (once per call). */
    bool gpu = m != NULL && /* force_staged: the set-up fails on every rank */
               (m->stream_tried ? m->stream_team != NULL : gpucoll_stream_capturing(stream) == 0 && stream_team(m));
    if (gpu && enqueue_on_gpu(m, c, bytes, comm, stream, &rc)) return rc;
    /* Alike on every rank: no stream team, or no kernel for the type and op. */
    if (gpucoll_stream_capturing(stream) != 0) {
        opal_output(0, "coll:gpu: rank %d: %s: this enqueued collective cannot run on the GPU (%s) and the stream is "
                    "being captured, so it cannot synchronise and run as an ordinary collective either",
                    ompi_comm_rank(comm), comm->c_name,
                    m == NULL ? "coll/gpu does not serve the communicator"
                    : !m->stream_tried  ? "coll_gpu_stream_init was not called before the capture"
                    : !m->stream_team   ? "the communicator has no GPU path"
                                        : "no kernel for its type and op");
        return MPI_ERR_UNSUPPORTED_OPERATION;
    }
    return run_ordinary(c, comm, count, stream);
}

COLL_GPU_EXPORT int coll_gpu_impl_allreduce_enqueue(const void *sendbuf, void *recvbuf, int count,
                                                    MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, void *stream);
COLL_GPU_EXPORT int coll_gpu_impl_allreduce_enqueue(const void *sendbuf, void *recvbuf, int count,
                                                    MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, void *stream)
{
    coll_gpu_call_t c = {.kind = COLL_GPU_ALLREDUCE, .sbuf = sendbuf, .scount = (size_t)count, .sdtype = datatype,
                         .rbuf = recvbuf, .rcount = (size_t)count, .rdtype = datatype, .op = op};
    return enqueue(&c, count, comm, stream);
}

COLL_GPU_EXPORT int coll_gpu_impl_reduce_enqueue(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                                                 MPI_Op op, int root, MPI_Comm comm, void *stream);
COLL_GPU_EXPORT int coll_gpu_impl_reduce_enqueue(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                                                 MPI_Op op, int root, MPI_Comm comm, void *stream)
{
    coll_gpu_call_t c = {.kind = COLL_GPU_REDUCE, .sbuf = sendbuf, .scount = (size_t)count, .sdtype = datatype,
                         .rbuf = recvbuf, .rcount = (size_t)count, .rdtype = datatype, .op = op, .root = root};
    return enqueue(&c, count, comm, stream);
}

COLL_GPU_EXPORT int coll_gpu_impl_bcast_enqueue(void *buffer, int count, MPI_Datatype datatype, int root,
                                                MPI_Comm comm, void *stream);
COLL_GPU_EXPORT int coll_gpu_impl_bcast_enqueue(void *buffer, int count, MPI_Datatype datatype, int root,
                                                MPI_Comm comm, void *stream)
{
    coll_gpu_call_t c = {.kind = COLL_GPU_BCAST, .rbuf = buffer, .rcount = (size_t)count, .rdtype = datatype,
                         .root = root};
    return enqueue(&c, count, comm, stream);
}

COLL_GPU_EXPORT int coll_gpu_impl_allgather_enqueue(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                                    void *recvbuf, int recvcount, MPI_Datatype recvtype,
                                                    MPI_Comm comm, void *stream);
COLL_GPU_EXPORT int coll_gpu_impl_allgather_enqueue(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                                    void *recvbuf, int recvcount, MPI_Datatype recvtype,
                                                    MPI_Comm comm, void *stream)
{
    coll_gpu_call_t c = {.kind = COLL_GPU_ALLGATHER, .sbuf = sendbuf, .scount = (size_t)sendcount, .sdtype = sendtype,
                         .rbuf = recvbuf, .rcount = (size_t)recvcount, .rdtype = recvtype};
    if (sendbuf == MPI_IN_PLACE) c.sdtype = NULL;
    return enqueue(&c, recvcount, comm, stream);
}

COLL_GPU_EXPORT int coll_gpu_impl_reduce_scatter_block_enqueue(const void *sendbuf, void *recvbuf, int recvcount,
                                                               MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                                                               void *stream);
COLL_GPU_EXPORT int coll_gpu_impl_reduce_scatter_block_enqueue(const void *sendbuf, void *recvbuf, int recvcount,
                                                               MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                                                               void *stream)
{
    coll_gpu_call_t c = {.kind = COLL_GPU_REDUCE_SCATTER_BLOCK, .sbuf = sendbuf, .scount = (size_t)recvcount,
                         .sdtype = datatype, .rbuf = recvbuf, .rcount = (size_t)recvcount, .rdtype = datatype,
                         .op = op};
    return enqueue(&c, recvcount, comm, stream);
}

COLL_GPU_EXPORT int coll_gpu_impl_alltoall_enqueue(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                                   void *recvbuf, int recvcount, MPI_Datatype recvtype,
                                                   MPI_Comm comm, void *stream);
COLL_GPU_EXPORT int coll_gpu_impl_alltoall_enqueue(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                                   void *recvbuf, int recvcount, MPI_Datatype recvtype,
                                                   MPI_Comm comm, void *stream)
{
    coll_gpu_call_t c = {.kind = COLL_GPU_ALLTOALL, .sbuf = sendbuf, .scount = (size_t)sendcount, .sdtype = sendtype,
                         .rbuf = recvbuf, .rcount = (size_t)recvcount, .rdtype = recvtype};
    if (sendbuf == MPI_IN_PLACE) c.sdtype = NULL;
    return enqueue(&c, recvcount, comm, stream);
}
