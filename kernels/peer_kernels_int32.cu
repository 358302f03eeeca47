#include "peer_kernels.cuh"

namespace gpucoll {

KernelPair reduce_kernel_int32(gpucoll_dtype_t dtype, gpucoll_op_t op)
{
    switch (dtype) {
    case GPUCOLL_INT32: return integer_kernel<int32_t, uint32_t>(op);
    case GPUCOLL_UINT32: return integer_kernel<uint32_t, uint32_t>(op);
    default: return {};
    }
}

} // namespace gpucoll
