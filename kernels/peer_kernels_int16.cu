#include "peer_kernels.cuh"

namespace gpucoll {

KernelPair reduce_kernel_int16(gpucoll_dtype_t dtype, gpucoll_op_t op)
{
    switch (dtype) {
    case GPUCOLL_INT16: return integer_kernel<int16_t, uint16_t>(op);
    case GPUCOLL_UINT16: return integer_kernel<uint16_t, uint16_t>(op);
    default: return {};
    }
}

} // namespace gpucoll
