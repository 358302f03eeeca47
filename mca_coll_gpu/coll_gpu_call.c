/* One call record for every collective: what each kind is (the table),
 * which of its buffers matter on this rank, and where they live. */
#include "coll_gpu.h"

#include "ompi/mca/topo/base/base.h"

#define REDUCTION .reduction = true
#define ROOTED .rooted = true
static const coll_gpu_kind_info_t kinds[COLL_GPU_KIND_COUNT] = {
    [COLL_GPU_ALLREDUCE] = {"allreduce", REDUCTION, .peer = true, .hier = true, .queued = true},
    [COLL_GPU_REDUCE] = {"reduce", REDUCTION, ROOTED, .peer = true, .hier = true, .queued = true},
    [COLL_GPU_BCAST] = {"bcast", ROOTED, .peer = true, .hier = true, .queued = true},
    [COLL_GPU_ALLGATHER] = {"allgather", .peer = true, .hier = true, .queued = true},
    [COLL_GPU_REDUCE_SCATTER_BLOCK] = {"reduce_scatter_block", REDUCTION, .peer = true, .hier = true, .queued = true},
    [COLL_GPU_ALLTOALL] = {"alltoall", .peer = true, .queued = true},
    [COLL_GPU_ALLGATHERV] = {"allgatherv", .peer = true},
    [COLL_GPU_REDUCE_SCATTER] = {"reduce_scatter", REDUCTION, .peer = true},
    [COLL_GPU_ALLTOALLV] = {"alltoallv", .peer = true},
    [COLL_GPU_ALLTOALLW] = {"alltoallw"},
    [COLL_GPU_GATHER] = {"gather", ROOTED},
    [COLL_GPU_GATHERV] = {"gatherv", ROOTED},
    [COLL_GPU_SCATTER] = {"scatter", ROOTED},
    [COLL_GPU_SCATTERV] = {"scatterv", ROOTED},
    [COLL_GPU_SCAN] = {"scan", REDUCTION},
    [COLL_GPU_EXSCAN] = {"exscan", REDUCTION},
    [COLL_GPU_NEIGHBOR_ALLGATHER] = {"neighbor_allgather", .neighbor = true},
    [COLL_GPU_NEIGHBOR_ALLGATHERV] = {"neighbor_allgatherv", .neighbor = true},
    [COLL_GPU_NEIGHBOR_ALLTOALL] = {"neighbor_alltoall", .neighbor = true},
    [COLL_GPU_NEIGHBOR_ALLTOALLV] = {"neighbor_alltoallv", .neighbor = true},
    [COLL_GPU_NEIGHBOR_ALLTOALLW] = {"neighbor_alltoallw", .neighbor = true},
};
#undef REDUCTION
#undef ROOTED

const coll_gpu_kind_info_t *coll_gpu_kind_info(coll_gpu_kind_t kind) { return &kinds[kind]; }

/* Which of c's buffers this rank's role makes significant. On an
 * intracommunicator the root alone receives gather and reduce and sends
 * scatter. On an intercommunicator the root is MPI_ROOT (the root, in its
 * group), MPI_PROC_NULL (the rest of its group: no buffer is significant)
 * or the root's rank in the remote group. */
static coll_gpu_roles_t roles(const coll_gpu_call_t *c, ompi_communicator_t *comm, bool inter)
{
    const bool root = inter ? c->root == MPI_ROOT : c->root == ompi_comm_rank(comm);
    const bool none = inter && c->root == MPI_PROC_NULL;
    switch (c->kind) {
    case COLL_GPU_BCAST: return (coll_gpu_roles_t){false, !none}; /* root and receivers alike: rbuf */
    case COLL_GPU_GATHER: case COLL_GPU_GATHERV: case COLL_GPU_REDUCE:
        return (coll_gpu_roles_t){!(inter && root) && !none, root};
    case COLL_GPU_SCATTER: case COLL_GPU_SCATTERV: return (coll_gpu_roles_t){root, !(inter && root) && !none};
    default: return (coll_gpu_roles_t){true, true};
    }
}

/* The blocks of a neighbourhood call: sent to the outdegree neighbours,
 * received from the indegree ones (0 where the communicator has no
 * topology: the displaced module reports that itself). */
static void degrees(ompi_communicator_t *comm, int *in, int *out)
{
    *in = *out = 0;
    if (!OMPI_COMM_IS_TOPO(comm) || mca_topo_base_neighbor_count(comm, in, out) != OMPI_SUCCESS) *in = *out = 0;
}

/* Device memory on each significant side (the others' arguments may be
 * anything: MPI does not read them); the w kinds look at the first block
 * holding data. A NULL buffer is MPI_BOTTOM: the types carry the addresses. */
static void sides_on_device(const coll_gpu_call_t *c, ompi_communicator_t *comm, coll_gpu_roles_t r, bool *s,
                            bool *d)
{
    const bool send = r.send && c->sbuf != MPI_IN_PLACE, recv = r.recv && c->rbuf != MPI_IN_PLACE;
    if (c->kind == COLL_GPU_ALLTOALLW || c->kind == COLL_GPU_NEIGHBOR_ALLTOALLW) {
        int in = OMPI_COMM_IS_INTER(comm) ? ompi_comm_remote_size(comm) : ompi_comm_size(comm), out = in;
        if (c->kind == COLL_GPU_NEIGHBOR_ALLTOALLW) degrees(comm, &in, &out);
        *s = send && coll_gpu_w_data_on_device(c->sbuf, c->sdtypes, c->scounts, c->sdispls, c->sdispls_aint, out);
        *d = recv && coll_gpu_w_data_on_device(c->rbuf, c->rdtypes, c->rcounts, c->rdispls, c->rdispls_aint, in);
        return;
    }
    *s = send && coll_gpu_data_on_device(c->sbuf, c->sdtype, 0);
    *d = recv && coll_gpu_data_on_device(c->rbuf, c->rdtype, 0);
}

/* The peer kernels move bytes in rdtype's layout: in place, or the same
 * type and count on both sides. */
static bool same_layout(const coll_gpu_call_t *c, ompi_communicator_t *comm)
{
    if (c->sbuf == MPI_IN_PLACE || coll_gpu_kind_info(c->kind)->reduction) return true;
    switch (c->kind) {
    case COLL_GPU_ALLGATHER: case COLL_GPU_ALLTOALL: return c->sdtype == c->rdtype && c->scount == c->rcount;
    case COLL_GPU_ALLGATHERV:
        return c->sdtype == c->rdtype && (int)c->scount == c->rcounts[ompi_comm_rank(comm)];
    case COLL_GPU_ALLTOALLV: return c->sdtype == c->rdtype;
    default: return true;
    }
}

int coll_gpu_call_where(const coll_gpu_call_t *c, ompi_communicator_t *comm, coll_gpu_where_t *w)
{
    const bool inter = OMPI_COMM_IS_INTER(comm);
    const coll_gpu_roles_t r = roles(c, comm, inter);
    /* MPI defines no MPI_IN_PLACE on intercommunicators, and Open MPI's
     * argument checks let it through to some modules (reduce_scatter),
     * which then use it as an address. */
    if (inter && ((r.send && c->sbuf == MPI_IN_PLACE) || (r.recv && c->rbuf == MPI_IN_PLACE))) {
        opal_output(0, "coll:gpu: %s: MPI_IN_PLACE is not defined on an intercommunicator", comm->c_name);
        return MPI_ERR_ARG;
    }
    bool sdev, rdev;
    sides_on_device(c, comm, r, &sdev, &rdev);
    /* In place, the receive buffer is the input too. */
    const bool sdev_in = c->sbuf == MPI_IN_PLACE ? rdev : sdev;
    *w = (coll_gpu_where_t){.inter = inter, .one_rank = !inter && ompi_comm_size(comm) == 1};
    w->any_device = sdev || rdev;
    /* (Intercommunicators have no peer path, and their v arrays count the
     * remote group: same_layout's look at this rank's count is not theirs.) */
    w->device_ok = !inter && (!r.send || sdev_in) && (!r.recv || rdev) && same_layout(c, comm);
    return OMPI_SUCCESS;
}

coll_gpu_roles_t coll_gpu_call_roles(const coll_gpu_call_t *c, ompi_communicator_t *comm)
{
    return roles(c, comm, OMPI_COMM_IS_INTER(comm));
}

/* How many blocks each side of `c` has: the remote group's size on an
 * intercommunicator (reduce_scatter's input is scattered over the local
 * group), the degrees of a neighbourhood, else the communicator's size. */
void coll_gpu_call_blocks(const coll_gpu_call_t *c, ompi_communicator_t *comm, int *sblocks, int *rblocks)
{
    if (coll_gpu_kind_info(c->kind)->neighbor) {
        degrees(comm, rblocks, sblocks);
        return;
    }
    const bool local = !OMPI_COMM_IS_INTER(comm) || c->kind == COLL_GPU_REDUCE_SCATTER ||
                       c->kind == COLL_GPU_REDUCE_SCATTER_BLOCK;
    *sblocks = *rblocks = local ? ompi_comm_size(comm) : ompi_comm_remote_size(comm);
}

bool coll_gpu_call_args(const coll_gpu_call_t *c, ompi_communicator_t *comm, gpucoll_coll_args_t *a)
{
    *a = (gpucoll_coll_args_t){.kind = (gpucoll_coll_kind_t)c->kind, .dtype = GPUCOLL_UINT8, .op = GPUCOLL_OP_NONE,
                               .root = c->root};
    const size_t blocks =
        c->kind == COLL_GPU_ALLGATHER || c->kind == COLL_GPU_ALLTOALL ? (size_t)ompi_comm_size(comm) : 1;
    ptrdiff_t first = 0;
    const bool direct = coll_gpu_layout(c->rdtype, c->rcount, blocks, c->op, a, &first);
    a->sbuf = c->sbuf == MPI_IN_PLACE || c->kind == COLL_GPU_BCAST ? NULL : (const char *)c->sbuf + first;
    a->rbuf = (char *)c->rbuf + first;
    return direct;
}
