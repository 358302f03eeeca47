/* coll/gpu across nodes: a UCX transport and the inter-node collective
 * schedules built on it.
 *
 * Layering: this library sits beside kernels/ and topo/ and uses only
 * common/. It knows nothing of Open MPI: the caller hands it an out-of-band
 * allgather (gpucoll_oob_t) to exchange UCX worker addresses, and a reduction
 * callback for device memory (the core passes one that reduces on the GPU).
 *
 * Threading: one UCP context and worker per process, shared by all groups
 * and created on first use. A group must be used by one thread at a time.
 * With thread_multi = 0 (the default) all groups must be used from one
 * thread at a time as well; set thread_multi for concurrent groups.
 *
 * Errors: every function returns a gpucoll_status_t; on failure the reason
 * (naming the peer and carrying UCX's ucs_status_string text where there is
 * one) is in gpucoll_last_error(). After any failure other than
 * GPUCOLL_ERR_INVALID / GPUCOLL_ERR_UNSUPPORTED the group should be
 * destroyed: peers may be left mid-collective. When an operation returns,
 * its buffers are no longer referenced by the transport, even on failure.
 *
 * See docs/ucx_transport.md for the design. */
#ifndef GPUCOLL_UCX_H
#define GPUCOLL_UCX_H

#include <stddef.h>
#include <stdint.h>

#include "gpucoll_config.h"
#include "gpucoll_status.h"
#include "gpucoll_oob.h"
#include "gpucoll_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- out-of-band exchange ------------------------------------------------ */

/* How the transport reaches the other ranks before it has any connection:
 * gpucoll_oob_t (common/gpucoll_oob.h; `progress` and `gpu_ranks` are not
 * read here). The transport calls `allgather` only from inside
 * gpucoll_ucx_group_create (never from a collective, progress or destroy),
 * so the channel only has to live as long as that call; a failure makes the
 * group's creation fail with GPUCOLL_ERR_TRANSPORT. */

/* ---- configuration ------------------------------------------------------- */

/* How device buffers travel. */
typedef enum gpucoll_ucx_device_path {
    GPUCOLL_UCX_DEVICE_PATH_AUTO = 0,   /* direct if UCX handles GPU memory, else staged */
    GPUCOLL_UCX_DEVICE_PATH_DIRECT = 1, /* require GPUDirect (UCX with CUDA/ROCm memory) */
    GPUCOLL_UCX_DEVICE_PATH_STAGED = 2  /* always through pinned host bounce buffers */
} gpucoll_ucx_device_path_t;

#define GPUCOLL_UCX_DEFAULT_CHUNK_BYTES (1024u * 1024u)
/* Where device buffers go to UCX as they are (direct), a chunk pays a
 * rendezvous and a kernel launch of its own and no bounce buffer: larger
 * chunks. One H100, 2 ranks as 2 virtual nodes, UCX 1.13.1 with cuda_ipc,
 * 32 MiB: allreduce 1415 / 434 / 277 us, allgather 545 / 173 / 106 us with
 * chunks of 1 / 4 / 16 MiB (docs/multinode.md). */
#define GPUCOLL_UCX_DEFAULT_DIRECT_CHUNK_BYTES (16u * 1024u * 1024u)
#define GPUCOLL_UCX_DEFAULT_PIPELINE_DEPTH 4
#define GPUCOLL_UCX_DEFAULT_RCACHE_ENTRIES 256
#define GPUCOLL_UCX_MIN_CHUNK_BYTES 64u

typedef struct gpucoll_ucx_config {
    /* Bound of every wait, in ms: an operation that makes no progress for
     * this long fails with GPUCOLL_ERR_TIMEOUT. Zero: GPUCOLL_DEFAULT_TIMEOUT_MS. */
    int timeout_ms;
    /* Unit of pipelining: messages travel as chunks of this many bytes, the
     * schedules reduce in segments of this size and bounce buffers have this
     * size. Rounded down to a multiple of 8 (the largest element), at least
     * GPUCOLL_UCX_MIN_CHUNK_BYTES. Must be equal on all ranks of a group
     * (checked at creation). Zero: GPUCOLL_UCX_DEFAULT_DIRECT_CHUNK_BYTES
     * where device buffers go direct, else GPUCOLL_UCX_DEFAULT_CHUNK_BYTES. */
    size_t chunk_bytes;
    /* Chunks in flight per message (and reduction segments per step); at
     * least 2 so that copy and network overlap. Zero: the default (4). */
    int pipeline_depth;
    gpucoll_ucx_device_path_t device_path;
    /* Bound of the memory-registration cache (entries). Zero: default. */
    size_t rcache_max_entries;
    /* Test hook: treat host buffers like device buffers — stage them through
     * bounce buffers, copying with memcpy — so CI exercises the staged
     * pipeline without a GPU. Never set in production. */
    int stage_host_buffers;
    /* Create the UCP worker with UCS_THREAD_MODE_MULTI (taken from the first
     * group created in the process; later groups must not ask for more). */
    int thread_multi;
    /* The network devices UCX may use, as UCX_NET_DEVICES takes them
     * ("mlx5_0:1,mlx5_0:2"), e.g. the NIC nearest the rank's GPU. Applied
     * to the process's UCP context (taken from the first group created) only
     * where UCX's own configuration (the user's UCX_NET_DEVICES) leaves the
     * choice at its default, "all". NULL or "": UCX's choice. Read during
     * gpucoll_ucx_group_create only. */
    const char *net_devices;
} gpucoll_ucx_config_t;

/* Defaults, taking timeout_ms from `common` when it is not NULL. */
void gpucoll_ucx_config_init(gpucoll_ucx_config_t *cfg, const gpucoll_config_t *common);

/* ---- groups -------------------------------------------------------------- */

typedef struct gpucoll_ucx_group gpucoll_ucx_group_t;

/* Collective over oob->size ranks: creates (or reuses) the process's UCP
 * worker, exchanges worker addresses with two oob->allgather calls and checks
 * that every rank uses the same chunk size. Endpoints are created lazily, on
 * the first send to a peer. */
gpucoll_status_t gpucoll_ucx_group_create(const gpucoll_ucx_config_t *cfg, const gpucoll_oob_t *oob,
                                          gpucoll_ucx_group_t **group);

/* Local (not collective) and never waits on a peer: aborts what is still
 * pending, gives UCX a short bounded flush (100 ms) and force-closes the
 * endpoints; releases the worker when the last group goes. Call it when the
 * peers are done with this group (e.g. after a barrier): a peer still
 * waiting on us sees an endpoint error or its timeout. NULL is accepted. */
gpucoll_status_t gpucoll_ucx_group_destroy(gpucoll_ucx_group_t *group);

int gpucoll_ucx_group_rank(const gpucoll_ucx_group_t *group);
int gpucoll_ucx_group_size(const gpucoll_ucx_group_t *group);

/* Which path device buffers take in this group (never AUTO). */
gpucoll_ucx_device_path_t gpucoll_ucx_device_path(const gpucoll_ucx_group_t *group);
const char *gpucoll_ucx_device_path_name(gpucoll_ucx_device_path_t path);
/* The group's pipelining unit (chunk_bytes after defaults and rounding). */
size_t gpucoll_ucx_chunk_bytes(const gpucoll_ucx_group_t *group);

/* One line for verbose output, e.g. "UCX 1.13.1, device buffers staged
 * through pinned host memory (UCX lacks CUDA memory support), chunk 1048576 B
 * x 4 in flight, timeout 60000 ms". Returns the length it wanted to write. */
size_t gpucoll_ucx_describe(const gpucoll_ucx_group_t *group, char *buf, size_t len);
/* The UCX transports (transport/device, comma-separated, e.g.
 * "cuda_ipc/cuda,posix/memory") of the endpoints this rank has opened to its
 * peers so far (endpoints open at the first transfer to a peer), as UCX
 * reports them; empty before any transfer. Returns the length it wanted. */
size_t gpucoll_ucx_transports(const gpucoll_ucx_group_t *group, char *buf, size_t len);

typedef struct gpucoll_ucx_stats {
    uint64_t bytes_sent, bytes_received;
    uint64_t direct_chunks_sent, direct_chunks_received; /* straight from/into the buffer */
    uint64_t staged_chunks_sent, staged_chunks_received; /* through bounce buffers */
    uint64_t rcache_hits, rcache_misses, rcache_evictions; /* process-wide */
} gpucoll_ucx_stats_t;
void gpucoll_ucx_get_stats(const gpucoll_ucx_group_t *group, gpucoll_ucx_stats_t *stats);

/* ---- tagged point-to-point ----------------------------------------------- */

/* A message is matched by (group, source rank, seq, step). Collectives of
 * this library use their own tag space, so user seq/step values never mix
 * with them. seq is taken modulo 2^17 and step modulo 2^16: messages with
 * equal tags between two ranks are matched in the order they were sent. */
typedef struct gpucoll_ucx_request gpucoll_ucx_request_t;

/* Start a transfer; `buf` may be host or device memory (device memory must
 * be ready: any kernel writing it must have completed). The buffer must stay
 * valid until the request completes. Sizes must match on both sides. */
gpucoll_status_t gpucoll_ucx_isend(gpucoll_ucx_group_t *group, int peer, const void *buf, size_t bytes,
                                   uint32_t seq, uint32_t step, gpucoll_ucx_request_t **req);
gpucoll_status_t gpucoll_ucx_irecv(gpucoll_ucx_group_t *group, int peer, void *buf, size_t bytes,
                                   uint32_t seq, uint32_t step, gpucoll_ucx_request_t **req);
/* Drives the worker and the group's transfers once; returns nonzero if
 * anything moved. */
int gpucoll_ucx_progress(gpucoll_ucx_group_t *group);
/* Nonblocking completion check: *done = 1 once finished (then *req is freed
 * and set to NULL). A failed request is freed as well and its error returned. */
gpucoll_status_t gpucoll_ucx_test(gpucoll_ucx_group_t *group, gpucoll_ucx_request_t **req, int *done);
/* Waits, bounded by the timeout (a request that makes no progress for
 * timeout_ms fails with GPUCOLL_ERR_TIMEOUT); frees the request(s) and sets
 * the handle(s) to NULL in every case. NULL handles are skipped. */
gpucoll_status_t gpucoll_ucx_wait(gpucoll_ucx_group_t *group, gpucoll_ucx_request_t **req);
gpucoll_status_t gpucoll_ucx_waitall(gpucoll_ucx_group_t *group, gpucoll_ucx_request_t **reqs, size_t n);
/* Blocking helpers: isend/irecv + wait. */
gpucoll_status_t gpucoll_ucx_send(gpucoll_ucx_group_t *group, int peer, const void *buf, size_t bytes,
                                  uint32_t seq, uint32_t step);
gpucoll_status_t gpucoll_ucx_recv(gpucoll_ucx_group_t *group, int peer, void *buf, size_t bytes,
                                  uint32_t seq, uint32_t step);

/* ---- reductions ----------------------------------------------------------- */

/* inout[i] = inout[i] (op) in[i] for i < count. Both buffers are in the same
 * memory (device memory for device collectives); they do not overlap. The
 * result must be complete when the callback returns (a GPU reducer
 * synchronises its stream). Returns GPUCOLL_SUCCESS or an error status. */
typedef gpucoll_status_t (*gpucoll_ucx_reduce_fn)(void *inout, const void *in, size_t count,
                                                  gpucoll_dtype_t dtype, gpucoll_op_t op, void *ctx);

/* Used for memory the transport treats as device memory (device buffers,
 * and host buffers under stage_host_buffers). Plain host buffers always use
 * gpucoll_ucx_host_reduce. A NULL reducer with device buffers gives
 * GPUCOLL_ERR_UNSUPPORTED. */
typedef struct gpucoll_ucx_reducer {
    gpucoll_ucx_reduce_fn fn;
    void *ctx;
} gpucoll_ucx_reducer_t;

/* The host reduction for every valid pair of common/gpucoll_types.h:
 * integers wrap around, FLOAT16/BFLOAT16 compute in float and round to
 * nearest even. Signature-compatible with gpucoll_ucx_reduce_fn (ctx unused). */
gpucoll_status_t gpucoll_ucx_host_reduce(void *inout, const void *in, size_t count, gpucoll_dtype_t dtype,
                                         gpucoll_op_t op, void *ctx);

/* ---- inter-node collectives ----------------------------------------------- */

/* Like MPI_IN_PLACE: the input is taken from the receive buffer. */
#define GPUCOLL_UCX_IN_PLACE ((const void *)1)

/* All ranks call each collective in the same order with the same count,
 * dtype, op and root. Counts may be anything, including 0 and < size.
 * sendbuf == recvbuf counts as in place where MPI allows in-place. */

/* Ring: reduce-scatter then allgather, in segments of chunk_bytes. */
gpucoll_status_t gpucoll_ucx_allreduce(gpucoll_ucx_group_t *group, const void *sendbuf, void *recvbuf,
                                       size_t count, gpucoll_dtype_t dtype, gpucoll_op_t op,
                                       const gpucoll_ucx_reducer_t *reducer);
/* Ring. recvbuf holds size * count elements, rank i's at i * count.
 * In place: own contribution already at recvbuf + rank * count. */
gpucoll_status_t gpucoll_ucx_allgather(gpucoll_ucx_group_t *group, const void *sendbuf, void *recvbuf,
                                       size_t count, gpucoll_dtype_t dtype);
/* Binomial tree up to one chunk, pipelined chain beyond. */
gpucoll_status_t gpucoll_ucx_bcast(gpucoll_ucx_group_t *group, void *buf, size_t count, gpucoll_dtype_t dtype,
                                   int root);
/* MPI_Reduce_scatter_block, ring: sendbuf holds size * recvcount elements;
 * rank i receives the reduced block i. In place: the input is in recvbuf
 * and the result is written to its start. */
gpucoll_status_t gpucoll_ucx_reduce_scatter(gpucoll_ucx_group_t *group, const void *sendbuf, void *recvbuf,
                                            size_t recvcount, gpucoll_dtype_t dtype, gpucoll_op_t op,
                                            const gpucoll_ucx_reducer_t *reducer);
/* Binomial tree up to one chunk, pipelined chain beyond. recvbuf is only
 * used at the root (may be NULL elsewhere); in place only at the root. */
gpucoll_status_t gpucoll_ucx_reduce(gpucoll_ucx_group_t *group, const void *sendbuf, void *recvbuf,
                                    size_t count, gpucoll_dtype_t dtype, gpucoll_op_t op, int root,
                                    const gpucoll_ucx_reducer_t *reducer);

#ifdef __cplusplus
}
#endif
#endif
