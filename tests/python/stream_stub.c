/* A stand-in for coll/gpu's stream-ordered collectives, to test the Python
 * module (python/coll_gpu_stream) without a GPU: the coll_gpu_impl_*
 * functions of include/coll_gpu_ext.h with the same signatures, each running
 * the blocking MPI collective at once (the stream is only recorded), plus
 * the fp16/bf16 op functions the header's ops are made from. Knobs for the
 * test, set through ctypes: coll_gpu_stub_fail_next (the next call returns
 * it), coll_gpu_stub_status (what stream_status returns); read back:
 * coll_gpu_stub_last_stream, coll_gpu_stub_last_count, coll_gpu_stub_init_calls.
 * tests/python/stream_host.py loads it RTLD_GLOBAL, as Open MPI loads coll/gpu. */
#define COLL_GPU_EXT_IMPLEMENTATION
#include "coll_gpu_ext.h"

#define STUB_API __attribute__((visibility("default")))

STUB_API int coll_gpu_stub_fail_next = MPI_SUCCESS;
STUB_API int coll_gpu_stub_status = MPI_SUCCESS;
STUB_API int coll_gpu_stub_init_calls = 0;
STUB_API void *coll_gpu_stub_last_stream = NULL;
STUB_API int coll_gpu_stub_last_count = -1;

static int enter(void *stream, int count)
{
    int rc = coll_gpu_stub_fail_next;
    coll_gpu_stub_fail_next = MPI_SUCCESS;
    coll_gpu_stub_last_stream = stream;
    coll_gpu_stub_last_count = count;
    return rc;
}

STUB_API int coll_gpu_impl_stream_init(MPI_Comm comm)
{
    coll_gpu_stub_init_calls++;
    return MPI_Barrier(comm);
}

STUB_API int coll_gpu_impl_stream_status(MPI_Comm comm)
{
    (void)comm;
    return coll_gpu_stub_status;
}

STUB_API int coll_gpu_impl_allreduce_enqueue(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                                             MPI_Op op, MPI_Comm comm, void *stream)
{
    int rc = enter(stream, count);
    return rc ? rc : MPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm);
}

STUB_API int coll_gpu_impl_reduce_enqueue(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                                          MPI_Op op, int root, MPI_Comm comm, void *stream)
{
    int rc = enter(stream, count);
    return rc ? rc : MPI_Reduce(sendbuf, recvbuf, count, datatype, op, root, comm);
}

STUB_API int coll_gpu_impl_bcast_enqueue(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm,
                                         void *stream)
{
    int rc = enter(stream, count);
    return rc ? rc : MPI_Bcast(buffer, count, datatype, root, comm);
}

STUB_API int coll_gpu_impl_allgather_enqueue(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                             void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                                             void *stream)
{
    int rc = enter(stream, recvcount);
    return rc ? rc : MPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
}

STUB_API int coll_gpu_impl_reduce_scatter_block_enqueue(const void *sendbuf, void *recvbuf, int recvcount,
                                                        MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                                                        void *stream)
{
    int rc = enter(stream, recvcount);
    return rc ? rc : MPI_Reduce_scatter_block(sendbuf, recvbuf, recvcount, datatype, op, comm);
}

STUB_API int coll_gpu_impl_alltoall_enqueue(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                            void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                                            void *stream)
{
    int rc = enter(stream, recvcount);
    return rc ? rc : MPI_Alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
}
