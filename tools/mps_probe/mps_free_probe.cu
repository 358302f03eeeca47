// Does a cudaFree in one process wait for another process's kernel on the
// same GPU? Two processes (forked before either touches CUDA): the spinner
// launches a kernel that waits, at most 8 s, for a flag in its own memory;
// the freer maps that flag through CUDA IPC, frees a buffer of its own while
// the spinner's kernel waits, and only then launches the kernel that raises
// the flag. A free that waits for the other process's kernel takes the 8 s
// and the spinner reports "gave up"; one that does not returns at once.
// Under MPS this says whether coll/gpu may free memory while a peer's kernel
// waits for this process's next launch (docs/testing.md, session 18).
//   nvcc -arch=sm_90 -o mps_free_probe mps_free_probe.cu && ./mps_free_probe
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CHECK(x)                                                                          \
    do {                                                                                  \
        cudaError_t e_ = (x);                                                             \
        if (e_ != cudaSuccess) {                                                          \
            fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
            exit(2);                                                                      \
        }                                                                                 \
    } while (0)

__device__ unsigned long long now_ns()
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

__global__ void spin(volatile int *flag, int *seen)
{
    const unsigned long long end = now_ns() + 8000000000ull;
    while (*flag == 0 && now_ns() < end) {
    }
    *seen = *flag;
}

__global__ void raise_flag(int *flag) { *(volatile int *)flag = 1; }

static double seconds()
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void freer(int from_spinner)
{
    cudaIpcMemHandle_t h;
    if (read(from_spinner, &h, sizeof h) != sizeof h) exit(2);
    int *flag = nullptr;
    void *x = nullptr;
    CHECK(cudaIpcOpenMemHandle((void **)&flag, h, cudaIpcMemLazyEnablePeerAccess));
    CHECK(cudaMalloc(&x, 64 << 20));
    char c;
    if (read(from_spinner, &c, 1) != 1) exit(2); // its kernel is launched
    usleep(300 * 1000);
    const double t0 = seconds();
    CHECK(cudaFree(x));
    const double t_free = seconds() - t0;
    raise_flag<<<1, 1>>>(flag);
    CHECK(cudaDeviceSynchronize());
    printf("freer: cudaFree took %.3f s while the other process's kernel waited\n", t_free);
    CHECK(cudaIpcCloseMemHandle(flag));
}

static int spinner(int to_freer)
{
    int *flag = nullptr, *seen = nullptr;
    CHECK(cudaMalloc((void **)&flag, sizeof(int)));
    CHECK(cudaMalloc((void **)&seen, sizeof(int)));
    CHECK(cudaMemset(flag, 0, sizeof(int)));
    CHECK(cudaDeviceSynchronize());
    cudaIpcMemHandle_t h;
    CHECK(cudaIpcGetMemHandle(&h, flag));
    if (write(to_freer, &h, sizeof h) != sizeof h) return 2;
    const double t0 = seconds();
    spin<<<1, 1>>>(flag, seen);
    if (write(to_freer, "l", 1) != 1) return 2;
    CHECK(cudaDeviceSynchronize());
    int got = 0;
    CHECK(cudaMemcpy(&got, seen, sizeof got, cudaMemcpyDeviceToHost));
    printf("spinner: kernel %s after %.3f s\n", got ? "saw the flag" : "gave up", seconds() - t0);
    return got ? 0 : 1;
}

int main()
{
    int down[2];
    if (pipe(down)) return 2;
    pid_t pid = fork();
    if (pid == 0) {
        freer(down[0]);
        return 0;
    }
    const int rc = spinner(down[1]);
    int st = 0;
    waitpid(pid, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        printf("no answer: the freeing process failed (its error is above)\n");
        return 2;
    }
    printf("%s\n", rc == 0 ? "the free did not wait for the other process's kernel"
                           : "the free waited for the other process's kernel");
    return rc;
}
