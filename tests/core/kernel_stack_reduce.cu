// The largest reduce kernels, for kernel_stack_check.sh: the resident kernels
// of fp32 and fp64 sums hold the scratch bodies and the zero-copy ones
// (windows), the launched one the same. Compiled by that script only.
#include "peer_kernels.cuh"

namespace gpucoll {
template __global__ void peer_reduce_kernel<float, OpSum>(PeerArgs);
template __global__ void resident_reduce_kernel<float, OpSum>(const GPU_GRID_CONSTANT PeerArgs);
template __global__ void resident_reduce_kernel<double, OpSum>(const GPU_GRID_CONSTANT PeerArgs);
} // namespace gpucoll
