/* Turning UCX status codes into gpucoll statuses with readable reasons. */
#ifndef GPUCOLL_UCX_ERROR_H
#define GPUCOLL_UCX_ERROR_H

#include <ucs/type/status.h>

#include "gpucoll_status.h"

namespace gpucoll_ucx {

/* The gpucoll status that best describes a UCX failure: a vanished or
 * unreachable peer is GPUCOLL_ERR_PEER, a size mismatch GPUCOLL_ERR_INVALID,
 * everything else GPUCOLL_ERR_TRANSPORT. */
gpucoll_status_t status_from_ucs(ucs_status_t status);

/* Records "<formatted context>: <ucs_status_string(status)>" as the last
 * error and returns status_from_ucs(status). */
gpucoll_status_t ucx_fail(ucs_status_t status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

} // namespace gpucoll_ucx
#endif
