#include "gpucoll_status.h"

#include <stdarg.h>
#include <stdio.h>

static _Thread_local char last_error[512];

const char *gpucoll_last_error(void) { return last_error; }

gpucoll_status_t gpucoll_fail(gpucoll_status_t status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    return status;
}

const char *gpucoll_status_name(gpucoll_status_t status)
{
    switch (status) {
    case GPUCOLL_SUCCESS: return "success";
    case GPUCOLL_ERR_UNSUPPORTED: return "unsupported";
    case GPUCOLL_ERR_INVALID: return "invalid argument";
    case GPUCOLL_ERR_NO_MEMORY: return "out of memory";
    case GPUCOLL_ERR_GPU: return "GPU error";
    case GPUCOLL_ERR_TIMEOUT: return "timeout";
    case GPUCOLL_ERR_PEER: return "peer failure";
    case GPUCOLL_ERR_TRANSPORT: return "transport error";
    case GPUCOLL_ERR_INTERNAL: return "internal error";
    case GPUCOLL_ERR_TRUNCATE: return "message truncated";
    case GPUCOLL_ERR_MISMATCH: return "arguments differ between ranks";
    }
    return "unknown";
}
