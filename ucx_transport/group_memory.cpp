/* Group: memory helpers of the schedules (local copies, scratch, reduction). */
#include "ucx_group.h"

#include <cstring>

#include "staging_copier.h"
#include "ucx_worker.h"
#include "wait_policy.h"

namespace gpucoll_ucx {

gpucoll_status_t Group::local_copy(void *dst, const void *src, size_t bytes)
{
    if (bytes == 0 || dst == src) return GPUCOLL_SUCCESS;
    if (!classify_buffer(dst, false).gpu && !classify_buffer(src, false).gpu) {
        memmove(dst, src, bytes);
        return GPUCOLL_SUCCESS;
    }
    WorkerLock lock(worker_->mutex());
    return worker_->gpu_copier().copy_now(dst, src, bytes);
}

gpucoll_status_t Group::scratch(const BufferKind &like, size_t bytes, char **out)
{
    WorkerLock lock(worker_->mutex());
    Scratch &s = like.gpu ? gpu_scratch_ : host_scratch_;
    if (s.bytes < bytes) {
        if (s.ptr) s.owner->free_scratch(s.ptr);
        s = Scratch{};
        StagingCopier &owner = like.gpu ? worker_->gpu_copier() : worker_->host_copier();
        void *p = nullptr;
        gpucoll_status_t st = owner.alloc_scratch(bytes, &p);
        if (st != GPUCOLL_SUCCESS) return st;
        s = Scratch{p, bytes, &owner};
    }
    *out = static_cast<char *>(s.ptr);
    return GPUCOLL_SUCCESS;
}

gpucoll_status_t Group::reduce(const BufferKind &kind, const gpucoll_ucx_reducer_t *reducer, void *inout,
                               const void *in, size_t count, gpucoll_dtype_t dtype, gpucoll_op_t op)
{
    if (count == 0) return GPUCOLL_SUCCESS;
    if (kind.device_like && reducer && reducer->fn) return reducer->fn(inout, in, count, dtype, op, reducer->ctx);
    if (!kind.gpu) return gpucoll_ucx_host_reduce(inout, in, count, dtype, op, nullptr);
    return gpucoll_fail(GPUCOLL_ERR_UNSUPPORTED, "ucx: reducing %s %s on device memory needs a reducer callback",
                        gpucoll_dtype_name(dtype), gpucoll_op_name(op));
}

} // namespace gpucoll_ucx
