#include "peer_kernels.cuh"

namespace gpucoll {

// INT64 or UINT64 (peer_kernels.cu dispatches by width).
KernelPair reduce_kernel_int64(gpucoll_dtype_t dtype, gpucoll_op_t op)
{
    return width_kernel<int64_t, uint64_t>(dtype == GPUCOLL_INT64, op);
}

} // namespace gpucoll
