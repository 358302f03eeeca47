/* Hand a collective to the core's peer-to-peer path when this rank can take
 * it; the core agrees with the other ranks (see gpucoll_team_run). */
#include "coll_gpu.h"

/* Runs `a` on the team: false if every rank stages it instead. */
static bool run_on_team(mca_coll_gpu_module_t *m, const gpucoll_coll_args_t *a, int *rc)
{
    gpucoll_status_t st = gpucoll_team_run(m->team, a);
    if (st == GPUCOLL_ERR_UNSUPPORTED) return false;
    if (st != GPUCOLL_SUCCESS) {
        *rc = coll_gpu_error(st, "peer-to-peer collective");
        return true;
    }
    if (a->count > 0) /* an empty call ran nothing */
        COLL_GPU_VERBOSE(50, "%s: collective %d on %zu elements ran peer-to-peer (%s)", m->comm->c_name,
                         (int)a->kind, a->count, gpucoll_team_last_algorithm(m->team));
    *rc = OMPI_SUCCESS;
    return true;
}

/* Allreduce, reduce, bcast, allgather, reduce_scatter_block, alltoall. */
static bool team_try_blocks(mca_coll_gpu_module_t *m, const coll_gpu_call_t *c, bool device_ok, int *rc)
{
    gpucoll_coll_args_t a;
    const bool direct = coll_gpu_call_args(c, m->comm, &a);
    /* Empty calls go to the core too (which runs nothing for them): skipped
     * here, one would leave this rank a call behind a peer that was given a
     * count (an erroneous program), and every later call would pair wrong. */
    const bool empty = c->rcount * c->rdtype->super.size == 0;
    a.count = empty ? 0 : a.count;
    a.local_ok = !m->force_staged && (empty || (device_ok && direct));
    return run_on_team(m, &a, rc);
}

/* Vector layouts in the units the core takes: bytes for data movement (a
 * contiguous type whose extent is its size, so that counts and displacements
 * scale alike; its data starts at true_lb), elements of a mapped type for
 * reductions. *unit: bytes or elements per element of dtype; *first: where
 * element 0 starts, relative to the buffer. */
static bool vector_units(ompi_datatype_t *dtype, ompi_op_t *op, gpucoll_coll_args_t *a, size_t *unit,
                         ptrdiff_t *first)
{
    *first = 0;
    if (op != NULL) {
        *unit = 1;
        return coll_gpu_map_reduction(dtype, op, &a->dtype, &a->op);
    }
    ptrdiff_t lb, extent, true_lb, true_extent;
    ompi_datatype_get_extent(dtype, &lb, &extent);
    ompi_datatype_get_true_extent(dtype, &true_lb, &true_extent);
    if (!ompi_datatype_is_contiguous_memory_layout(dtype, 2) || (size_t)extent != dtype->super.size ||
        dtype->super.size == 0)
        return false;
    a->dtype = GPUCOLL_UINT8;
    a->op = GPUCOLL_OP_NONE;
    *unit = dtype->super.size;
    *first = true_lb;
    return true;
}

/* Allgatherv, reduce_scatter and alltoallv: counts/displs are the MPI
 * call's (recvcounts/displs; recvcounts; sendcounts/sdispls), and
 * rcounts/rdispls alltoallv's receive side (else NULL). */
static bool team_try_v(mca_coll_gpu_module_t *m, gpucoll_coll_kind_t kind, const void *sbuf, void *rbuf,
                       const int *counts, const int *displs, const int *rcounts, const int *rdispls,
                       ompi_datatype_t *dtype, ompi_op_t *op, bool device_ok, int *rc)
{
    int size = ompi_comm_size(m->comm);
    size_t c[GPUCOLL_TEAM_MAX_RANKS] = {0}, d[GPUCOLL_TEAM_MAX_RANKS] = {0}, rc_[GPUCOLL_TEAM_MAX_RANKS] = {0},
           rd[GPUCOLL_TEAM_MAX_RANKS] = {0};
    gpucoll_coll_args_t a = {.kind = kind, .sbuf = sbuf == MPI_IN_PLACE ? NULL : sbuf, .rbuf = rbuf,
                             .dtype = GPUCOLL_UINT8, .op = GPUCOLL_OP_NONE};
    size_t unit = 1, total = 0;
    ptrdiff_t first = 0;
    bool ok = size <= GPUCOLL_TEAM_MAX_RANKS && !m->force_staged && vector_units(dtype, op, &a, &unit, &first);
    for (int i = 0; ok && i < size; i++) {
        ok = counts[i] >= 0 && (displs == NULL || displs[i] >= 0) && (rcounts == NULL || rcounts[i] >= 0) &&
             (rdispls == NULL || rdispls[i] >= 0);
        if (!ok) break;
        c[i] = (size_t)counts[i] * unit;
        d[i] = displs ? (size_t)displs[i] * unit : 0;
        rc_[i] = rcounts ? (size_t)rcounts[i] * unit : 0;
        rd[i] = rdispls ? (size_t)rdispls[i] * unit : 0;
        total += c[i] + rc_[i];
    }
    /* Allgatherv and reduce_scatter have the same counts everywhere, so
     * skipping an empty call is a shared decision; alltoallv's are each
     * rank's own, and every rank must reach the agreement. */
    if (ok && total == 0 && kind != GPUCOLL_COLL_ALLTOALLV) return false;
    a.count = total;
    if (a.sbuf) a.sbuf = (const char *)a.sbuf + first;
    a.rbuf = (char *)rbuf + first;
    a.counts = c;
    a.displs = displs ? d : NULL;
    a.rcounts = rcounts ? rc_ : NULL;
    a.rdispls = rdispls ? rd : NULL;
    a.local_ok = ok && device_ok;
    return run_on_team(m, &a, rc);
}

bool coll_gpu_team_try(mca_coll_gpu_module_t *m, const coll_gpu_call_t *c, bool device_ok, int *rc)
{
    if (!coll_gpu_team_ensure(m)) return false;
    const gpucoll_coll_kind_t kind = (gpucoll_coll_kind_t)c->kind;
    const bool ip = c->sbuf == MPI_IN_PLACE;
    switch (c->kind) {
    case COLL_GPU_ALLGATHERV:
        return team_try_v(m, kind, c->sbuf, c->rbuf, c->rcounts, c->rdispls, NULL, NULL, c->rdtype, NULL, device_ok, rc);
    case COLL_GPU_REDUCE_SCATTER:
        return team_try_v(m, kind, c->sbuf, c->rbuf, c->rcounts, NULL, NULL, NULL, c->rdtype, c->op, device_ok, rc);
    case COLL_GPU_ALLTOALLV:
        /* In place the send arguments are ignored (they may be NULL): the
         * receive ones stand in (and the peer path stages in-place calls). */
        return team_try_v(m, kind, c->sbuf, c->rbuf, ip ? c->rcounts : c->scounts, ip ? c->rdispls : c->sdispls,
                          c->rcounts, c->rdispls, c->rdtype, NULL, device_ok, rc);
    default: return team_try_blocks(m, c, device_ok, rc);
    }
}

int coll_gpu_team_after_barrier(mca_coll_gpu_module_t *m)
{
    /* After the barrier, where every rank has arrived: the set-up's waits
     * are then short, however late a rank came (a rank that reads its input
     * for a minute before the barrier is a correct program). Every rank of a
     * team-eligible communicator gets here alike: the team (built at the
     * first such call) and its GPU state are shared verdicts. */
    if ((m->team_pending || m->team) && coll_gpu_team_ensure(m)) {
        gpucoll_status_t st = gpucoll_team_prepare(m->team, !m->force_staged);
        if (st != GPUCOLL_SUCCESS) return coll_gpu_error(st, "setting the GPU path up after the barrier");
    }
    return OMPI_SUCCESS;
}
