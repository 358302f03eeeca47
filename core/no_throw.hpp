// The C boundary of the core.
#pragma once

#include <exception>
#include <new>

#include "gpucoll_status.h"

namespace gpucoll {

// The C glue cannot unwind C++ exceptions. Each extern "C" entry point whose
// body can throw (std::bad_alloc from a container) runs it through here and
// returns the exception as a status instead.
template <class F> gpucoll_status_t no_throw(F body) noexcept
{
    try {
        return body();
    } catch (const std::bad_alloc &) {
        return gpucoll_fail(GPUCOLL_ERR_NO_MEMORY, "out of host memory");
    } catch (const std::exception &e) {
        return gpucoll_fail(GPUCOLL_ERR_INTERNAL, "unexpected exception: %s", e.what());
    } catch (...) {
        return gpucoll_fail(GPUCOLL_ERR_INTERNAL, "unexpected exception");
    }
}

} // namespace gpucoll
