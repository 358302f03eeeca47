/* Status codes shared by every layer of coll/gpu.
 *
 * Plain C so that the Open MPI glue, the C++ core and the tests can all use it.
 * A failing call also records a human-readable reason, retrievable with
 * gpucoll_last_error() (per thread), which the glue prints before turning the
 * status into an MPI error. */
#ifndef GPUCOLL_STATUS_H
#define GPUCOLL_STATUS_H

#ifdef __cplusplus
extern "C" {
#endif

typedef enum gpucoll_status {
    GPUCOLL_SUCCESS = 0,
    GPUCOLL_ERR_UNSUPPORTED = 1, /* not an error: "use another path" */
    GPUCOLL_ERR_INVALID = 2,     /* bad argument */
    GPUCOLL_ERR_NO_MEMORY = 3,
    GPUCOLL_ERR_GPU = 4,         /* a CUDA/HIP call failed */
    GPUCOLL_ERR_TIMEOUT = 5,     /* a peer did not arrive in time */
    GPUCOLL_ERR_PEER = 6,        /* a peer reported a failure */
    GPUCOLL_ERR_TRANSPORT = 7,   /* UCX or shared memory failed */
    GPUCOLL_ERR_INTERNAL = 8,
    GPUCOLL_ERR_TRUNCATE = 9,    /* a peer sends more than this rank's arguments make room for */
    GPUCOLL_ERR_MISMATCH = 10    /* the ranks' arguments for one collective differ */
} gpucoll_status_t;

/* The reason for the last failure on this thread ("" if none). */
const char *gpucoll_last_error(void);

/* Records a reason (printf format) and returns `status` so callers can write
 * `return gpucoll_fail(GPUCOLL_ERR_GPU, "cudaMalloc(%zu): %s", n, msg);` */
gpucoll_status_t gpucoll_fail(gpucoll_status_t status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

const char *gpucoll_status_name(gpucoll_status_t status);

#ifdef __cplusplus
}
#endif
#endif
