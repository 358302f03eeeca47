/* Misused stream-ordered collectives (coll_gpu_*_enqueue, include/coll_gpu_ext.h)
 * return an MPI error class before anything reads what the arguments point
 * to or anything is launched, and leave the communicator and the GPU working.
 *
 *   stream_args_check [--mem host|device] [--one-gpu]
 *
 * Every rank makes each erroneous call (so that no peer's kernel waits for a
 * rank that stopped), and must get:
 *  - MPI_ERR_TYPE: count > 0 with MPI_DATATYPE_NULL, with a C NULL datatype,
 *    with a type that is not committed;
 *  - MPI_ERR_COUNT: a negative count; MPI_ERR_ROOT: a root out of range;
 *  - MPI_ERR_OP: MPI_OP_NULL, and MPI_BAND on MPI_FLOAT;
 *  - MPI_ERR_BUFFER: a NULL send buffer of allgather, alltoall, allreduce,
 *    reduce_scatter_block, a NULL buffer of bcast;
 *  - MPI_ERR_ARG: reduce with MPI_IN_PLACE on a non-root rank and a NULL
 *    receive buffer (on the root: MPI_IN_PLACE as its receive buffer);
 *  - MPI_ERR_COMM: MPI_COMM_NULL;
 *  - device memory, a machine with 2+ GPUs: MPI_ERR_ARG for a stream of
 *    another GPU than the communicator's (before: an illegal address, the
 *    context lost).
 * Then (device memory) a correct enqueued allreduce, checked exactly, the
 * communicator's stream status clean and every GPU synchronising without
 * error. Host memory needs no GPU: the checks come before any stream is
 * touched (the legacy stream is named). Exit 77 in device mode without a GPU. */
#include <cuda_runtime.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll_gpu_ext.h"
#include "test_gpu.h"

static int rank, size, on_device, failures, checks;
static MPI_Comm comm;

static void expect(const char *what, int rc, int want)
{
    int cls = rc;
    if (rc != MPI_SUCCESS) MPI_Error_class(rc, &cls);
    checks++;
    if (cls == want) return;
    char got[MPI_MAX_ERROR_STRING], exp[MPI_MAX_ERROR_STRING];
    int len;
    MPI_Error_string(cls, got, &len);
    MPI_Error_string(want, exp, &len);
    fprintf(stderr, "rank %d FAIL %s: returned %d (%s), expected %d (%s)\n", rank, what, cls, got, want, exp);
    failures++;
}

/* The misuses of MPI arguments, named on `stream`. */
static void misuses(void *stream, int *sbuf, int *rbuf, int n)
{
    MPI_Datatype uncommitted;
    MPI_Type_contiguous(2, MPI_INT, &uncommitted);
    const int last = size - 1;
    expect("allreduce, MPI_DATATYPE_NULL", coll_gpu_allreduce_enqueue(sbuf, rbuf, n, MPI_DATATYPE_NULL, MPI_SUM, comm, stream),
           MPI_ERR_TYPE);
    expect("allreduce, NULL datatype", coll_gpu_allreduce_enqueue(sbuf, rbuf, n, NULL, MPI_SUM, comm, stream), MPI_ERR_TYPE);
    expect("bcast, uncommitted type", coll_gpu_bcast_enqueue(rbuf, 1, uncommitted, 0, comm, stream), MPI_ERR_TYPE);
    expect("allgather, NULL send type",
           coll_gpu_allgather_enqueue(sbuf, 1, NULL, rbuf, 1, MPI_INT, comm, stream), MPI_ERR_TYPE);
    expect("allreduce, count -1", coll_gpu_allreduce_enqueue(sbuf, rbuf, -1, MPI_INT, MPI_SUM, comm, stream), MPI_ERR_COUNT);
    expect("allreduce, MPI_OP_NULL", coll_gpu_allreduce_enqueue(sbuf, rbuf, n, MPI_INT, MPI_OP_NULL, comm, stream),
           MPI_ERR_OP);
    expect("allreduce, MPI_BAND on MPI_FLOAT",
           coll_gpu_allreduce_enqueue(sbuf, rbuf, n, MPI_FLOAT, MPI_BAND, comm, stream), MPI_ERR_OP);
    expect("bcast, root = size", coll_gpu_bcast_enqueue(rbuf, n, MPI_INT, size, comm, stream), MPI_ERR_ROOT);
    expect("reduce, root -1", coll_gpu_reduce_enqueue(sbuf, rbuf, n, MPI_INT, MPI_SUM, -1, comm, stream), MPI_ERR_ROOT);
    expect("allgather, NULL send buffer",
           coll_gpu_allgather_enqueue(NULL, n, MPI_INT, rbuf, n, MPI_INT, comm, stream), MPI_ERR_BUFFER);
    expect("alltoall, NULL send buffer", coll_gpu_alltoall_enqueue(NULL, 1, MPI_INT, rbuf, 1, MPI_INT, comm, stream),
           MPI_ERR_BUFFER);
    expect("allreduce, NULL send buffer", coll_gpu_allreduce_enqueue(NULL, rbuf, n, MPI_INT, MPI_SUM, comm, stream),
           MPI_ERR_BUFFER);
    expect("reduce_scatter_block, NULL send buffer",
           coll_gpu_reduce_scatter_block_enqueue(NULL, rbuf, 1, MPI_INT, MPI_SUM, comm, stream), MPI_ERR_BUFFER);
    expect("bcast, NULL buffer", coll_gpu_bcast_enqueue(NULL, n, MPI_INT, 0, comm, stream), MPI_ERR_BUFFER);
    expect("allreduce, receive buffer MPI_IN_PLACE",
           coll_gpu_allreduce_enqueue(sbuf, MPI_IN_PLACE, n, MPI_INT, MPI_SUM, comm, stream), MPI_ERR_ARG);
    /* The root's own misuse (MPI_IN_PLACE as its receive buffer) keeps it from launching alone. */
    expect("reduce, MPI_IN_PLACE on a non-root with a NULL receive buffer",
           coll_gpu_reduce_enqueue(MPI_IN_PLACE, rank == last ? MPI_IN_PLACE : NULL, n, MPI_INT, MPI_SUM, last, comm,
                                   stream),
           MPI_ERR_ARG);
    expect("allreduce, MPI_COMM_NULL",
           coll_gpu_allreduce_enqueue(sbuf, rbuf, n, MPI_INT, MPI_SUM, MPI_COMM_NULL, stream), MPI_ERR_COMM);
    MPI_Type_free(&uncommitted);
}

/* A stream of a GPU other than the communicator's: an error, nothing launched. */
static void other_gpu_stream(int mine, int ngpus, int *sbuf, int *rbuf, int n)
{
    int other = (mine + 1) % ngpus;
    cudaStream_t s = NULL;
    cudaSetDevice(other);
    if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess) {
        fprintf(stderr, "rank %d FAIL: no stream on GPU %d\n", rank, other);
        failures++;
    } else {
        cudaSetDevice(mine);
        expect("allreduce on a stream of another GPU",
               coll_gpu_allreduce_enqueue(sbuf, rbuf, n, MPI_INT, MPI_SUM, comm, s), MPI_ERR_ARG);
        expect("bcast on a stream of another GPU", coll_gpu_bcast_enqueue(rbuf, n, MPI_INT, 0, comm, s), MPI_ERR_ARG);
        cudaStreamDestroy(s);
    }
    cudaSetDevice(mine);
}

/* After the misuses: a correct call works and no GPU's context is lost. */
static void still_works(cudaStream_t stream, int *sbuf, int *rbuf, int n, int ngpus)
{
    int *h = malloc(n * sizeof(int)), want = size * (size + 1) / 2, mine = 0;
    for (int i = 0; i < n; i++) h[i] = rank + 1;
    cudaMemcpy(sbuf, h, n * sizeof(int), cudaMemcpyHostToDevice);
    expect("a correct allreduce after them", coll_gpu_allreduce_enqueue(sbuf, rbuf, n, MPI_INT, MPI_SUM, comm, stream),
           MPI_SUCCESS);
    expect("the stream after them", cudaStreamSynchronize(stream) == cudaSuccess ? MPI_SUCCESS : MPI_ERR_OTHER,
           MPI_SUCCESS);
    expect("coll_gpu_stream_status after them", coll_gpu_stream_status(comm), MPI_SUCCESS);
    cudaMemcpy(h, rbuf, n * sizeof(int), cudaMemcpyDeviceToHost);
    checks++;
    for (int i = 0; i < n; i++)
        if (h[i] != want) {
            fprintf(stderr, "rank %d FAIL: the correct allreduce gave %d at %d, expected %d\n", rank, h[i], i, want);
            failures++;
            break;
        }
    cudaGetDevice(&mine);
    for (int d = 0; d < ngpus; d++) {
        cudaSetDevice(d);
        cudaError_t e = cudaDeviceSynchronize();
        checks++;
        if (e != cudaSuccess) {
            fprintf(stderr, "rank %d FAIL: GPU %d after the misuses: %s\n", rank, d, cudaGetErrorString(e));
            failures++;
        }
    }
    cudaSetDevice(mine);
    free(h);
}

int main(int argc, char **argv)
{
    int one_gpu = 0, ngpus = 0, dev = -1;
    const int n = 1000;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--mem") && i + 1 < argc) on_device = !strcmp(argv[++i], "device");
        else if (!strcmp(argv[i], "--one-gpu")) one_gpu = 1;
    }
    if (on_device && (dev = test_select_gpu(one_gpu, NULL, &ngpus)) < 0) {
        if (rank == 0) printf("stream_args_check: no GPU: skipped\n");
        MPI_Finalize();
        return 77;
    }
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    int *sbuf = test_mem_alloc(on_device, -1, n * sizeof(int) * (size_t)size);
    int *rbuf = test_mem_alloc(on_device, -1, n * sizeof(int) * (size_t)size);
    cudaStream_t stream = NULL;
    if (on_device) {
        cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
        expect("coll_gpu_stream_init", coll_gpu_stream_init(comm), MPI_SUCCESS);
    }
    misuses(stream, sbuf, rbuf, n);
    if (on_device && ngpus >= 2) other_gpu_stream(dev, ngpus, sbuf, rbuf, n);
    else if (on_device && rank == 0) printf("stream_args_check: one GPU: no stream of another GPU to try\n");
    if (on_device) still_works(stream, sbuf, rbuf, n, ngpus);
    if (stream) cudaStreamDestroy(stream);
    test_mem_free(on_device, sbuf);
    test_mem_free(on_device, rbuf);
    MPI_Comm_free(&comm);
    int sums[2], mine[2] = {failures, checks};
    MPI_Allreduce(mine, sums, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("stream_args_check (%s memory, %d ranks): %d checks, %d failed\n", on_device ? "device" : "host",
                          size, sums[1], sums[0]);
    MPI_Finalize();
    return sums[0] ? 1 : 0;
}
