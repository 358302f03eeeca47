#include "peer_kernels.cuh"

namespace gpucoll {

KernelPair reduce_kernel_large_int(gpucoll_dtype_t dtype, gpucoll_op_t op)
{
    switch (dtype) {
    case GPUCOLL_INT32: return integer_kernel<int32_t, uint32_t>(op);
    case GPUCOLL_UINT32: return integer_kernel<uint32_t, uint32_t>(op);
    case GPUCOLL_INT64: return integer_kernel<int64_t, uint64_t>(op);
    case GPUCOLL_UINT64: return integer_kernel<uint64_t, uint64_t>(op);
    default: return {};
    }
}

} // namespace gpucoll
