#include "peer_kernels.cuh"

namespace gpucoll {

KernelPair reduce_kernel_int8(gpucoll_dtype_t dtype, gpucoll_op_t op)
{
    switch (dtype) {
    case GPUCOLL_INT8: return integer_kernel<int8_t, uint8_t>(op);
    case GPUCOLL_UINT8: return integer_kernel<uint8_t, uint8_t>(op);
    default: return {};
    }
}

} // namespace gpucoll
