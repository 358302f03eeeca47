/* gpu_port_query_pointer on device, host and managed memory, without and
 * with the driver initialised. Exits 77 without a GPU. */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

#include "gpu_port.h"

static int failures;
static void expect(const char *what, int got, int want)
{
    if (got != want) {
        printf("FAIL %s: %d, expected %d\n", what, got, want);
        failures++;
    }
}

int main(void)
{
    gpu_port_ptr_info_t info;
    char host[64];
    gpu_port_query_pointer(host, &info);
    expect("host memory before CUDA is used", info.kind, GPU_PORT_MEM_HOST);
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
        printf("no GPU: skipped\n");
        return 77;
    }
    void *dev[2] = {0, 0};
    for (int d = 0; d < (n > 1 ? 2 : 1); d++) {
        cudaSetDevice(d);
        cudaMalloc(&dev[d], 4096);
    }
    cudaSetDevice(0);
    for (int d = 0; d < (n > 1 ? 2 : 1); d++) {
        gpu_port_query_pointer((char *)dev[d] + 100, &info);
        expect("device memory kind", info.kind, GPU_PORT_MEM_DEVICE);
        expect("device ordinal", info.device, d);
        expect("allocation base", info.base == dev[d], 1);
    }
    void *managed = NULL;
    cudaMallocManaged(&managed, 4096, cudaMemAttachGlobal);
    gpu_port_query_pointer(managed, &info);
    expect("managed memory kind", info.kind, GPU_PORT_MEM_MANAGED);
    void *pinned = NULL;
    cudaMallocHost(&pinned, 4096);
    gpu_port_query_pointer(pinned, &info);
    expect("pinned host memory kind", info.kind, GPU_PORT_MEM_HOST);
    gpu_port_query_pointer(host, &info);
    expect("host memory after CUDA is used", info.kind, GPU_PORT_MEM_HOST);
    printf("pointer queries: %d failed\n", failures);
    return failures ? 1 : 0;
}
