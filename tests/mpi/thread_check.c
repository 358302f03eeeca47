/* Collectives from several threads at once, each on its own communicator
 * (MPI_THREAD_MULTIPLE), every result checked exactly against a host reference.
 *
 *   thread_check [--mem host|device] [--one-gpu] [--threads T] [--iters N] [--stacks-after S]
 *
 * T threads (default 3) each own an MPI_Comm_dup of MPI_COMM_WORLD and run N
 * rounds of allreduce (in place and not, up to 4 MiB: the zero-copy sizes),
 * bcast, allgather, alltoallv and iallreduce + wait. Values depend on the
 * rank, thread, round and index, so a result landing on the wrong
 * communicator is caught. Device buffers rotate through a pool of distinct
 * allocations, so the process-wide IPC cache evicts while other threads'
 * calls use their mappings. Exit 77 without MPI_THREAD_MULTIPLE, or without
 * a GPU in device mode; 1 on any failure. With --stacks-after S, a rank whose
 * threads have finished no call for S seconds prints every thread's stack
 * (a hang then says where each thread waits). */
/* Our own copies must not wait on the component's kernels of other threads
 * (the legacy default stream waits for every blocking stream), or a thread
 * of each rank could wait for a kernel that waits for the other rank. */
#define CUDA_API_PER_THREAD_DEFAULT_STREAM 1
#include <cuda_runtime.h>
#include <execinfo.h>
#include <mpi.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_gpu.h"

static int rank, size, on_device, device, iters = 0;
enum { kPool = 6 }; /* device allocations per buffer role and thread */

static const size_t sizes[] = {1, 1003, 65537, (1u << 18) + 3, (1u << 20) + 4}; /* ints; the last two > 1 MiB */
enum { kSizes = sizeof sizes / sizeof sizes[0] };
static const size_t kMaxCount = (1u << 20) + 4;

typedef struct {
    int tid;
    atomic_int finished; /* set as it returns: the watchdog leaves it alone */
    MPI_Comm comm;
    long checks, failures;
    void *dev_a[kPool], *dev_b[kPool]; /* device mode: buffers, used in turn */
    int *host_a, *host_b;              /* host mode buffers, and staging in device mode */
    int *expect, *got;
} thread_t;

static int val(int r, int tid, int iter, size_t i) { return (r + 1) * 131 + (int)(i % 977) + tid * 100000 + iter * 7; }

static void fail(thread_t *t, const char *what, size_t n, size_t i, int got, int want)
{
    if (t->failures++ < 10)
        fprintf(stderr, "FAIL rank %d thread %d: %s n=%zu at %zu: got %d want %d\n", rank, t->tid, what, n, i, got,
                want);
}

static atomic_long progress; /* calls finished by all threads */

static void check(thread_t *t, const char *what, size_t n, const int *got, const int *want, size_t count)
{
    atomic_fetch_add(&progress, 1);
    t->checks++;
    for (size_t i = 0; i < count; i++)
        if (got[i] != want[i]) {
            fail(t, what, n, i, got[i], want[i]);
            return;
        }
}

/* Where a call's buffers live: the next pair of device allocations, or the host buffers. */
static int slot_of(int iter, int op) { return (iter * 7 + op) % kPool; }
static void *buf_a(thread_t *t, int slot) { return on_device ? t->dev_a[slot] : (void *)t->host_a; }
static void *buf_b(thread_t *t, int slot) { return on_device ? t->dev_b[slot] : (void *)t->host_b; }
/* In device mode host_a/host_b stage the values; in host mode they are the buffers. */
static void put(void *dst, const int *src, size_t count)
{
    if (!on_device) return;
    cudaMemcpy(dst, src, count * sizeof(int), cudaMemcpyHostToDevice);
    /* A copy from pageable memory may still be in flight on return, and the
     * component orders its work only after the legacy default stream. */
    cudaStreamSynchronize(cudaStreamPerThread);
}
static const int *get(thread_t *t, const void *src, size_t count)
{
    if (!on_device) return (const int *)src;
    cudaMemcpy(t->got, src, count * sizeof(int), cudaMemcpyDeviceToHost);
    return t->got;
}

static void run_round(thread_t *t, int iter)
{
    const int tid = t->tid;
    MPI_Comm c = t->comm;
    for (int si = 0; si < kSizes; si++) {
        size_t n = sizes[si];
        int s;
        /* allreduce, out of place */
        s = slot_of(iter, si * 5 + 0);
        for (size_t i = 0; i < n; i++) t->host_a[i] = val(rank, tid, iter, i);
        put(buf_a(t, s), t->host_a, n);
        MPI_Allreduce(buf_a(t, s), buf_b(t, s), (int)n, MPI_INT, MPI_SUM, c);
        for (size_t i = 0; i < n; i++) {
            int sum = 0;
            for (int r = 0; r < size; r++) sum += val(r, tid, iter, i);
            t->expect[i] = sum;
        }
        check(t, "allreduce", n, get(t, buf_b(t, s), n), t->expect, n);
        /* allreduce in place (max) */
        s = slot_of(iter, si * 5 + 1);
        for (size_t i = 0; i < n; i++) t->host_a[i] = val(rank, tid, iter, i) ^ (int)(i & 3);
        put(buf_a(t, s), t->host_a, n);
        MPI_Allreduce(MPI_IN_PLACE, buf_a(t, s), (int)n, MPI_INT, MPI_MAX, c);
        for (size_t i = 0; i < n; i++) t->expect[i] = val(size - 1, tid, iter, i) ^ (int)(i & 3);
        check(t, "allreduce in place", n, get(t, buf_a(t, s), n), t->expect, n);
        /* bcast from a rotating root */
        int root = (iter + si) % size;
        s = slot_of(iter, si * 5 + 2);
        for (size_t i = 0; i < n; i++) t->host_a[i] = rank == root ? val(root, tid, iter, i) : -1;
        put(buf_a(t, s), t->host_a, n);
        MPI_Bcast(buf_a(t, s), (int)n, MPI_INT, root, c);
        for (size_t i = 0; i < n; i++) t->expect[i] = val(root, tid, iter, i);
        check(t, "bcast", n, get(t, buf_a(t, s), n), t->expect, n);
        /* allgather: a block of n / size (at least 1) per rank */
        size_t blk = n / size ? n / size : 1;
        s = slot_of(iter, si * 5 + 3);
        for (size_t i = 0; i < blk; i++) t->host_a[i] = val(rank, tid, iter, i + 11);
        put(buf_a(t, s), t->host_a, blk);
        MPI_Allgather(buf_a(t, s), (int)blk, MPI_INT, buf_b(t, s), (int)blk, MPI_INT, c);
        for (int r = 0; r < size; r++)
            for (size_t i = 0; i < blk; i++) t->expect[r * blk + i] = val(r, tid, iter, i + 11);
        check(t, "allgather", n, get(t, buf_b(t, s), blk * size), t->expect, blk * size);
        /* iallreduce + wait: nonblocking (device buffers: the staged request) */
        s = slot_of(iter, si * 5 + 4);
        for (size_t i = 0; i < n; i++) t->host_a[i] = val(rank, tid, iter, i + 3);
        put(buf_a(t, s), t->host_a, n);
        MPI_Request req;
        MPI_Iallreduce(buf_a(t, s), buf_b(t, s), (int)n, MPI_INT, MPI_SUM, c, &req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        for (size_t i = 0; i < n; i++) {
            int sum = 0;
            for (int r = 0; r < size; r++) sum += val(r, tid, iter, i + 3);
            t->expect[i] = sum;
        }
        check(t, "iallreduce", n, get(t, buf_b(t, s), n), t->expect, n);
    }
    /* alltoallv: uneven counts, a gap between received pieces */
    int scount[64], sdispl[64], rcount[64], rdispl[64];
    size_t base = sizes[(iter % (kSizes - 1)) + 1] / (size_t)size / 2;
    int so = 0, ro = 0;
    for (int p = 0; p < size; p++) {
        scount[p] = (int)base + (rank * 3 + p * 5 + tid + iter) % 7;
        sdispl[p] = so;
        so += scount[p];
        rcount[p] = (int)base + (p * 3 + rank * 5 + tid + iter) % 7;
        rdispl[p] = ro;
        ro += rcount[p] + 1;
    }
    int s = slot_of(iter, 99);
    for (int p = 0; p < size; p++)
        for (int j = 0; j < scount[p]; j++) t->host_a[sdispl[p] + j] = val(rank, tid, iter, (size_t)p * 1000003 + j);
    put(buf_a(t, s), t->host_a, so);
    for (int i = 0; i < ro; i++) t->host_b[i] = -7;
    put(buf_b(t, s), t->host_b, ro);
    MPI_Alltoallv(buf_a(t, s), scount, sdispl, MPI_INT, buf_b(t, s), rcount, rdispl, MPI_INT, c);
    for (int p = 0; p < size; p++) {
        for (int j = 0; j < rcount[p]; j++) t->expect[rdispl[p] + j] = val(p, tid, iter, (size_t)rank * 1000003 + j);
        t->expect[rdispl[p] + rcount[p]] = -7; /* the gap is not written */
    }
    check(t, "alltoallv", base, get(t, buf_b(t, s), ro), t->expect, ro);
}

/* --stacks-after: the watchdog signals one thread at a time; each prints its own stack. */
static sem_t stack_done;
static void print_stack(int sig)
{
    (void)sig;
    char head[96];
    int n = snprintf(head, sizeof head, "thread_check: rank %d, thread %ld, stack:\n", rank, (long)syscall(SYS_gettid));
    if (write(2, head, (size_t)n) < 0) {}
    void *frames[48];
    backtrace_symbols_fd(frames, backtrace(frames, 48), 2);
    sem_post(&stack_done);
}

typedef struct {
    int seconds, nthreads;
    pthread_t *ids;
    thread_t *threads;
    atomic_int stop;
} watchdog_t;

static void *watchdog_main(void *arg)
{
    watchdog_t *w = arg;
    long seen = -1;
    int still = 0, dumped = 0;
    while (!atomic_load(&w->stop)) {
        sleep(1);
        long now = atomic_load(&progress);
        still = now == seen ? still + 1 : 0;
        seen = now;
        if (still < w->seconds || dumped) continue;
        dumped = 1;
        fprintf(stderr, "thread_check: rank %d: no call finished for %d s (%ld so far)\n", rank, still, now);
        for (int k = 0; k < w->nthreads; k++) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_sec += 2;
            if (!atomic_load(&w->threads[k].finished) && pthread_kill(w->ids[k], SIGUSR2) == 0)
                sem_timedwait(&stack_done, &ts);
        }
    }
    return NULL;
}

static void *thread_main(void *arg)
{
    thread_t *t = arg;
    if (on_device) cudaSetDevice(device);
    for (int it = 0; it < iters; it++) run_round(t, it);
    if (on_device) cudaDeviceSynchronize();
    atomic_store(&t->finished, 1);
    return NULL;
}

int main(int argc, char **argv)
{
    int provided = 0, nthreads = 3, one_gpu = 0, stacks_after = 0;
    const char *mem = "host";
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--mem") && i + 1 < argc) mem = argv[++i];
        else if (!strcmp(argv[i], "--one-gpu")) one_gpu = 1;
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc) nthreads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--iters") && i + 1 < argc) iters = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--stacks-after") && i + 1 < argc) stacks_after = atoi(argv[++i]);
    }
    if (nthreads < 1) nthreads = 1;
    if (nthreads > 16) nthreads = 16;
    if (size > 64) MPI_Abort(MPI_COMM_WORLD, 2);
    on_device = !strcmp(mem, "device");
    if (iters <= 0) iters = on_device ? 6 : 10;
    if (provided < MPI_THREAD_MULTIPLE) {
        if (rank == 0) printf("thread_check: MPI_THREAD_MULTIPLE not provided: skipped\n");
        MPI_Finalize();
        return 77;
    }
    if (on_device) {
        if ((device = test_select_gpu(one_gpu, NULL, NULL)) < 0) {
            if (rank == 0) printf("thread_check: no GPU: skipped\n");
            MPI_Finalize();
            return 77;
        }
    }
    /* Host side: the largest call, an alltoallv with its gaps, and the
     * staging area for reading device results back. */
    size_t host_ints = kMaxCount + 64 * 8 + (size_t)size;
    thread_t *th = calloc((size_t)nthreads, sizeof *th);
    for (int k = 0; k < nthreads; k++) {
        thread_t *t = &th[k];
        t->tid = k;
        /* Collective over MPI_COMM_WORLD: done here, in the same order everywhere. */
        MPI_Comm_dup(MPI_COMM_WORLD, &t->comm);
        t->host_a = malloc(host_ints * sizeof(int));
        t->host_b = malloc(host_ints * sizeof(int));
        t->expect = malloc(host_ints * sizeof(int));
        t->got = malloc(host_ints * sizeof(int));
        if (!t->host_a || !t->host_b || !t->expect || !t->got) MPI_Abort(MPI_COMM_WORLD, 2);
        for (int p = 0; on_device && p < kPool; p++) {
            /* Allocated up front: cudaFree in the loop would wait for other
             * threads' kernels, which may wait for this rank's next call. */
            if (cudaMalloc(&t->dev_a[p], host_ints * sizeof(int)) != cudaSuccess ||
                cudaMalloc(&t->dev_b[p], host_ints * sizeof(int)) != cudaSuccess) {
                fprintf(stderr, "thread_check: cudaMalloc failed\n");
                MPI_Abort(MPI_COMM_WORLD, 2);
            }
        }
    }
    pthread_t *ids = calloc((size_t)nthreads, sizeof *ids);
    for (int k = 0; k < nthreads; k++) pthread_create(&ids[k], NULL, thread_main, &th[k]);
    watchdog_t dog = {.seconds = stacks_after, .nthreads = nthreads, .ids = ids, .threads = th};
    pthread_t dog_id;
    if (stacks_after > 0) {
        void *warm[1];
        backtrace(warm, 1); /* loads libgcc_s now, not inside the signal handler */
        sem_init(&stack_done, 0, 0);
        signal(SIGUSR2, print_stack);
        pthread_create(&dog_id, NULL, watchdog_main, &dog);
    }
    long local[2] = {0, 0}, total[2];
    for (int k = 0; k < nthreads; k++) {
        pthread_join(ids[k], NULL);
        local[0] += th[k].checks;
        local[1] += th[k].failures;
    }
    if (stacks_after > 0) {
        atomic_store(&dog.stop, 1);
        pthread_join(dog_id, NULL);
    }
    MPI_Reduce(local, total, 2, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Bcast(total, 2, MPI_LONG, 0, MPI_COMM_WORLD);
    for (int k = 0; k < nthreads; k++) {
        MPI_Comm_free(&th[k].comm);
        for (int p = 0; on_device && p < kPool; p++) {
            cudaFree(th[k].dev_a[p]);
            cudaFree(th[k].dev_b[p]);
        }
        free(th[k].host_a);
        free(th[k].host_b);
        free(th[k].expect);
        free(th[k].got);
    }
    if (rank == 0)
        printf("thread_check: %ld checks, %ld failed (%d ranks, %d threads, %d rounds, %s buffers)\n", total[0],
               total[1], size, nthreads, iters, on_device ? "device" : "host");
    free(ids);
    free(th);
    MPI_Finalize();
    return total[1] ? 1 : 0;
}
