/* coll/gpu: the C glue between Open MPI's coll framework and the coll/gpu core.
 *
 * Only files in this folder include Open MPI headers. Every collective we
 * install (coll_gpu_entry_*.c) turns its MPI arguments into one call record
 * (coll_gpu_call_t) and hands it to coll_gpu_run (coll_gpu_route.c), which
 * decides in one place where it goes: the core's peer kernels (blocking:
 * agreed with the peers; nonblocking and persistent: queued), the
 * hierarchical path, a one-rank copy, the module we displaced (saved in
 * `prev`) on host buffers, or the staged path (copy to host, run the
 * displaced module, copy back). */
#ifndef MCA_COLL_GPU_H
#define MCA_COLL_GPU_H

#include "ompi_config.h"
#include "mpi.h"
#include "ompi/communicator/communicator.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/mca/coll/base/base.h"
#include "ompi/mca/coll/coll.h"
#include "ompi/op/op.h"
#include "ompi/request/request.h"
#include "opal/runtime/opal_progress.h"
#include "opal/util/output.h"
#include "coll_gpu_compat.h"

#include "gpucoll_config.h"
#include "gpucoll_core.h"

BEGIN_C_DECLS

typedef struct mca_coll_gpu_component_t {
    mca_coll_base_component_t super;
    int priority;
    int verbose;
    bool enable;
    bool select_without_gpu; /* tests: stay selected with no driver, pass everything through */
    bool stage_host_buffers; /* tests: host buffers taken for device ones, so every call is staged */
    int output;              /* opal_output stream, verbosity = verbose */
    size_t staging_pinned_max_bytes; /* staged copies larger than this are pageable (0: no limit) */
    gpucoll_config_t config; /* what the core reads */
} mca_coll_gpu_component_t;

COLL_GPU_DECLSPEC extern mca_coll_gpu_component_t mca_coll_gpu_component;

/* The functions and modules we displaced, one pair per collective we wrap.
 * X(name) lists them; the module saves, installs and releases through it. */
#define COLL_GPU_WRAPPED(X)                                                       \
    X(barrier)                                                                    \
    X(allgather) X(allgatherv) X(allreduce) X(alltoall) X(alltoallv) X(alltoallw) \
    X(bcast) X(exscan) X(gather) X(gatherv) X(reduce) X(reduce_scatter)           \
    X(reduce_scatter_block) X(scan) X(scatter) X(scatterv) X(reduce_local)        \
    X(iallgather) X(iallgatherv) X(iallreduce) X(ialltoall) X(ialltoallv)         \
    X(ialltoallw) X(ibcast) X(iexscan) X(igather) X(igatherv) X(ireduce)          \
    X(ireduce_scatter) X(ireduce_scatter_block) X(iscan) X(iscatter) X(iscatterv)     \
    X(allgather_init) X(allgatherv_init) X(allreduce_init) X(alltoall_init)       \
    X(alltoallv_init) X(bcast_init) X(exscan_init) X(gather_init) X(gatherv_init) \
    X(reduce_init) X(reduce_scatter_init) X(reduce_scatter_block_init)            \
    X(scan_init) X(scatter_init) X(scatterv_init) X(alltoallw_init)               \
    X(neighbor_allgather) X(neighbor_allgatherv) X(neighbor_alltoall)            \
    X(neighbor_alltoallv) X(neighbor_alltoallw) X(ineighbor_allgather)           \
    X(ineighbor_allgatherv) X(ineighbor_alltoall) X(ineighbor_alltoallv)         \
    X(ineighbor_alltoallw) X(neighbor_allgather_init) X(neighbor_allgatherv_init) \
    X(neighbor_alltoall_init) X(neighbor_alltoallv_init) X(neighbor_alltoallw_init)

typedef struct coll_gpu_prev_t {
/* The slot's own type: the neighbourhood slots reuse the plain collectives'
 * function types, so no type is named after them. */
#define COLL_GPU_PREV_FIELD(name)                                   \
    __typeof__(((mca_coll_base_module_t *)0)->coll_##name) name;    \
    mca_coll_base_module_t *name##_module;
    COLL_GPU_WRAPPED(COLL_GPU_PREV_FIELD)
#undef COLL_GPU_PREV_FIELD
} coll_gpu_prev_t;

typedef struct mca_coll_gpu_module_t {
    mca_coll_base_module_t super;
    coll_gpu_prev_t prev;
    ompi_communicator_t *comm;
    bool force_staged;      /* MCA path=staged or communicator info coll_gpu_path=staged */
    gpucoll_team_t *team;   /* node-local peer-to-peer group, NULL if not eligible */
    bool team_pending;      /* eligible, built at the first collective that can use it */
    gpucoll_hier_t *hier;   /* communicator spanning (virtual) nodes: node-local team + UCX group,
                               NULL if none; never together with `team` (coll_gpu_hier.c) */
    bool hier_pending;      /* spans nodes: the hierarchical path is built at the first collective */
    gpucoll_team_t *stream_team; /* stream-ordered collectives' own team (coll_gpu_stream.c), NULL if none */
    bool stream_tried;      /* stream_team was built (or found impossible): alike on every rank */
} mca_coll_gpu_module_t;
OBJ_CLASS_DECLARATION(mca_coll_gpu_module_t);

#define COLL_GPU_MODULE(m) ((mca_coll_gpu_module_t *)(m))
/* The arguments are evaluated only at that verbosity: several sit on the
 * per-call path of every collective. */
#define COLL_GPU_VERBOSE(level, ...)                                                              \
    do {                                                                                          \
        if (mca_coll_gpu_component.verbose >= (level))                                            \
            opal_output_verbose(level, mca_coll_gpu_component.output, "coll:gpu: " __VA_ARGS__);  \
    } while (0)

/* component / module (coll_gpu_module.c) */
int mca_coll_gpu_init_query(bool enable_progress_threads, bool enable_mpi_threads);
mca_coll_base_module_t *mca_coll_gpu_comm_query(ompi_communicator_t *comm, int *priority);

/* ---- one call, as MPI names it (coll_gpu_call.c) ---------------------------
 * Every MPI collective kind coll/gpu installs. The first nine are the core's
 * own (gpucoll_coll_kind_t, same values): what the peer kernels can run. */
typedef enum coll_gpu_kind {
    COLL_GPU_ALLREDUCE = GPUCOLL_COLL_ALLREDUCE,
    COLL_GPU_REDUCE = GPUCOLL_COLL_REDUCE,
    COLL_GPU_BCAST = GPUCOLL_COLL_BCAST,
    COLL_GPU_ALLGATHER = GPUCOLL_COLL_ALLGATHER,
    COLL_GPU_REDUCE_SCATTER_BLOCK = GPUCOLL_COLL_REDUCE_SCATTER_BLOCK,
    COLL_GPU_ALLTOALL = GPUCOLL_COLL_ALLTOALL,
    COLL_GPU_ALLGATHERV = GPUCOLL_COLL_ALLGATHERV,
    COLL_GPU_REDUCE_SCATTER = GPUCOLL_COLL_REDUCE_SCATTER,
    COLL_GPU_ALLTOALLV = GPUCOLL_COLL_ALLTOALLV,
    COLL_GPU_ALLTOALLW = GPUCOLL_COLL_KIND_COUNT,
    COLL_GPU_GATHER,
    COLL_GPU_GATHERV,
    COLL_GPU_SCATTER,
    COLL_GPU_SCATTERV,
    COLL_GPU_SCAN,
    COLL_GPU_EXSCAN,
    COLL_GPU_NEIGHBOR_ALLGATHER,
    COLL_GPU_NEIGHBOR_ALLGATHERV,
    COLL_GPU_NEIGHBOR_ALLTOALL,
    COLL_GPU_NEIGHBOR_ALLTOALLV,
    COLL_GPU_NEIGHBOR_ALLTOALLW,
    COLL_GPU_KIND_COUNT
} coll_gpu_kind_t;

/* What the glue knows of a kind: the one table (coll_gpu_call.c). */
typedef struct coll_gpu_kind_info {
    const char *name;
    bool reduction; /* an op; sdtype == rdtype */
    bool rooted;
    bool peer;      /* blocking calls go to the peer kernels (agreed) */
    bool hier;      /* blocking calls go to the hierarchical path */
    bool queued;    /* nonblocking and persistent calls go to the peer kernels */
    bool neighbor;  /* blocks come from the topology's degrees */
} coll_gpu_kind_info_t;
const coll_gpu_kind_info_t *coll_gpu_kind_info(coll_gpu_kind_t kind);

/* One call's arguments as the MPI call names them. Counts are per block
 * (allgather, alltoall: per rank); reductions set sdtype = rdtype and the
 * count in rcount; bcast's buffer is rbuf; v kinds give the arrays, w kinds
 * the per-block types (neighbor_alltoallw: MPI_Aint byte displacements). */
typedef struct coll_gpu_call {
    coll_gpu_kind_t kind;
    const void *sbuf;
    size_t scount;
    ompi_datatype_t *sdtype;
    void *rbuf;
    size_t rcount;
    ompi_datatype_t *rdtype;
    ompi_op_t *op;
    int root;
    const int *scounts, *sdispls, *rcounts, *rdispls;
    const MPI_Aint *sdispls_aint, *rdispls_aint;
    ompi_datatype_t *const *sdtypes, *const *rdtypes;
} coll_gpu_call_t;

/* Where one call's buffers are, for this rank (coll_gpu_call.c). */
typedef struct coll_gpu_where {
    bool any_device; /* some significant buffer is device memory */
    bool device_ok;  /* every one is, in a layout the peer kernels take */
    bool inter, one_rank;
} coll_gpu_where_t;
/* Fills *w; an MPI error for arguments MPI does not define here
 * (MPI_IN_PLACE on an intercommunicator). */
int coll_gpu_call_where(const coll_gpu_call_t *c, ompi_communicator_t *comm, coll_gpu_where_t *w);
/* Which of c's buffers this rank's role makes significant (the root's
 * alone receive gather and reduce, send scatter; on an intercommunicator
 * MPI_ROOT and MPI_PROC_NULL). */
typedef struct { bool send, recv; } coll_gpu_roles_t;
coll_gpu_roles_t coll_gpu_call_roles(const coll_gpu_call_t *c, ompi_communicator_t *comm);
/* How many blocks each side has: the communicator's size, the remote
 * group's on an intercommunicator, a neighbourhood's degrees. */
void coll_gpu_call_blocks(const coll_gpu_call_t *c, ompi_communicator_t *comm, int *sblocks, int *rblocks);
/* The one mapping of a call of the six block kinds (allreduce, reduce,
 * bcast, allgather, reduce_scatter_block, alltoall) onto the core's
 * description: reductions in elements of a mapped type and op, data
 * movement in bytes of rdtype's layout, from its true lower bound (a send
 * side in rdtype's layout too: the peer paths take equal layouts only).
 * False where that layout is not one run of bytes, or the type and op have
 * no kernel; a->sbuf NULL means in place. */
bool coll_gpu_call_args(const coll_gpu_call_t *c, ompi_communicator_t *comm, gpucoll_coll_args_t *a);
/* The displaced module's blocking (request NULL) or nonblocking call
 * (coll_gpu_call_prev.c); OMPI_ERR_NOT_SUPPORTED where no module below
 * provides it. */
int coll_gpu_call_prev(const coll_gpu_call_t *c, ompi_communicator_t *comm, ompi_request_t **request,
                       const coll_gpu_prev_t *p);
/* The call on host copies of its device buffers (coll_gpu_call_stage.c). */
int coll_gpu_call_staged(const coll_gpu_call_t *c, ompi_communicator_t *comm, ompi_request_t **request,
                         mca_coll_gpu_module_t *m);
/* A one-rank communicator: the call as a copy on the GPU (coll_gpu_self.c). */
bool coll_gpu_call_self(mca_coll_gpu_module_t *m, const coll_gpu_call_t *c, ompi_request_t **request, int *rc);

/* ---- staging (coll_gpu_stage.c) ------------------------------------------
 * A stage records the device buffers of one call and their host copies. Each
 * coll_gpu_stage_* call returns the pointer to hand to the displaced module:
 * the host copy for device memory, the argument itself otherwise. */
typedef struct coll_gpu_stage coll_gpu_stage_t;

bool coll_gpu_is_device(const void *ptr);
/* Whether the data of a buffer argument are in device memory: `buf` itself,
 * or for MPI_BOTTOM (NULL in Open MPI) the absolute address that `displ`
 * bytes plus dtype's true lower bound name (types built from
 * MPI_Get_address). The w form looks at the first block holding data,
 * displacements in bytes, int or MPI_Aint (whichever is given). */
bool coll_gpu_data_on_device(const void *buf, ompi_datatype_t *dtype, ptrdiff_t displ);
bool coll_gpu_w_data_on_device(const void *buf, ompi_datatype_t *const *dtypes, const int *counts,
                               const int *displs, const MPI_Aint *adispls, int n);
coll_gpu_stage_t *coll_gpu_stage_new(void);
/* `count` elements of `dtype` at `buf`: copied in if `in`, back out if `out`. */
void *coll_gpu_stage(coll_gpu_stage_t *st, const void *buf, ompi_datatype_t *dtype, size_t count,
                     bool in, bool out);
/* Same for a vector layout: block i is counts[i] elements at displs[i] * extent. */
void *coll_gpu_stage_v(coll_gpu_stage_t *st, const void *buf, ompi_datatype_t *dtype, const int *counts,
                       const int *displs, int n, bool in, bool out);
/* alltoallw: block i is counts[i] elements of dtypes[i] at byte offset displs[i]. */
void *coll_gpu_stage_w(coll_gpu_stage_t *st, const void *buf, ompi_datatype_t *const *dtypes,
                       const int *counts, const int *displs, int n, bool in, bool out);
/* The same with MPI_Aint byte offsets (MPI_Neighbor_alltoallw). */
void *coll_gpu_stage_w_aint(coll_gpu_stage_t *st, const void *buf, ompi_datatype_t *const *dtypes,
                            const int *counts, const MPI_Aint *displs, int n, bool in, bool out);
/* Non-zero (an MPI error) if this rank cannot take part in the collective
 * (no host memory for its copies); the stage is then released. Other
 * failures (a copy to host) are returned by coll_gpu_stage_finish after the
 * collective ran, so that the other ranks never wait for a rank that left. */
int coll_gpu_stage_failed(coll_gpu_stage_t *st);
/* Narrows what is copied back of the last staged buffer to `count` elements
 * at element offset `offset` (reduce_scatter in place writes only its block). */
void coll_gpu_stage_limit_out(coll_gpu_stage_t *st, ompi_datatype_t *dtype, size_t offset, size_t count);
/* Finishes a call whose displaced collective returned `rc`. Blocking calls
 * (request == NULL) copy results back and free the stage; nonblocking ones
 * wrap *request so that the copy back happens before MPI_Wait returns. */
int coll_gpu_stage_finish(coll_gpu_stage_t *st, int rc, ompi_communicator_t *comm, ompi_request_t **request);

/* ---- one-rank communicators (coll_gpu_self.c) ------------------------------
 * On a communicator of one rank, with a device buffer on either side: copies
 * `scount` x sdtype at sbuf to `rcount` x rdtype at rbuf on the GPU (nothing
 * in place, i.e. sbuf or rbuf MPI_IN_PLACE), completes `request` (if any) at
 * once, and returns true with the result in *rc. False (the caller stages)
 * for host buffers, a layout that is not one run of bytes, or where staging
 * is forced (path=staged, info coll_gpu_path=staged). */
bool coll_gpu_self_copy(mca_coll_gpu_module_t *m, const void *sbuf, size_t scount, ompi_datatype_t *sdtype,
                        void *rbuf, size_t rcount, ompi_datatype_t *rdtype, ompi_request_t **request, int *rc);
/* Bytes spanned by n extents of dtype: a displacement in a v-collective. */
static inline ptrdiff_t coll_gpu_extent_of(ompi_datatype_t *dtype, int n)
{
    ptrdiff_t lb, extent;
    ompi_datatype_get_extent(dtype, &lb, &extent);
    return extent * (ptrdiff_t)n;
}

/* ---- nonblocking requests (coll_gpu_request.c) --------------------------- */
/* An inner request that Open MPI's progress watches: once it is complete,
 * `complete` runs (once, from progress, outside any lock of ours). */
typedef struct coll_gpu_pending {
    ompi_request_t *inner;
    /* If set, watched instead of `inner`: true once the work is over (it
     * runs under the watch list's lock, and at most until it says true). */
    bool (*ready)(struct coll_gpu_pending *self);
    void (*complete)(struct coll_gpu_pending *self);
    struct coll_gpu_pending *next;
} coll_gpu_pending_t;
void coll_gpu_pending_add(coll_gpu_pending_t *w);
/* The component's one request type (every nonblocking and persistent
 * collective). New: owned by the application's handle, holding `comm`
 * (coll_gpu_request_init); persistent ones inactive and complete, with
 * req_start for the caller to set. Each run is watched by progress, and the
 * request completes when it is over: the displaced module's request `inner`
 * on host copies `st` (NULL: none), or the peer kernels' plan `q` (freed
 * after the run unless `keep`: a persistent request's plan). */
typedef struct coll_gpu_request coll_gpu_request_t;
typedef struct coll_gpu_queued coll_gpu_queued_t;
coll_gpu_request_t *coll_gpu_request_new(ompi_communicator_t *comm, bool persistent);
ompi_request_t *coll_gpu_request_mpi(coll_gpu_request_t *r);
void coll_gpu_request_watch_inner(coll_gpu_request_t *r, ompi_request_t *inner, coll_gpu_stage_t *st);
void coll_gpu_request_watch_queued(coll_gpu_request_t *r, coll_gpu_queued_t *q, bool keep);
/* Drops the handle's ownership of a request never handed to the application. */
void coll_gpu_request_drop(coll_gpu_request_t *r);
/* Persistent: the recorded call, freed with `record_free` when the request is. */
void coll_gpu_request_set_record(coll_gpu_request_t *r, void *record, void (*record_free)(void *));
void *coll_gpu_request_record(ompi_request_t *r);
/* Our requests have two owners, the application's handle and the work in
 * flight, counted in *owners: each drops its own, and the last one
 * finalises and frees the request. */
void coll_gpu_request_disown(ompi_request_t *request, int32_t *owners);
/* Sets up one of our requests on `comm` (active, or inactive and complete
 * if persistent) and takes a reference to `comm`, which the last owner's
 * coll_gpu_request_disown gives back: freeing the communicator while the
 * request is pending or not yet freed is then correct, as MPI requires. */
void coll_gpu_request_init(ompi_request_t *r, ompi_communicator_t *comm, bool persistent,
                           ompi_request_free_fn_t free_fn);
/* Completes one of our requests with `rc`; a failed one carries
 * COLL_GPU_FAILED_REQUEST_TYPE, so that MPI_Wait/MPI_Test raise `rc` on its
 * communicator's error handler (MPI_ERRORS_RETURN returns it) in 4.1 too. */
void coll_gpu_request_end(ompi_request_t *r, int rc);
/* req_cancel of our requests: collectives cannot be cancelled. */
int coll_gpu_request_cancel(ompi_request_t *request, int complete);
/* Runs the completions that are due now; returns how many ran. */
int coll_gpu_pending_progress(void);
int coll_gpu_request_wrap(ompi_request_t **request, coll_gpu_stage_t *st, ompi_communicator_t *comm);
/* A nonblocking request of the displaced module (rc its start's result),
 * wrapped so that it holds `comm` until it completes: Open MPI's libnbc
 * requests do not, and MPI_Comm_free before their completion crashed
 * (host buffers, with or without coll/gpu: tests/mpi/lifetime_check.c). */
int coll_gpu_request_hold(int rc, ompi_request_t **request, ompi_communicator_t *comm);
/* Copies results back and releases the stage; `rc` is the collective's outcome. */
int coll_gpu_stage_release(coll_gpu_stage_t *st, int rc);
void coll_gpu_request_fini(void);

/* ---- the peer-to-peer path (coll_gpu_team.c) ------------------------------
 * Returns true if the collective is done (*rc holds its result); false if the
 * caller must take the staged or host path. `device_ok`: every significant
 * buffer of this rank is device memory. Ranks with a team must call it for
 * each collective of that kind, host buffers or not, so that they agree. */
/* Builds the team on first use (collective: every rank reaches it at the same
 * call). True if the communicator has one. */
bool coll_gpu_team_ensure(mca_coll_gpu_module_t *m);
/* The team of the stream-ordered collectives (coll_gpu_stream.c), built and
 * set up on first use on the GPU current in the calling thread (collective,
 * blocking). True if the communicator has one; alike on every rank. */
bool coll_gpu_stream_team_ensure(mca_coll_gpu_module_t *m);
/* coll_gpu_stream_init on a communicator whose stream team exists:
 * collective. Where an enqueued call failed on any rank (arguments that
 * differ, a failed launch, the flags spent), every rank ends its stream
 * team's kernels and builds a fresh team; otherwise nothing changes.
 * MPI_SUCCESS, or the error of the agreement or of the new team. */
int coll_gpu_stream_team_renew(mca_coll_gpu_module_t *m);
/* gpucoll_oob_t.progress: Open MPI's progress engine. */
void coll_gpu_mpi_progress(void);
/* Blocking calls of the peer kinds (coll_gpu_kind_info(kind)->peer), every
 * one of them, host buffers or not: each agrees with the peers, so every
 * rank with a team must come here for each call of those kinds. True if
 * done (*rc its result); false if every rank stages it. `device_ok`: every
 * significant buffer of this rank is device memory, in a layout the peer
 * path takes. The vector kinds (allgatherv, reduce_scatter, alltoallv) take
 * the peer path only zero-copy, with a contiguous (or, with an op, mapped)
 * type. */
bool coll_gpu_team_try(mca_coll_gpu_module_t *m, const coll_gpu_call_t *c, bool device_ok, int *rc);
/* After MPI_Barrier: sets the communicator's GPU path up if every rank can
 * use it, so that nonblocking and persistent calls made after it can take
 * the peer kernels. */
int coll_gpu_team_after_barrier(mca_coll_gpu_module_t *m);

/* ---- nonblocking and persistent calls on the peer kernels (coll_gpu_queued.c)
 * For the queued kinds (coll_gpu_kind_info(kind)->queued): allreduce,
 * reduce, bcast, allgather, reduce_scatter_block and alltoall. */
/* Whether `c` runs on the peer kernels without agreement: false if every
 * rank stages it; true with *q (run it with start/test) or with *rc an
 * error of this rank. Every rank of a communicator whose GPU path is set up
 * gets the same answer, whatever memory its buffers are in: so every rank
 * must ask, for host buffers too. */
bool coll_gpu_queued_plan(mca_coll_gpu_module_t *m, const coll_gpu_call_t *c, bool persistent, coll_gpu_queued_t **q,
                          int *rc);
/* Launches one run (packs inputs first); an error means nothing runs. */
int coll_gpu_queued_start(coll_gpu_queued_t *q);
/* True once the run is over, with *rc its result and outputs in place. */
bool coll_gpu_queued_test(coll_gpu_queued_t *q, int *rc);
/* True where the communicator's GPU path was retired since q was planned
 * (gpucoll_plan_retired): a persistent request drops q and stages. */
bool coll_gpu_queued_retired(const coll_gpu_queued_t *q);
void coll_gpu_queued_free(coll_gpu_queued_t *q);
/* MPI_I<coll>: plans and starts `c`, and returns its request in *request;
 * false if every rank stages it instead. */
bool coll_gpu_queued_try(mca_coll_gpu_module_t *m, const coll_gpu_call_t *c, ompi_request_t **request, int *rc);

/* ---- the route (coll_gpu_route.c) ------------------------------------------
 * The one place that decides where a call goes, and runs it there: blocking
 * (request NULL) or nonblocking (*request set on success). */
int coll_gpu_run(mca_coll_gpu_module_t *m, ompi_communicator_t *comm, const coll_gpu_call_t *c,
                 ompi_request_t **request);
/* One start of a persistent request `persistent` recording `c`: the queued
 * route through coll_gpu_persistent_queued, any other with *request set to
 * the nonblocking call's request. Success with *request NULL: the queued
 * route took it (and watches `persistent`). */
int coll_gpu_run_start(mca_coll_gpu_module_t *m, ompi_communicator_t *comm, const coll_gpu_call_t *c,
                       ompi_request_t **request, coll_gpu_request_t *persistent);

/* ---- persistent collectives (coll_gpu_persistent.c) ----------------------- */
/* A persistent request recording `c` (*_init): inactive and complete. */
int coll_gpu_persistent_new(mca_coll_gpu_module_t *m, ompi_communicator_t *comm, const coll_gpu_call_t *c,
                            ompi_request_t **request);
/* The queued route of one start: plans `c` for the peer kernels at the first
 * start that can (kept with the request), launches it and watches it on
 * `r`. False if every rank stages it; true with *rc otherwise. */
bool coll_gpu_persistent_queued(mca_coll_gpu_module_t *m, const coll_gpu_call_t *c, coll_gpu_request_t *r, int *rc);

/* ---- the hierarchical path across nodes (coll_gpu_hier.c) -----------------
 * coll_gpu_hier_wanted: at module enable, local (no communication): whether
 * the communicator spans real or virtual nodes and may get the hierarchical
 * path; every rank answers alike. coll_gpu_hier_try: like coll_gpu_team_try;
 * every rank must call it for each collective of the hooked kinds; the first
 * call with a nonzero count builds the node-local team and the UCX group
 * (collective), and each call agrees with all ranks through the displaced
 * allreduce before running anything. */
bool coll_gpu_hier_wanted(mca_coll_gpu_module_t *m);
bool coll_gpu_hier_try(mca_coll_gpu_module_t *m, const coll_gpu_call_t *c, bool device_ok, int *rc);

/* ---- datatype/op mapping (coll_gpu_dtype.c) ------------------------------ */
gpucoll_dtype_t coll_gpu_map_dtype(ompi_datatype_t *dtype);
gpucoll_op_t coll_gpu_map_op(ompi_op_t *op, gpucoll_dtype_t dtype);
/* How the GPU paths see `count` elements of `dtype`, repeated `blocks` times
 * back to back (allgather/alltoall: one block per rank). Reductions (op !=
 * NULL) need a predefined type and an op the kernels know; data movement
 * needs one contiguous run of bytes, which starts at buf + *first (the type's
 * true lower bound, not buf). Fills a->dtype, a->op and a->count (elements,
 * or bytes for data movement); false if the GPU paths cannot take it. */
bool coll_gpu_layout(ompi_datatype_t *dtype, size_t count, size_t blocks, ompi_op_t *op, gpucoll_coll_args_t *a,
                     ptrdiff_t *first);
/* A reduction's type and op as the kernels take them (false, and *o NONE,
 * where they cannot): the mappings above, then user ops declared through
 * coll_gpu_op_declare or recognised by their function's symbol (see
 * coll_gpu_user_op_symbols), on types whose elements start at the buffer
 * and follow each other. Every reduction path should ask this one. */
bool coll_gpu_map_reduction(ompi_datatype_t *dtype, ompi_op_t *op, gpucoll_dtype_t *d, gpucoll_op_t *o);
/* MCA coll_gpu_user_op_symbols ("SYMBOL=TYPE:OP,..."; coll_gpu_user_ops.h),
 * registered by the component, read at the first user-op reduction. */
extern char *coll_gpu_user_op_symbols;
/* coll_gpu_ext.c: the fp16/bf16 types and ops of include/coll_gpu_ext.h,
 * recognised by name and by function address (GPUCOLL_*_NONE if not ours). */
int coll_gpu_ext_dtype_kind(const char *name);
int coll_gpu_ext_op_kind(void *fn, int bf16);

/* Prints the core's last error and returns the MPI error class for `status`. */
int coll_gpu_error(gpucoll_status_t status, const char *what);
/* The same for the extension functions (include/coll_gpu_ext.h), which
 * return to the application directly, not through Open MPI's error
 * handlers: MPI_SUCCESS, MPI_ERR_NO_MEM, MPI_ERR_ARG (invalid),
 * MPI_ERR_UNSUPPORTED_OPERATION, else MPI_ERR_OTHER. */
int coll_gpu_mpi_class(gpucoll_status_t status, const char *what);

/* ---- the entry points (coll_gpu_entry_*.c) ---------------------------------
 * COLL_GPU_ENTRIES(name, (MPI parameters up to the communicator), record):
 * the blocking, nonblocking (i<name>) and persistent (<name>_init) entry
 * points of one kind. Each names its arguments in the call record (the
 * initializer, written with the parameters' names) and hands it on: to
 * coll_gpu_run, or to coll_gpu_persistent_new for *_init. */
#define COLL_GPU_UNPAREN(...) __VA_ARGS__
#define COLL_GPU_ENTRIES(name, params, ...)                                                                  \
    static int name(COLL_GPU_UNPAREN params, ompi_communicator_t *comm, mca_coll_base_module_t *module)      \
    {                                                                                                         \
        const coll_gpu_call_t c = {__VA_ARGS__};                                                              \
        return coll_gpu_run(COLL_GPU_MODULE(module), comm, &c, NULL);                                         \
    }                                                                                                         \
    static int i##name(COLL_GPU_UNPAREN params, ompi_communicator_t *comm, ompi_request_t **request,         \
                       mca_coll_base_module_t *module)                                                        \
    {                                                                                                         \
        const coll_gpu_call_t c = {__VA_ARGS__};                                                              \
        return coll_gpu_run(COLL_GPU_MODULE(module), comm, &c, request);                                      \
    }                                                                                                         \
    static int name##_init(COLL_GPU_UNPAREN params, ompi_communicator_t *comm, ompi_info_t *info,            \
                           ompi_request_t **request, mca_coll_base_module_t *module)                          \
    {                                                                                                         \
        (void)info;                                                                                           \
        const coll_gpu_call_t c = {__VA_ARGS__};                                                              \
        return coll_gpu_persistent_new(COLL_GPU_MODULE(module), comm, &c, request);                           \
    }
/* Puts the three entry points of COLL_GPU_ENTRIES(name, ...) in module m's slots. */
#define COLL_GPU_INSTALL_ENTRIES(m, name)                                                                     \
    do {                                                                                                      \
        (m)->coll_##name = name;                                                                              \
        (m)->coll_i##name = i##name;                                                                          \
        (m)->coll_##name##_init = name##_init;                                                                \
    } while (0)
/* Each installs ours in the module's slots: on an intercommunicator only the
 * kinds MPI defines there with data (no scan, exscan, barrier, reduce_local
 * or neighbourhood collectives). */
void coll_gpu_entries_install_reductions(mca_coll_base_module_t *module, bool inter);
void coll_gpu_entries_install_movement(mca_coll_base_module_t *module);
void coll_gpu_entries_install_neighbor(mca_coll_base_module_t *module);
/* Our module on `comm` (an intracommunicator), or NULL where coll/gpu does
 * not serve its collectives. */
mca_coll_gpu_module_t *coll_gpu_module_of(ompi_communicator_t *comm);

END_C_DECLS

#endif
