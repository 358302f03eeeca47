#include "ucx_error.h"

#include <cstdarg>
#include <cstdio>

namespace gpucoll_ucx {

gpucoll_status_t status_from_ucs(ucs_status_t status)
{
    switch (status) {
    case UCS_OK: return GPUCOLL_SUCCESS;
    case UCS_ERR_NO_MEMORY: return GPUCOLL_ERR_NO_MEMORY;
    case UCS_ERR_MESSAGE_TRUNCATED: return GPUCOLL_ERR_INVALID;
    case UCS_ERR_UNSUPPORTED: return GPUCOLL_ERR_UNSUPPORTED;
    case UCS_ERR_TIMED_OUT: return GPUCOLL_ERR_TIMEOUT;
    case UCS_ERR_UNREACHABLE:
    case UCS_ERR_CONNECTION_RESET:
    case UCS_ERR_ENDPOINT_TIMEOUT:
    case UCS_ERR_REJECTED:
    case UCS_ERR_NOT_CONNECTED: return GPUCOLL_ERR_PEER;
    default: return GPUCOLL_ERR_TRANSPORT;
    }
}

gpucoll_status_t ucx_fail(ucs_status_t status, const char *fmt, ...)
{
    char context[384];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(context, sizeof context, fmt, ap);
    va_end(ap);
    return gpucoll_fail(status_from_ucs(status), "%s: %s", context, ucs_status_string(status));
}

} // namespace gpucoll_ucx
