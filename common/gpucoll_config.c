#include "gpucoll_config.h"

void gpucoll_config_fill_defaults(gpucoll_config_t *c)
{
    if (!c->oneshot_max_bytes) c->oneshot_max_bytes = GPUCOLL_DEFAULT_ONESHOT_MAX_BYTES;
    if (!c->scratch_bytes) c->scratch_bytes = GPUCOLL_DEFAULT_SCRATCH_BYTES;
    if (!c->staging_cache_bytes) c->staging_cache_bytes = GPUCOLL_DEFAULT_STAGING_CACHE_BYTES;
    if (c->max_peers <= 0) c->max_peers = GPUCOLL_DEFAULT_MAX_PEERS;
    if (c->max_blocks <= 0) c->max_blocks = GPUCOLL_DEFAULT_MAX_BLOCKS;
    if (c->busy_max_blocks < 0 || c->busy_max_blocks >= c->max_blocks) c->busy_max_blocks = 0;
    if (c->thread_calls <= 0) c->thread_calls = GPUCOLL_DEFAULT_THREAD_CALLS;
    if (c->kernels_at_once <= 0) c->kernels_at_once = GPUCOLL_DEFAULT_KERNELS_AT_ONCE;
    if (c->threads_per_block <= 0) c->threads_per_block = GPUCOLL_DEFAULT_THREADS;
    /* Whole warps, at least one thread per peer (the barrier posts one flag per
     * thread), at most what the kernels are compiled to launch with. */
    if (c->threads_per_block < 32) c->threads_per_block = 32;
    if (c->threads_per_block > GPUCOLL_MAX_THREADS_PER_BLOCK) c->threads_per_block = GPUCOLL_MAX_THREADS_PER_BLOCK;
    c->threads_per_block -= c->threads_per_block % 32;
    if (c->timeout_ms < 0) c->timeout_ms = GPUCOLL_DEFAULT_TIMEOUT_MS; /* 0: no bound, the default */
    if (!c->direct_min_bytes) c->direct_min_bytes = GPUCOLL_DEFAULT_DIRECT_MIN_BYTES;
    if (!c->window_move_min_bytes) c->window_move_min_bytes = GPUCOLL_DEFAULT_WINDOW_MOVE_MIN_BYTES;
    if (c->ipc_cache_entries <= 0) c->ipc_cache_entries = GPUCOLL_DEFAULT_IPC_CACHE_ENTRIES;
    if (!c->ipc_cache_bytes) c->ipc_cache_bytes = GPUCOLL_DEFAULT_IPC_CACHE_BYTES;
    if (c->resident_us < 0) c->resident_us = 0;
    if (!c->resident_max_bytes) c->resident_max_bytes = GPUCOLL_DEFAULT_RESIDENT_MAX_BYTES;
    if (c->resident_blocks <= 0) c->resident_blocks = GPUCOLL_DEFAULT_RESIDENT_BLOCKS;
    if (c->ll_max_bytes > GPUCOLL_LL_MAX_BYTES_CAP) c->ll_max_bytes = GPUCOLL_LL_MAX_BYTES_CAP;
}
