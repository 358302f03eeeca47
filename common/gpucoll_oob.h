/* How the parts of coll/gpu reach the other ranks before (or besides) any
 * connection of their own: the node-local team's set-up (core) and the UCX
 * transport's address exchange both use this. The glue implements it with
 * the collectives it displaced, on host memory. */
#ifndef GPUCOLL_OOB_H
#define GPUCOLL_OOB_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* `allgather` promises:
 *  - it is collective over all `size` ranks and blocks until done; every rank
 *    calls it the same number of times, in the same order, with the same
 *    `bytes_per_rank`;
 *  - `in` holds this rank's `bytes_per_rank` bytes; on success `out` holds
 *    size * bytes_per_rank bytes, rank i's contribution at i * bytes_per_rank;
 *  - it returns 0 on success and nonzero on failure;
 *  - it never calls back into coll/gpu.
 * `ctx` is passed through untouched. */
typedef struct gpucoll_oob {
    int rank, size;
    int (*allgather)(const void *in, void *out, size_t bytes_per_rank, void *ctx);
    void *ctx;
    /* May be NULL. Drives the MPI library's progress: a team calls it while
     * it waits for its peers, since a peer may be waiting, in another thread
     * or before it reaches the collective, for a message of ours that only
     * moves when this process progresses. */
    void (*progress)(void);
    /* Teams only: the most ranks of the caller's communicator that share one
     * GPU, where they may run peer kernels at the same time in several teams
     * (the node-local teams of virtual nodes over one GPU); 0: count this
     * team's ranks only. Equal on every rank. Grids are cut so that all of
     * them fit on the GPU together (core/algo_select.hpp: co_resident_blocks). */
    int gpu_ranks;
} gpucoll_oob_t;

#ifdef __cplusplus
}
#endif

#endif
