#include "peer_kernels.cuh"

namespace gpucoll {

// INT16 or UINT16 (peer_kernels.cu dispatches by width).
KernelPair reduce_kernel_int16(gpucoll_dtype_t dtype, gpucoll_op_t op)
{
    return width_kernel<int16_t, uint16_t>(dtype == GPUCOLL_INT16, op);
}

} // namespace gpucoll
