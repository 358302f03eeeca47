#include "peer_kernels.cuh"

namespace gpucoll {

// INT8 or UINT8 (peer_kernels.cu dispatches by width).
KernelPair reduce_kernel_int8(gpucoll_dtype_t dtype, gpucoll_op_t op)
{
    return width_kernel<int8_t, uint8_t>(dtype == GPUCOLL_INT8, op);
}

} // namespace gpucoll
