#include "peer_kernels.cuh"

namespace gpucoll {

KernelPair reduce_kernel_small_int(gpucoll_dtype_t dtype, gpucoll_op_t op)
{
    switch (dtype) {
    case GPUCOLL_INT8: return integer_kernel<int8_t, uint8_t>(op);
    case GPUCOLL_UINT8: return integer_kernel<uint8_t, uint8_t>(op);
    case GPUCOLL_INT16: return integer_kernel<int16_t, uint16_t>(op);
    case GPUCOLL_UINT16: return integer_kernel<uint16_t, uint16_t>(op);
    default: return {};
    }
}

} // namespace gpucoll
