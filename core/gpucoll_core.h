/* The C interface of the coll/gpu core, as the Open MPI glue sees it.
 *
 * The core is C++ and CUDA/HIP; the glue is C compiled against Open MPI's
 * headers. Nothing here needs GPU headers. Every call that can fail returns
 * a gpucoll_status_t and leaves a reason in gpucoll_last_error(). */
#ifndef GPUCOLL_CORE_H
#define GPUCOLL_CORE_H

#include <stddef.h>

#include "gpucoll_config.h"
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
/* Where `ptr` lives. Cheap (one driver query), never initialises the GPU:
 * while the application has not initialised it, every pointer is host. */
gpucoll_mem_kind_t gpucoll_mem_kind(const void *ptr);
/* Synchronous copy between any two of host, device and managed memory.
 * Ordered after work queued on the legacy default stream. */
gpucoll_status_t gpucoll_copy(void *dst, const void *src, size_t bytes);
/* Page-locked host memory from a bounded cache (config.staging_cache_bytes).
 * Returns NULL (with a reason) if it cannot be had. */
void *gpucoll_host_alloc(size_t bytes);
void gpucoll_host_free(void *ptr, size_t bytes);

/* ---- node-local peer groups (the IPC fast path) ---------------------------- */
typedef struct gpucoll_team gpucoll_team_t;

/* How the core talks to the other ranks while it builds a team: the glue
 * implements allgather with the collectives it displaced, on host memory. */
typedef struct gpucoll_team_oob {
    int rank, size;
    int (*allgather)(const void *in, void *out, size_t bytes_per_rank, void *ctx);
    void *ctx;
} gpucoll_team_oob_t;

/* Builds the host-side control block shared by the ranks of a communicator
 * whose ranks all run on this node. Collective over `oob`; touches no GPU
 * (the GPU side is set up on first use). Returns GPUCOLL_ERR_UNSUPPORTED
 * when the group cannot have a team (too many ranks, no shared memory). */
gpucoll_status_t gpucoll_team_create(const gpucoll_team_oob_t *oob, gpucoll_team_t **team);
void gpucoll_team_destroy(gpucoll_team_t *team);

typedef enum gpucoll_coll_kind {
    GPUCOLL_COLL_ALLREDUCE = 0,
    GPUCOLL_COLL_REDUCE,
    GPUCOLL_COLL_BCAST,
    GPUCOLL_COLL_ALLGATHER,
    GPUCOLL_COLL_REDUCE_SCATTER_BLOCK,
    GPUCOLL_COLL_ALLTOALL,
    GPUCOLL_COLL_KIND_COUNT
} gpucoll_coll_kind_t;

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
} gpucoll_coll_args_t;

/* Runs one collective over peer memory, or agrees with the peers not to.
 *
 * Every rank of the team must call this for the same collectives in the same
 * order (as MPI requires). A rank whose buffers cannot take the peer path
 * passes local_ok = 0: it posts that and returns GPUCOLL_ERR_UNSUPPORTED
 * at once, without waiting. A rank with local_ok = 1 waits (bounded by
 * config.timeout_ms) for every peer's post; if all can, the collective runs
 * and the result is in rbuf on return, else GPUCOLL_ERR_UNSUPPORTED tells the
 * caller to take the staged path, as every other rank then does too. */
gpucoll_status_t gpucoll_team_run(gpucoll_team_t *team, const gpucoll_coll_args_t *args);

#ifdef __cplusplus
}
#endif
#endif
