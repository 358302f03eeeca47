#include "peer_kernels.cuh"

namespace gpucoll {

KernelPair reduce_kernel_int64(gpucoll_dtype_t dtype, gpucoll_op_t op)
{
    switch (dtype) {
    case GPUCOLL_INT64: return integer_kernel<int64_t, uint64_t>(op);
    case GPUCOLL_UINT64: return integer_kernel<uint64_t, uint64_t>(op);
    default: return {};
    }
}

} // namespace gpucoll
