/* MPI_Reduce_local with its two buffers in different places: on two GPUs
 * (either order, the current GPU either one), and managed memory against
 * device memory. Every result checked exactly, and every GPU must still
 * synchronise without error afterwards (the kernel of inout's GPU reading
 * the other GPU's buffer faulted the context: an illegal address).
 *
 *   reduce_local_devices
 *
 * One rank. Exit 77 without two GPUs (the managed case then runs alone
 * where there is one GPU, and the run still counts as skipped). */
#include <cuda_runtime.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int failures, checks;

enum { M_DEVICE, M_MANAGED };

static void *alloc_on(int where, int device, size_t bytes)
{
    void *p = NULL;
    int cur = 0;
    cudaGetDevice(&cur);
    cudaSetDevice(device);
    cudaError_t e = where == M_MANAGED ? cudaMallocManaged(&p, bytes, cudaMemAttachGlobal) : cudaMalloc(&p, bytes);
    cudaSetDevice(cur);
    if (e != cudaSuccess) {
        fprintf(stderr, "allocating %zu bytes on GPU %d: %s\n", bytes, device, cudaGetErrorString(e));
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return p;
}

/* inout (inout_where, on GPU io_dev) = in (on GPU in_dev) op inout, with GPU `current` current. */
static void one_case(int in_where, int in_dev, int io_where, int io_dev, int current, int n)
{
    int *h = malloc(n * sizeof(int)), *in = alloc_on(in_where, in_dev, n * sizeof(int)),
        *io = alloc_on(io_where, io_dev, n * sizeof(int));
    for (int i = 0; i < n; i++) h[i] = i % 1000 - 500;
    cudaMemcpy(in, h, n * sizeof(int), cudaMemcpyDefault);
    for (int i = 0; i < n; i++) h[i] = 3 * (i % 7);
    cudaMemcpy(io, h, n * sizeof(int), cudaMemcpyDefault);
    cudaSetDevice(current);
    int rc = MPI_Reduce_local(in, io, n, MPI_INT, MPI_SUM);
    cudaMemcpy(h, io, n * sizeof(int), cudaMemcpyDefault);
    checks++;
    char what[160];
    snprintf(what, sizeof what, "%s of GPU %d into %s of GPU %d, GPU %d current, %d ints",
             in_where == M_MANAGED ? "managed memory" : "device memory", in_dev,
             io_where == M_MANAGED ? "managed memory" : "device memory", io_dev, current, n);
    if (rc != MPI_SUCCESS) {
        fprintf(stderr, "FAIL %s: MPI_Reduce_local returned %d\n", what, rc);
        failures++;
    } else {
        for (int i = 0; i < n; i++)
            if (h[i] != i % 1000 - 500 + 3 * (i % 7)) {
                fprintf(stderr, "FAIL %s: element %d is %d, expected %d\n", what, i, h[i], i % 1000 - 500 + 3 * (i % 7));
                failures++;
                break;
            }
    }
    cudaFree(in);
    cudaFree(io);
    free(h);
}

static void gpus_still_work(int ngpus)
{
    for (int d = 0; d < ngpus; d++) {
        cudaSetDevice(d);
        cudaError_t e = cudaDeviceSynchronize();
        checks++;
        if (e != cudaSuccess) {
            fprintf(stderr, "FAIL: GPU %d afterwards: %s\n", d, cudaGetErrorString(e));
            failures++;
        }
    }
    cudaSetDevice(0);
}

int main(int argc, char **argv)
{
    int ngpus = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (cudaGetDeviceCount(&ngpus) != cudaSuccess) ngpus = 0;
    if (ngpus == 0) {
        printf("reduce_local_devices: no GPU: skipped\n");
        MPI_Finalize();
        return 77;
    }
    const int counts[] = {3, 1 << 20};
    for (int c = 0; c < 2; c++) {
        one_case(M_MANAGED, 0, M_DEVICE, 0, 0, counts[c]);
        one_case(M_DEVICE, 0, M_MANAGED, 0, 0, counts[c]);
        for (int cur = 0; ngpus >= 2 && cur < 2; cur++) {
            one_case(M_DEVICE, 1, M_DEVICE, 0, cur, counts[c]);
            one_case(M_DEVICE, 0, M_DEVICE, 1, cur, counts[c]);
        }
    }
    gpus_still_work(ngpus);
    printf("reduce_local_devices (%d GPUs): %d checks, %d failed%s\n", ngpus, checks, failures,
           ngpus < 2 ? " (one GPU: the cases across GPUs did not run)" : "");
    MPI_Finalize();
    return failures ? 1 : ngpus < 2 ? 77 : 0;
}
