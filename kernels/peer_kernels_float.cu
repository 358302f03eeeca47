#include "peer_kernels.cuh"

namespace gpucoll {

KernelPair reduce_kernel_float(gpucoll_dtype_t dtype, gpucoll_op_t op)
{
    switch (dtype) {
    case GPUCOLL_FLOAT32: return float_kernel<float>(op);
    case GPUCOLL_FLOAT64: return float_kernel<double>(op);
    default: return {};
    }
}

} // namespace gpucoll
