/* The C interface of the coll/gpu core, as the Open MPI glue sees it.
 *
 * The core is C++ and CUDA/HIP; the glue is C compiled against Open MPI's
 * headers. Nothing here needs GPU headers. Every call that can fail returns
 * a gpucoll_status_t and leaves a reason in gpucoll_last_error(). */
#ifndef GPUCOLL_CORE_H
#define GPUCOLL_CORE_H

#include <stddef.h>

#include "gpucoll_config.h"
#include "gpucoll_oob.h"
#include "gpucoll_status.h"
#include "gpucoll_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- configuration --------------------------------------------------------- */
/* Copies `cfg` (defaults filled in) for later calls. Touches no GPU. */
void gpucoll_core_configure(const gpucoll_config_t *cfg);
const gpucoll_config_t *gpucoll_core_config(void);
/* Frees cached host and device memory. Call when the component closes. */
void gpucoll_core_release_caches(void);

/* ---- memory ---------------------------------------------------------------- */
typedef enum gpucoll_mem_kind {
    GPUCOLL_MEM_HOST = 0,
    GPUCOLL_MEM_DEVICE = 1,
    GPUCOLL_MEM_MANAGED = 2
} gpucoll_mem_kind_t;

/* 1 if a GPU driver can be loaded in this process (it is not initialised). */
int gpucoll_driver_present(void);

/* A number naming this process's current GPU by its PCI address (equal in
 * every process on the same GPU of a host, different for the host's other
 * GPUs); -1 without a GPU. */
int gpucoll_current_gpu_key(void);
/* Where `ptr` lives. Cheap (one driver query), never initialises the GPU:
 * while the application has not initialised it, every pointer is host. */
gpucoll_mem_kind_t gpucoll_mem_kind(const void *ptr);
/* Copy between any two of host, device and managed memory, on the legacy
 * default stream (ordered after the work queued there). Returns once `src`
 * may be reused and a host `dst` holds the bytes; into device or managed
 * memory the bytes may still be landing (a copy from device memory, the DMA
 * from pageable host memory): order GPU work after it on the legacy stream,
 * or use gpucoll_copy_landed. */
gpucoll_status_t gpucoll_copy(void *dst, const void *src, size_t bytes);
/* gpucoll_copy, returning only once `dst` holds the bytes: for results a
 * call then reports as there. */
gpucoll_status_t gpucoll_copy_landed(void *dst, const void *src, size_t bytes);
/* Page-locked host memory from a bounded cache (config.staging_cache_bytes).
 * Returns NULL (with a reason) if it cannot be had. */
void *gpucoll_host_alloc(size_t bytes);
void gpucoll_host_free(void *ptr, size_t bytes);

/* inout[i] = in[i] op inout[i] for i < count, on the GPU that holds `inout`.
 * Synchronous: ordered after work queued on the legacy default stream, done
 * when it returns. GPUCOLL_ERR_UNSUPPORTED (nothing ran: stage it) for a
 * (dtype, op) pair without a kernel, and unless both buffers are device
 * memory of one GPU. */
gpucoll_status_t gpucoll_local_reduce(void *inout, const void *in, size_t count, gpucoll_dtype_t dtype,
                                      gpucoll_op_t op);
/* dst = src for `bytes` bytes of host, device or managed memory, on the
 * legacy default stream (ordered after the work queued there) and done when
 * it returns: what a collective on a one-rank communicator amounts to. */
gpucoll_status_t gpucoll_local_copy(void *dst, const void *src, size_t bytes);

/* ---- node-local peer groups (the IPC fast path) ---------------------------- */
typedef struct gpucoll_team gpucoll_team_t;

/* The team reaches the other ranks through gpucoll_oob_t (common/gpucoll_oob.h). */

/* Builds the host-side control block shared by the ranks of a communicator
 * whose ranks all run on this node. Collective over `oob`; touches no GPU
 * (the GPU side is set up on first use). Returns GPUCOLL_ERR_UNSUPPORTED
 * when the group cannot have a team (too many ranks, no shared memory). */
gpucoll_status_t gpucoll_team_create(const gpucoll_oob_t *oob, gpucoll_team_t **team);
void gpucoll_team_destroy(gpucoll_team_t *team);

typedef enum gpucoll_coll_kind {
    GPUCOLL_COLL_ALLREDUCE = 0,
    GPUCOLL_COLL_REDUCE,
    GPUCOLL_COLL_BCAST,
    GPUCOLL_COLL_ALLGATHER,
    GPUCOLL_COLL_REDUCE_SCATTER_BLOCK,
    GPUCOLL_COLL_ALLTOALL,
    /* The vector kinds: zero-copy only (every rank's buffers mapped by the
     * others); where that cannot be, the caller stages. */
    GPUCOLL_COLL_ALLGATHERV,
    GPUCOLL_COLL_REDUCE_SCATTER,
    GPUCOLL_COLL_ALLTOALLV,
    GPUCOLL_COLL_KIND_COUNT
} gpucoll_coll_kind_t;

/* The algorithm table (core/algo_select.cpp): the names of the algorithms
 * that may serve `kind`, in the order the
 * automatic choice tries them ("allreduce_ll", "allreduce_oneshot", ...):
 * config.algorithm[kind] = i + 1 forces names[i]. Writes at most `max`
 * names; returns how many there are. */
int gpucoll_algorithm_names(gpucoll_coll_kind_t kind, const char **names, int max);

/* The most ranks a team has (config.max_peers is capped by it). */
#define GPUCOLL_TEAM_MAX_RANKS 8

/* One collective call, in elements of `dtype` (for data movement only
 * collectives the glue passes bytes as GPUCOLL_UINT8). `count` is what the
 * MPI call names: per rank block for allgather/reduce_scatter_block/alltoall. */
typedef struct gpucoll_coll_args {
    gpucoll_coll_kind_t kind;
    const void *sbuf; /* NULL means in place */
    void *rbuf;
    size_t count;
    gpucoll_dtype_t dtype;
    gpucoll_op_t op; /* GPUCOLL_OP_NONE for data movement */
    int root;
    int local_ok; /* 0 if this rank's buffers cannot take the peer path */
    /* Vector kinds, one entry per rank, in elements of `dtype` (bytes for
     * GPUCOLL_UINT8), NULL otherwise:
     *   ALLGATHERV: counts/displs = recvcounts/displs (equal on every rank);
     *     `count` = the sum of counts; in place, our block is in rbuf at displs[rank].
     *   REDUCE_SCATTER: counts = recvcounts (equal on every rank), the blocks
     *     follow each other in the input; `count` = their sum. Not in place.
     *   ALLTOALLV: counts/displs = sendcounts/sdispls, rcounts/rdispls =
     *     recvcounts/rdispls (this rank's own); `count` = what this rank sends
     *     and receives together. Not in place. */
    const size_t *counts, *displs, *rcounts, *rdispls;
} gpucoll_coll_args_t;

/* Runs one collective over peer memory, or agrees with the peers not to.
 *
 * Every rank of the team must call this for the same collectives in the same
 * order (as MPI requires). A rank whose buffers cannot take the peer path
 * passes local_ok = 0: it posts that and returns GPUCOLL_ERR_UNSUPPORTED
 * at once, without waiting. A rank with local_ok = 1 waits for every peer's
 * post (however late; only a peer that is gone, or the debugging
 * config.timeout_ms, ends the wait with an error); if all can, the collective runs
 * and the result is in rbuf on return, else GPUCOLL_ERR_UNSUPPORTED tells the
 * caller to take the staged path, as every other rank then does too. An
 * empty call (count 0, not a vector kind) with local_ok = 1 on a team whose
 * GPU is set up is agreed on the same way, its buffers unread: where every
 * rank's is empty, nothing runs and it succeeds; against a peer's non-empty
 * call it fails on every rank (a mismatch). */
gpucoll_status_t gpucoll_team_run(gpucoll_team_t *team, const gpucoll_coll_args_t *args);
/* Whether this rank, on its own, would take the peer path for `args` (its
 * local verdict in gpucoll_team_run: device buffers on the team's GPU, the
 * team's GPU not failed, a kernel for the kind, type and op). No agreement
 * and no side effect; the peers may still say no in gpucoll_team_run. Lets
 * a caller that commits before the team runs (the hierarchical path) ask
 * first rather than meet GPUCOLL_ERR_UNSUPPORTED after its own agreement. */
int gpucoll_team_can_run(gpucoll_team_t *team, const gpucoll_coll_args_t *args);
/* Sets the team's GPU side up ahead of any device-buffer call, if every
 * rank's calling thread has a GPU context current (the application uses
 * its GPU), on that GPU. Collective and blocking like gpucoll_team_run (the
 * glue calls it from MPI_Barrier): every rank must call it at the same
 * point of its collectives. Nothing happens (GPUCOLL_SUCCESS) where the GPU
 * side is set up already or some rank has no GPU context. It matters for
 * nonblocking and persistent calls, which take the GPU only once the GPU
 * side is set up (gpucoll_plan_create) and cannot set it up themselves.
 * can == 0: this rank stays off the GPU (info coll_gpu_path=staged, which
 * MPI lets each process set alone): it still takes part, and no rank's GPU
 * side is set up. */
gpucoll_status_t gpucoll_team_prepare(gpucoll_team_t *team, int can);
/* The algorithm the team's latest successful gpucoll_team_run ran, by its
 * name in the algorithm table ("allreduce_ll", ...), for verbose output. */
const char *gpucoll_team_last_algorithm(const gpucoll_team_t *team);

/* ---- registered windows -----------------------------------------------------
 * Buffers every rank of the team maps every other rank's, once, so that
 * queued calls (below) on them run zero-copy from their first launch
 * (docs/nonblocking.md, "Registered windows"). Both calls are collective
 * over the team, in the same order on every rank, and block until every
 * rank has made them; a rank must not make other calls on the team
 * meanwhile. They succeed or fail alike on every rank. */
/* Registers [buf, buf + bytes) of this rank (device memory of the team's
 * GPU, 16-byte aligned, exportable by CUDA IPC) as window *id. A queued call
 * whose buffers lie in windows on every rank (each rank's in its own)
 * runs the zero-copy kernel the blocking call would (allreduce, bcast,
 * allgather, above the size where the blocking call goes zero-copy).
 * GPUCOLL_ERR_UNSUPPORTED: the team's GPU side is not set up;
 * GPUCOLL_ERR_INVALID: some rank's buffer cannot be a window;
 * GPUCOLL_ERR_NO_MEMORY: 64 windows are registered. */
gpucoll_status_t gpucoll_team_window_register(gpucoll_team_t *team, void *buf, size_t bytes, int *id);
/* Waits for this rank's queued calls, then for every rank, and unmaps the
 * window: the buffer may be freed from the return on. Calls on it, queued
 * later or replayed, run through scratch. */
gpucoll_status_t gpucoll_team_window_deregister(gpucoll_team_t *team, int id);

/* ---- queued calls: nonblocking and persistent collectives ------------------
 * A plan runs one collective on the team's peer kernels without the host
 * agreement of gpucoll_team_run: launching it never waits for another rank,
 * as MPI_I<coll> and MPI_Start must not (docs/nonblocking.md says why each
 * rule below keeps that sound). */
typedef struct gpucoll_plan gpucoll_plan_t;

/* Plans `a` (ALLREDUCE, REDUCE, BCAST, ALLGATHER, REDUCE_SCATTER_BLOCK or
 * ALLTOALL; count > 0; no vector fields; local_ok is not read). Decides from
 * what every rank of the team knows alike, so that all decide the same:
 * the team's GPU state, which only blocking calls (agreed) change, and the
 * call's kind, count, dtype, op, root and in-place-ness, which MPI makes
 * equal. GPUCOLL_ERR_UNSUPPORTED: every rank stages this call instead.
 * Another error (an earlier kernel of the team gave up, no memory): this
 * rank cannot take part; the peers' kernels will give up on it. After a
 * failed queued call, calls fail so until the next blocking call, which
 * retires the team's GPU path on every rank (GPUCOLL_ERR_UNSUPPORTED from
 * then on: the calls stage).
 * Buffers may be any memory: those the kernels cannot use where they are
 * (host, managed, another GPU) are copied through device memory of the
 * team's GPU at each launch and completion. They must stay valid, and for
 * outputs untouched, until the plan is freed.
 * `persistent`: the plan will be launched many times on the same buffers
 * (MPI_Start). Where the call may run zero-copy, its buffers are then
 * published for the peers to map, and once every rank has mapped every
 * other's (found at launches, never waited for: typically from the third
 * launch on) the plan runs zero-copy, alike on every rank; the mappings are
 * held until the plan is freed. */
gpucoll_status_t gpucoll_plan_create(gpucoll_team_t *team, const gpucoll_coll_args_t *a, int persistent,
                                     gpucoll_plan_t **plan);
/* Queues one run of the plan on a stream of the team's, ordered after the
 * work queued on the legacy default stream before the call, and returns
 * without waiting for it or for any rank. Inputs outside the team's GPU are
 * read here. Every rank launches its plans in the same order relative to
 * its other collectives on the team (MPI's rule). Fails (INVALID) while the
 * plan's previous launch is running. */
gpucoll_status_t gpucoll_plan_launch(gpucoll_plan_t *plan);
/* 1 when the latest launch is over, with *status its result and the
 * outputs in place (copied back where they are outside the team's GPU);
 * 0 while it runs. Never waits for another rank; a kernel that waits on a
 * peer ends early only when that peer is gone (GPUCOLL_ERR_PEER) or past the
 * debugging timeout_ms (GPUCOLL_ERR_TIMEOUT). */
int gpucoll_plan_test(gpucoll_plan_t *plan, gpucoll_status_t *status);
/* Frees the plan, first waiting for a launch still running (it completes,
 * or ends because a peer is gone). */
void gpucoll_plan_free(gpucoll_plan_t *plan);
/* 1 where the plan's team has retired its GPU path since the plan was made
 * (a failed queued call, then a blocking call: every rank alike): the
 * caller frees the plan and runs the call on the staged route, as
 * gpucoll_plan_create now tells it to (GPUCOLL_ERR_UNSUPPORTED). */
int gpucoll_plan_retired(const gpucoll_plan_t *plan);
/* The algorithm the plan runs ("allreduce_ll", ...), for verbose output. */
const char *gpucoll_plan_algorithm(const gpucoll_plan_t *plan);

/* ---- stream-ordered calls (core/team_stream.cpp) ---------------------------
 * Collectives queued on the caller's stream, capturable into CUDA graphs
 * (include/coll_gpu_ext.h states the promises to users). They run on a team
 * of their own, built over the same ranks as the one of ordinary calls and
 * used for nothing else. */

/* Sets a fresh team up for stream-ordered calls on the GPU current in the
 * calling thread: its GPU side and this rank's per-call counters in device
 * memory. Collective over the team's ranks (every rank at the same point),
 * blocking, once: later calls say again what the first one found.
 * GPUCOLL_ERR_UNSUPPORTED, alike on every rank, where some rank cannot (no
 * GPU context, peers not mappable). Must not run while the stream is
 * being captured (it allocates and synchronises). can == 0: this rank
 * stays off the GPU, as in gpucoll_team_prepare (every rank then fails
 * alike). */
gpucoll_status_t gpucoll_stream_setup(gpucoll_team_t *team, int can);
/* Queues `a` (ALLREDUCE, REDUCE, BCAST, ALLGATHER, REDUCE_SCATTER_BLOCK or
 * ALLTOALL, no vector fields; local_ok not read) on `stream` and returns
 * without waiting for the GPU or for another rank. Decides from what every
 * rank knows alike: GPUCOLL_ERR_UNSUPPORTED (no kernel for the type and op,
 * a team not set up) on every rank alike, and nothing was queued. Another
 * error is this rank's own (its buffers are not device memory of the team's
 * GPU or managed memory; an earlier kernel of the team gave up): nothing
 * was queued, and the peers' kernels of this call wait for this rank's
 * (an erroneous program: they end only if it exits, or past the debugging
 * timeout_ms). count == 0 queues nothing (success). */
gpucoll_status_t gpucoll_stream_enqueue(gpucoll_team_t *team, const gpucoll_coll_args_t *a, void *stream);
/* GPUCOLL_SUCCESS, or the error a stream-ordered kernel of the team raised
 * (a peer timeout, the LL flags spent, arguments that differ) or a launch
 * of this rank that failed: then every later call fails too. Never waits. */
gpucoll_status_t gpucoll_stream_status(const gpucoll_team_t *team);
/* The team's stream-ordered calls use `owner`'s registered windows from now
 * on (a call whose buffers lie in them on every rank runs zero-copy, as a
 * queued call does). `owner` must outlive `team`, and every rank must make
 * the same link (the windows are then alike on every rank). */
void gpucoll_stream_use_windows(gpucoll_team_t *team, gpucoll_team_t *owner);
/* Waits until the calls this rank enqueued outside a capture have run (not
 * graphs: their replays are the caller's to have finished): before a
 * window they may use is deregistered. GPUCOLL_ERR_PEER: a peer is gone or
 * they stopped finishing within the debugging timeout. */
gpucoll_status_t gpucoll_stream_drain(gpucoll_team_t *team);
/* Ends the team's stream-ordered kernels at their next wait, those queued
 * too, and fails its later calls: before gpucoll_team_destroy on a team
 * whose peers' kernels may have stopped (their partners here would wait for
 * them). Never waits. */
void gpucoll_stream_stop(gpucoll_team_t *team);
/* 1 while `stream` is being captured into a graph, 0 if not, -1 if it
 * cannot be told. */
int gpucoll_stream_capturing(void *stream);
gpucoll_status_t gpucoll_stream_synchronize(void *stream);
/* dst = src on `stream` (any memory the GPU copies from and to), queued. */
gpucoll_status_t gpucoll_copy_async(void *dst, const void *src, size_t bytes, void *stream);

#ifdef __cplusplus
}
#endif
#endif

/* ==== hierarchical collectives across nodes (core/hier*.cpp) ===============
 * A communicator that spans nodes (real ones, or virtual ones carved out of a
 * host by config.virtual_node_size) and has the same number L of ranks on
 * each of its N nodes gets a "hier" object: a node-local team over the L
 * ranks of this node (the peer-to-peer kernels; none when L == 1) and a UCX
 * group over the N ranks with this rank's local index, one per node. The
 * collectives combine the two (docs/multinode.md). Kept in its own guarded
 * block so that this section can be appended to independently. */
#ifndef GPUCOLL_CORE_HIER_H
#define GPUCOLL_CORE_HIER_H
#ifdef __cplusplus
extern "C" {
#endif

/* Where this rank sits; rank_of[n * local_size + i] is the communicator rank
 * of local index i on node n (nodes ordered by their lowest rank). */
typedef struct gpucoll_hier_layout {
    int nnodes, local_size; /* N x L */
    int node, local_rank;   /* this rank's node and its index there */
} gpucoll_hier_layout_t;

/* Pure logic, no communication. host_of_rank[r]: any key equal exactly for
 * ranks on the same host. virtual_node_size > 0 splits every host's ranks, in
 * rank order, into nodes of that many. Fills *layout and rank_of (`size`
 * entries). GPUCOLL_ERR_UNSUPPORTED, with the reason, when the layout is not
 * uniform (nodes of different sizes, or a host whose rank count is not a
 * multiple of virtual_node_size); nnodes == 1 is a success (the caller then
 * has no use for the hierarchical path). */
gpucoll_status_t gpucoll_hier_plan(const int *host_of_rank, int size, int rank, int virtual_node_size,
                                   gpucoll_hier_layout_t *layout, int *rank_of);

/* Element ranges of an allreduce of `count` elements over L local ranks: the
 * first shard * L elements are reduce-scattered in shards of `shard`; the
 * last `tail` (< L) elements take a small separate path. */
void gpucoll_hier_split(size_t count, int local_size, size_t *shard, size_t *tail);

typedef struct gpucoll_hier gpucoll_hier_t;

/* Local: an object with no groups yet. */
gpucoll_status_t gpucoll_hier_create(const gpucoll_hier_layout_t *layout, const int *rank_of, gpucoll_hier_t **out);
/* Collective over the L ranks of this node (oob->size == L): the node-local
 * team. With L == 1 nothing is built and oob is not called. */
gpucoll_status_t gpucoll_hier_connect_local(gpucoll_hier_t *h, const gpucoll_oob_t *oob);
/* Collective over the N ranks with this local index (oob->size == N): the
 * UCX group (config.ucx_*). GPUCOLL_ERR_UNSUPPORTED when built without UCX. */
gpucoll_status_t gpucoll_hier_connect_cross(gpucoll_hier_t *h, const gpucoll_oob_t *oob);
/* One line for verbose output: layout and the UCX device path
 * (GPUDirect or staged, from gpucoll_ucx_describe). */
size_t gpucoll_hier_describe(const gpucoll_hier_t *h, char *buf, size_t len);
/* Local and never waits on a peer (the UCX group close is bounded; the
 * node-local team leaves its GPU memory to the watcher until its peers have
 * left, core/peer_watch.hpp). NULL is fine. */
void gpucoll_hier_destroy(gpucoll_hier_t *h);

/* Local verdict, no communication: 1 if this rank can run `a` (kinds
 * ALLREDUCE, BCAST, ALLGATHER, REDUCE_SCATTER_BLOCK, REDUCE) on the
 * hierarchical path: device buffers on one GPU (the one used so far), a GPU
 * reduction for the type and op, device temporaries reserved (allocated
 * here, so that no allocation can fail after the ranks agreed), the object
 * neither disabled nor broken. The caller must then agree with every rank of
 * the communicator (all ranks 1, else nobody runs it). */
int gpucoll_hier_local_ok(gpucoll_hier_t *h, const gpucoll_coll_args_t *a);
/* 1 once gpucoll_hier_prepare succeeded. Equal on all ranks while they
 * follow the protocol below. */
int gpucoll_hier_prepared(const gpucoll_hier_t *h);
/* First agreed call only: sets up the GPU side (the team's IPC mappings,
 * through a one-element team collective, a stream). Collective over the node;
 * the caller agrees on the result across nodes and calls
 * gpucoll_hier_disable everywhere if any rank failed. */
gpucoll_status_t gpucoll_hier_prepare(gpucoll_hier_t *h, const gpucoll_coll_args_t *a);
void gpucoll_hier_disable(gpucoll_hier_t *h);
/* Runs an agreed collective. On failure the object is marked broken (its
 * later local_ok is 0) and the error is returned. Peers waiting on this rank
 * in UCX end on an endpoint error if it is gone; while it lives they wait
 * (no bound unless the debugging timeout_ms is set). */
gpucoll_status_t gpucoll_hier_run(gpucoll_hier_t *h, const gpucoll_coll_args_t *a);

#ifdef __cplusplus
}
#endif
#endif /* GPUCOLL_CORE_HIER_H */
