/* Registered windows (include/coll_gpu_ext.h, coll_gpu_register): the
 * functions the header finds by name. Both are collective over the
 * communicator; the core's windows (core/windows.cpp) do the exchange in
 * the team's shared memory, and succeed or fail alike on every rank. */
#include "coll_gpu.h"

#define COLL_GPU_EXPORT __attribute__((visibility("default")))

COLL_GPU_EXPORT int coll_gpu_impl_register(MPI_Comm comm, void *buf, size_t bytes, int *window);
COLL_GPU_EXPORT int coll_gpu_impl_register(MPI_Comm comm, void *buf, size_t bytes, int *window)
{
    if (window == NULL) return MPI_ERR_ARG;
    *window = -1;
    if (comm == NULL || comm == MPI_COMM_NULL) return MPI_ERR_COMM;
    mca_coll_gpu_module_t *m = coll_gpu_module_of(comm);
    if (m == NULL) return MPI_ERR_UNSUPPORTED_OPERATION; /* not ours (or an intercommunicator): alike everywhere */
    /* The GPU path set up as MPI_Barrier sets it up, where every rank's
     * thread has a GPU context (the buffer's allocation made one). */
    int rc = comm->c_coll->coll_barrier(comm, comm->c_coll->coll_barrier_module);
    if (rc != MPI_SUCCESS) return rc;
    if (m->team == NULL) return MPI_ERR_UNSUPPORTED_OPERATION; /* ranks on several nodes, or no peer path */
    gpucoll_status_t st = gpucoll_team_window_register(m->team, buf, bytes, window);
    if (st == GPUCOLL_SUCCESS) {
        /* Stream-ordered calls too (alike: every rank has the stream team or none). */
        if (m->stream_team) gpucoll_stream_use_windows(m->stream_team, m->team);
        COLL_GPU_VERBOSE(10, "%s: window %d registered (%zu bytes)", comm->c_name, *window, bytes);
    }
    return st == GPUCOLL_ERR_UNSUPPORTED ? MPI_ERR_UNSUPPORTED_OPERATION
                                         : coll_gpu_mpi_class(st, "registering a window");
}

COLL_GPU_EXPORT int coll_gpu_impl_deregister(MPI_Comm comm, int window);
COLL_GPU_EXPORT int coll_gpu_impl_deregister(MPI_Comm comm, int window)
{
    if (comm == NULL || comm == MPI_COMM_NULL) return MPI_ERR_COMM;
    mca_coll_gpu_module_t *m = coll_gpu_module_of(comm);
    if (m == NULL || m->team == NULL) return MPI_ERR_ARG; /* nothing was registered on it */
    /* This rank's enqueued calls may use the window: they run first. Were a
     * peer gone, the deregistration below ends with it; it is collective,
     * so it is made whatever the drain says. */
    if (m->stream_team && gpucoll_stream_drain(m->stream_team) != GPUCOLL_SUCCESS)
        COLL_GPU_VERBOSE(1, "%s: deregistering window %d: %s", comm->c_name, window, gpucoll_last_error());
    return coll_gpu_mpi_class(gpucoll_team_window_deregister(m->team, window), "deregistering a window");
}
