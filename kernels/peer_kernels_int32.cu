#include "peer_kernels.cuh"

namespace gpucoll {

// INT32 or UINT32 (peer_kernels.cu dispatches by width).
KernelPair reduce_kernel_int32(gpucoll_dtype_t dtype, gpucoll_op_t op)
{
    return width_kernel<int32_t, uint32_t>(dtype == GPUCOLL_INT32, op);
}

} // namespace gpucoll
