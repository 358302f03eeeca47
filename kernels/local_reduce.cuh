// Local reduction of two buffers of one GPU: dst[i] = src[i] op dst[i]. No
// peers and no barrier; serves MPI_Reduce_local and the reducer the
// inter-node schedules call between network steps.
#pragma once
#include "peer_sync.cuh"

namespace gpucoll {

template <class T, class Op> __device__ void local_reduce(const PeerArgs &a)
{
    T *dst = reinterpret_cast<T *>(a.dst);
    T *srcs[2] = {const_cast<T *>(reinterpret_cast<const T *>(a.src)), dst};
    reduce_elems<T, Op>(dst, srcs, 2, a.count, a.vector_ok);
}

} // namespace gpucoll
