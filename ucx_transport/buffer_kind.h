/* Where a buffer lives, and so how the transport moves and reduces it. */
#ifndef GPUCOLL_UCX_BUFFER_KIND_H
#define GPUCOLL_UCX_BUFFER_KIND_H

#include "gpu_port.h"

namespace gpucoll_ucx {

struct BufferKind {
    /* Really GPU memory (device or managed): copies need the GPU runtime. */
    bool gpu = false;
    bool managed = false;
    /* Treated as device memory: GPU memory, or any host memory under the
     * stage_host_buffers test hook. Such buffers take the device path
     * (direct or staged) and are reduced by the caller's reducer. */
    bool device_like = false;
    gpu_port_ptr_info_t info = {};
};

/* Never initialises the GPU driver (see gpu_port_query_pointer). */
inline BufferKind classify_buffer(const void *ptr, bool stage_host_buffers)
{
    BufferKind k;
    gpu_port_query_pointer(ptr, &k.info);
    k.gpu = k.info.kind != GPU_PORT_MEM_HOST;
    k.managed = k.info.kind == GPU_PORT_MEM_MANAGED;
    k.device_like = k.gpu || stage_host_buffers;
    return k;
}

} // namespace gpucoll_ucx
#endif
