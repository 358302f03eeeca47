/* coll_gpu_order=none: a collective on buffers the caller has made ready
 * does not wait for work queued on the legacy default stream.
 *
 * Each rank queues a kernel on the legacy default stream that spins until
 * the host sets a flag in mapped memory, and sets it only after its
 * collectives returned (blocking, nonblocking, persistent; through scratch
 * and zero-copy; allreduce and bcast). A collective ordered after the
 * default stream would wait for a kernel that waits for it: the spinner
 * gives up after GIVE_UP_S seconds, so such a collective returns after the
 * spinner has ended, which the test reports (no hang, no kernel left
 * spinning at exit). Every result is checked; nonblocking and persistent
 * calls on pageable host buffers (device stand-ins on the GPU path) are
 * checked too. Each call shape runs once
 * before the spinner (setting up the team and mapping the buffers may wait
 * for the device; the rule is about the calls after).
 *   order_check [--threads] [--spin-even]
 * --threads: MPI_THREAD_MULTIPLE. --spin-even: only even ranks queue the
 * spinner, so that under coll_gpu_busy_max_blocks some ranks find their
 * legacy stream busy and some idle, and must still cut their grids alike
 * (a rank that did not would pair blocks with none: a hang or a wrong sum).
 * Exits 77 without a GPU. */
#include <mpi.h>
#include <cuda_runtime.h>

#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "test_forms.h"
#include "test_gpu.h"
#include "test_watchdog.h"

namespace {

constexpr uint64_t kGiveUpNs = 20ull * 1000 * 1000 * 1000;
int rank, size, failures, checks;
bool spin_even; // --spin-even

struct Flags {
    volatile int go;      // host -> spinner: end
    volatile int ended;   // spinner -> host: it has ended
    volatile int gave_up; // spinner -> host: without the host's word
};

__global__ void spin_until_set(Flags *f)
{
    uint64_t start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do {
        if (f->go) break;
        __nanosleep(1000);
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
        if (now - start > kGiveUpNs) {
            f->gave_up = 1;
            break;
        }
    } while (true);
    __threadfence_system();
    f->ended = 1;
}

void fail(const char *what)
{
    failures++;
    fprintf(stderr, "order_check: rank %d: FAIL: %s\n", rank, what);
}

// Fills `n` floats with rank-dependent values (the sum over ranks is exact).
void fill(float *d, size_t n, int who)
{
    static float host[1 << 16];
    for (size_t off = 0; off < n; off += sizeof host / sizeof host[0]) {
        size_t k = n - off < sizeof host / sizeof host[0] ? n - off : sizeof host / sizeof host[0];
        for (size_t i = 0; i < k; i++) host[i] = (float)((who + 1) * (((off + i) % 7) + 1));
        cudaMemcpy(d + off, host, k * sizeof(float), cudaMemcpyHostToDevice);
    }
}

// Whether every element of d is what the sum (or rank root's bcast) gives.
bool holds(const float *d, size_t n, bool bcast, int root)
{
    static float host[1 << 16];
    for (size_t off = 0; off < n; off += sizeof host / sizeof host[0]) {
        size_t k = n - off < sizeof host / sizeof host[0] ? n - off : sizeof host / sizeof host[0];
        cudaMemcpy(host, d + off, k * sizeof(float), cudaMemcpyDeviceToHost);
        for (size_t i = 0; i < k; i++) {
            float m = (float)(((off + i) % 7) + 1);
            float want = bcast ? (root + 1) * m : m * (float)(size * (size + 1) / 2);
            if (host[i] != want) return false;
        }
    }
    return true;
}

enum Mode { Blocking, Nonblocking, Persistent };
const char *mode_name[] = {"blocking", "nonblocking", "persistent"};

// One allreduce (in place when `in_place`) or bcast from rank 1 % size.
void run(Mode m, bool bcast, float *sbuf, float *rbuf, size_t n)
{
    int root = 1 % size;
    MPI_Request req = MPI_REQUEST_NULL;
    int rc = MPI_SUCCESS;
    if (bcast) {
        if (m == Blocking) rc = MPI_Bcast(rbuf, (int)n, MPI_FLOAT, root, MPI_COMM_WORLD);
        else if (m == Nonblocking) rc = MPI_Ibcast(rbuf, (int)n, MPI_FLOAT, root, MPI_COMM_WORLD, &req);
#ifdef P
        else rc = P(Bcast)(rbuf, (int)n, MPI_FLOAT, root, MPI_COMM_WORLD, MPI_INFO_NULL, &req);
#endif
    } else {
        if (m == Blocking) rc = MPI_Allreduce(sbuf, rbuf, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        else if (m == Nonblocking)
            rc = MPI_Iallreduce(sbuf, rbuf, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &req);
#ifdef P
        else
            rc = P(Allreduce)(sbuf, rbuf, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &req);
#endif
    }
    if (rc == MPI_SUCCESS && m == Persistent) {
        // From the third start on a persistent call may run zero-copy.
        for (int s = 0; s < 3 && rc == MPI_SUCCESS; s++) {
            rc = MPI_Start(&req);
            if (rc == MPI_SUCCESS) rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
        }
        MPI_Request_free(&req);
    } else if (rc == MPI_SUCCESS && m == Nonblocking) {
        rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
    }
    if (rc != MPI_SUCCESS) fail("a collective returned an error");
}

void prepare(bool bcast, float *sbuf, float *rbuf, size_t n)
{
    fill(bcast ? rbuf : sbuf, n, rank);
    if (!bcast) cudaMemset(rbuf, 0, n * sizeof(float));
    cudaDeviceSynchronize(); // the caller's part of the rule: its buffers are ready
}

// The shape once without the spinner, then with it.
void check_shape(Flags *flags, Mode m, bool bcast, float *sbuf, float *rbuf, size_t n)
{
    char what[160];
    snprintf(what, sizeof what, "%s %s of %zu floats", mode_name[m], bcast ? "bcast" : "allreduce", n);
    begin_part(what);
    prepare(bcast, sbuf, rbuf, n);
    run(m, bcast, sbuf, rbuf, n);
    prepare(bcast, sbuf, rbuf, n);
    memset((void *)flags, 0, sizeof *flags);
    const bool spins = !spin_even || rank % 2 == 0;
    if (spins) spin_until_set<<<1, 1>>>(flags); // the legacy default stream
    if (cudaGetLastError() != cudaSuccess) fail("launching the spinner");
    run(m, bcast, sbuf, rbuf, n);
    const bool waited = spins && flags->ended; // read before the word that ends it
    checks++;
    flags->go = 1;
    cudaDeviceSynchronize();
    if (waited || flags->gave_up) {
        snprintf(what + strlen(what), sizeof what - strlen(what), ": waited for the default stream's kernel");
        fail(what);
    }
    if (!holds(rbuf, n, bcast, 1 % size)) {
        snprintf(what + strlen(what), sizeof what - strlen(what), ": wrong result");
        fail(what);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    end_part();
}

// Host buffers (pageable) in a nonblocking or persistent call: once the GPU
// path is set up they run on it through device stand-ins, whose copy-in can
// still be landing when the copy returns. With order none the kernel must
// still start after it: a kernel that read the stand-in early gives a wrong
// sum. No spinner here: that copy waits for the legacy stream by design.
void check_host_shape(Mode m, bool bcast, size_t n)
{
    char what[160];
    snprintf(what, sizeof what, "%s %s of %zu floats in host memory", mode_name[m], bcast ? "bcast" : "allreduce", n);
    begin_part(what);
    float *sbuf = (float *)malloc(n * sizeof(float)), *rbuf = (float *)malloc(n * sizeof(float));
    float *in = bcast ? rbuf : sbuf;
    for (size_t i = 0; i < n; i++) {
        in[i] = (float)((rank + 1) * ((i % 7) + 1));
        if (!bcast) rbuf[i] = 0;
    }
    run(m, bcast, sbuf, rbuf, n);
    checks++;
    const int root = 1 % size;
    size_t wrong = 0;
    for (size_t i = 0; i < n; i++) {
        float mult = (float)((i % 7) + 1);
        if (rbuf[i] != (bcast ? (root + 1) * mult : mult * (float)(size * (size + 1) / 2))) wrong++;
    }
    if (wrong) {
        snprintf(what + strlen(what), sizeof what - strlen(what), ": %zu wrong elements", wrong);
        fail(what);
    }
    free(sbuf);
    free(rbuf);
    MPI_Barrier(MPI_COMM_WORLD);
    end_part();
}

} // namespace

int main(int argc, char **argv)
{
    int threads = 0, provided = 0;
    for (int i = 1; i < argc; i++) {
        threads |= !strcmp(argv[i], "--threads");
        spin_even |= !strcmp(argv[i], "--spin-even");
    }
    if (threads) MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    else MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int local = 0, ngpus = 0, shares = 0, any_shares = 0;
    if (test_select_gpu(0, &local, &ngpus) < 0) {
        if (rank == 0) printf("order_check: no GPU: skipped\n");
        MPI_Finalize();
        return 77;
    }
    // Ranks sharing a GPU without MPS are staged, whose copies keep to the
    // legacy default stream: the rule is about the peer kernels.
    shares = local >= ngpus;
    MPI_Allreduce(&shares, &any_shares, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (any_shares) {
        if (rank == 0) printf("order_check: fewer GPUs than ranks on a node: skipped\n");
        MPI_Finalize();
        return 77;
    }
    watchdog_init("order_check", rank, 60, 0);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    Flags *flags = NULL;
    if (cudaHostAlloc((void **)&flags, sizeof *flags, cudaHostAllocMapped) != cudaSuccess) {
        fprintf(stderr, "order_check: cudaHostAlloc failed\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const size_t big = (64u << 20) / sizeof(float); // zero-copy where buffers map
    float *sbuf = (float *)test_mem_alloc(1, -1, big * sizeof(float));
    float *rbuf = (float *)test_mem_alloc(1, -1, big * sizeof(float));
    MPI_Barrier(MPI_COMM_WORLD); // sets the communicator's GPU path up
#ifdef P
    const int last = Persistent;
#else
    const int last = Nonblocking; // this MPI has no persistent collectives
#endif
    for (int m = Blocking; m <= last; m++)
        for (size_t n : {(size_t)1000, big})
            for (bool bcast : {false, true}) check_shape(flags, (Mode)m, bcast, sbuf, rbuf, n);
    for (int m = Nonblocking; m <= last; m++)
        for (bool bcast : {false, true}) check_host_shape((Mode)m, bcast, big);
    int status = test_tally(failures, checks, "order_check (%d ranks%s%s)", size, threads ? ", threads" : "",
                            spin_even ? ", spinner on even ranks" : "");
    cudaFree(sbuf);
    cudaFree(rbuf);
    cudaFreeHost(flags);
    MPI_Finalize();
    return status;
}
