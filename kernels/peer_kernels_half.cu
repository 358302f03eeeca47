#include "peer_kernels.cuh"

namespace gpucoll {

KernelPair reduce_kernel_half(gpucoll_dtype_t dtype, gpucoll_op_t op)
{
    switch (dtype) {
    case GPUCOLL_FLOAT16: return float_kernel<half_t>(op);
    case GPUCOLL_BFLOAT16: return float_kernel<bf16_t>(op);
    default: return {};
    }
}

} // namespace gpucoll
