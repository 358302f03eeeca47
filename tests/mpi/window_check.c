/* Registered windows (include/coll_gpu_ext.h, coll_gpu_register):
 *   a. registration on every rank gives the same window, twice;
 *   b. MPI_Iallreduce (out of place, in place, at an offset that differs per
 *      rank), MPI_Ibcast (every root), MPI_Iallgather, MPI_Ireduce_scatter_block,
 *      MPI_Ialltoall and MPI_Ireduce (NULL receive buffers off the root) on
 *      buffers in windows, three rounds with new inputs: MPI's results;
 *   c. a persistent allreduce in a window started 4 times;
 *   d. one rank's buffer outside its windows: the call runs through scratch,
 *      still right;
 *   e. a rank registering host memory: every rank gets MPI_ERR_ARG, window -1;
 *   f. deregistration, a call on the buffer afterwards right; deregistering
 *      a window nobody registered: MPI_ERR_ARG on every rank.
 *   g. stream-ordered calls (allreduce out of place, bcast from every root,
 *      allgather) and a captured graph's replays on a window: MPI's results;
 *      the graph replayed after the window's deregistration: still right.
 *   h. on a new communicator, no registration: MPI_Iallreduce,
 *      MPI_Ireduce_scatter_block, MPI_Ialltoall and MPI_Ireduce on the same buffers 4
 *      times (windows made on first use, coll_gpu_auto_windows): MPI's results.
 *   i. on a new communicator, a buffer allocated for a graph: an in-place
 *      allreduce captured on it, the graph replayed 12 times (the last 10
 *      after pauses of 300 ms): MPI's results.
 * Calls move 16 MiB: run with coll_gpu_window_move_min_bytes below that (ctest
 * sets 1 MiB) for the bcast and allgather to take the windows too.
 * --expect-zero-copy (run with coll_gpu_verbose 20): the line each
 * deregistration prints must count at least one call that ran zero-copy in
 * windows (stderr captured around it), and part g's deregistration more
 * than the one before it; part h's and part i's communicators, at their
 * free, must count a call that ran zero-copy (unless run with --no-auto, as
 * with coll_gpu_auto_windows 0).
 * Exits 77 without a GPU. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#if defined(OPEN_MPI) && MPI_VERSION < 4
#include <mpi-ext.h>
#endif

#include "coll_gpu_ext.h"
#include "test_gpu.h"
#include "test_watchdog.h"

#if MPI_VERSION >= 4 || (defined(OPEN_MPI) && OMPI_MAJOR_VERSION >= 5)
#define ALLREDUCE_INIT MPI_Allreduce_init
#elif defined(OMPI_HAVE_MPI_EXT_PCOLLREQ)
#define ALLREDUCE_INIT MPIX_Allreduce_init
#endif

static int rank, size, failures, checks;
static const size_t N = (size_t)4 << 20; /* floats per call: 16 MiB, past direct_min_bytes */

static void fail(const char *what, size_t i, float got, float want)
{
    if (failures++ < 20) printf("FAIL rank %d: %s: [%zu] = %g, expected %g\n", rank, what, i, got, want);
    fflush(stdout);
}

static float *host(size_t n)
{
    float *h = malloc(n * sizeof(float));
    if (!h) MPI_Abort(MPI_COMM_WORLD, 2);
    return h;
}

/* Rank r's input of round k: small integers, exact in float sums. */
static float input(int r, int k, size_t i) { return (float)((r + 1) * (k + 2) + (int)(i % 13)); }

static void put(float *dev, const float *h, size_t n) { cudaMemcpy(dev, h, n * sizeof(float), cudaMemcpyHostToDevice); }
static void get(float *h, const float *dev, size_t n) { cudaMemcpy(h, dev, n * sizeof(float), cudaMemcpyDeviceToHost); }

static MPI_Comm g_comm = MPI_COMM_WORLD; /* of allreduce() */

static void wait_req(MPI_Request *req)
{
    MPI_Wait(req, MPI_STATUS_IGNORE);
    still_moving();
}

/* h: an allreduce's result of round k, against the sum of every rank's input. */
static void check_sum(const float *h, int k, const char *what)
{
    for (size_t i = 0; i < N; i++) {
        float want = 0;
        for (int r = 0; r < size; r++) want += input(r, k, i);
        if (h[i] != want) {
            fail(what, i, h[i], want);
            break;
        }
    }
    checks++;
}

static void allreduce(float *sbuf, float *rbuf, int k, const char *what)
{
    float *h = host(N);
    for (size_t i = 0; i < N; i++) h[i] = input(rank, k, i);
    put(sbuf ? sbuf : rbuf, h, N);
    MPI_Request req;
    MPI_Iallreduce(sbuf ? (const void *)sbuf : MPI_IN_PLACE, rbuf, (int)N, MPI_FLOAT, MPI_SUM, g_comm, &req);
    wait_req(&req);
    get(h, rbuf, N);
    check_sum(h, k, what);
    free(h);
}

static void bcast(float *buf, int k, int root)
{
    float *h = host(N);
    for (size_t i = 0; i < N; i++) h[i] = rank == root ? input(root, k, i) : -1.0f;
    put(buf, h, N);
    MPI_Request req;
    MPI_Ibcast(buf, (int)N, MPI_FLOAT, root, MPI_COMM_WORLD, &req);
    wait_req(&req);
    get(h, buf, N);
    for (size_t i = 0; i < N; i++)
        if (h[i] != input(root, k, i)) {
            fail("ibcast", i, h[i], input(root, k, i));
            break;
        }
    checks++;
    free(h);
}

static void allgather(float *sbuf, float *rbuf, int k)
{
    const size_t per = N / (size_t)size / 4 * 4;
    float *h = host(per * (size_t)size);
    for (size_t i = 0; i < per; i++) h[i] = input(rank, k, i);
    put(sbuf, h, per);
    MPI_Request req;
    MPI_Iallgather(sbuf, (int)per, MPI_FLOAT, rbuf, (int)per, MPI_FLOAT, MPI_COMM_WORLD, &req);
    wait_req(&req);
    get(h, rbuf, per * (size_t)size);
    for (int r = 0; r < size; r++)
        for (size_t i = 0; i < per; i++)
            if (h[(size_t)r * per + i] != input(r, k, i)) {
                fail("iallgather", (size_t)r * per + i, h[(size_t)r * per + i], input(r, k, i));
                r = size;
                break;
            }
    checks++;
    free(h);
}

/* Reduce_scatter_block and alltoall of N floats per rank, blocks of N / size:
 * out[j] against block `rank` of every input (summed) or block `rank` of
 * rank j / per's input. */
static void strided(int alltoall, float *sbuf, float *rbuf, int k)
{
    const size_t per = N / (size_t)size / 4 * 4, out = alltoall ? per * (size_t)size : per;
    float *h = host(per * (size_t)size);
    for (size_t i = 0; i < per * (size_t)size; i++) h[i] = input(rank, k, i);
    put(sbuf, h, per * (size_t)size);
    MPI_Request req;
    if (alltoall) MPI_Ialltoall(sbuf, (int)per, MPI_FLOAT, rbuf, (int)per, MPI_FLOAT, g_comm, &req);
    else MPI_Ireduce_scatter_block(sbuf, rbuf, (int)per, MPI_FLOAT, MPI_SUM, g_comm, &req);
    wait_req(&req);
    get(h, rbuf, out);
    for (size_t j = 0; j < out; j++) {
        const size_t i = (size_t)rank * per + j % per;
        float want = 0;
        for (int r = 0; r < size; r++) want += alltoall ? (r == (int)(j / per) ? input(r, k, i) : 0) : input(r, k, i);
        if (h[j] != want) {
            fail(alltoall ? "ialltoall" : "ireduce_scatter_block", j, h[j], want);
            break;
        }
    }
    checks++;
    free(h);
}

/* MPI_Ireduce to `root`; the other ranks pass NULL as their receive buffer
 * (MPI ignores it there). */
static void reduce(float *sbuf, float *rbuf, int k, int root)
{
    float *h = host(N);
    for (size_t i = 0; i < N; i++) h[i] = input(rank, k, i);
    put(sbuf, h, N);
    MPI_Request req;
    MPI_Ireduce(sbuf, rank == root ? rbuf : NULL, (int)N, MPI_FLOAT, MPI_SUM, root, g_comm, &req);
    wait_req(&req);
    if (rank == root) {
        get(h, rbuf, N);
        check_sum(h, k, "ireduce");
    }
    free(h);
}

#ifdef ALLREDUCE_INIT
static void persistent(float *buf)
{
    MPI_Request req;
    ALLREDUCE_INIT(MPI_IN_PLACE, buf, (int)N, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &req);
    float *h = host(N);
    for (int k = 0; k < 4; k++) {
        for (size_t i = 0; i < N; i++) h[i] = input(rank, k, i);
        put(buf, h, N);
        MPI_Start(&req);
        wait_req(&req);
        get(h, buf, N);
        check_sum(h, k, "persistent allreduce");
    }
    MPI_Request_free(&req);
    free(h);
}
#endif

/* The same answer on every rank, or a failure. */
static void agree(int v, const char *what)
{
    int lo = v, hi = v;
    MPI_Allreduce(MPI_IN_PLACE, &lo, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &hi, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (lo != hi && failures++ < 20) printf("FAIL rank %d: %s: %d here, ranks range %d..%d\n", rank, what, v, lo, hi);
    checks++;
}

/* Runs `step` with stderr captured into text[4096] (and passed on). */
static int with_stderr(int (*step)(void *), void *arg, char *text)
{
    fflush(stderr);
    FILE *f = tmpfile();
    int saved = dup(2);
    if (f && saved >= 0) dup2(fileno(f), 2);
    int rc = step(arg);
    fflush(stderr);
    text[0] = 0;
    if (f && saved >= 0) {
        dup2(saved, 2);
        close(saved);
        rewind(f);
        size_t n = fread(text, 1, 4095, f);
        text[n] = 0;
        fclose(f);
        fputs(text, stderr);
    }
    return rc;
}

static int deregister_step(void *w) { return coll_gpu_deregister(MPI_COMM_WORLD, *(int *)w); }
static int free_step(void *c) { return MPI_Comm_free((MPI_Comm *)c); }

/* Deregisters `w`; with expect_zero_copy, the verbose line must count a
 * call that ran zero-copy in windows. Returns the count. */
static unsigned long long deregister(int w, int expect_zero_copy)
{
    char text[4096];
    int rc = with_stderr(deregister_step, &w, text);
    if (rc != MPI_SUCCESS && failures++ < 20) printf("FAIL rank %d: deregistering window %d: error %d\n", rank, w, rc);
    /* "coll:gpu: rank R: window W deregistered; N calls ran zero-copy in windows so far" */
    const char *line = strstr(text, "deregistered; ");
    unsigned long long calls = line ? strtoull(line + strlen("deregistered; "), NULL, 10) : 0;
    if (expect_zero_copy && calls == 0 && failures++ < 20)
        printf("FAIL rank %d: no call ran zero-copy in windows before window %d was deregistered (%s)\n", rank, w,
               line ? "the count is 0" : "no verbose line: run with coll_gpu_verbose 20");
    checks++;
    return calls;
}

/* Frees *c with stderr captured; the most calls any rank's verbose line
 * counted as zero-copy without a host agreement. Every rank takes the same
 * plan, but a rank may end the communicator's teams after MPI_Comm_free
 * returns (its last kernel still running): one rank's count is enough. */
static unsigned long long free_counting(MPI_Comm *c)
{
    char text[4096];
    with_stderr(free_step, c, text);
    unsigned long long most = 0;
    /* "coll:gpu: rank R: N calls without a host agreement ran zero-copy in
     * windows", once per team (the communicator's, its stream-ordered one) */
    for (const char *line = strstr(text, "calls without a host agreement ran zero-copy"); line;
         line = strstr(line + 1, "calls without a host agreement ran zero-copy")) {
        const char *num = line;
        while (num > text && num[-1] != ':') num--;
        unsigned long long n = strtoull(num, NULL, 10);
        if (n > most) most = n;
    }
    MPI_Allreduce(MPI_IN_PLACE, &most, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
    return most;
}

static int mpi_ok(int rc, const char *what)
{
    if (rc != MPI_SUCCESS && failures++ < 20) printf("FAIL rank %d: %s: error %d\n", rank, what, rc);
    return rc == MPI_SUCCESS;
}

static void settle(cudaStream_t st, const char *what)
{
    cudaError_t e = cudaStreamSynchronize(st);
    if (e != cudaSuccess && failures++ < 20) printf("FAIL rank %d: %s: %s\n", rank, what, cudaGetErrorString(e));
    still_moving();
}

/* g: stream-ordered calls on `buf` (a window of N * (size + 1) floats). */
static void enqueued_calls(float *buf, cudaStream_t st)
{
    float *h = host(N * (size_t)(size + 1));
    for (int k = 0; k < 2; k++) {
        for (size_t i = 0; i < N; i++) h[i] = input(rank, k, i);
        put(buf, h, N);
        if (mpi_ok(coll_gpu_allreduce_enqueue(buf, buf + N, (int)N, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, st),
                   "allreduce_enqueue"))
            settle(st, "allreduce_enqueue");
        get(h, buf + N, N);
        check_sum(h, k, "allreduce_enqueue");
        for (int root = 0; root < size; root++) {
            for (size_t i = 0; i < N; i++) h[i] = rank == root ? input(root, k, i) : -1.0f;
            put(buf, h, N);
            if (mpi_ok(coll_gpu_bcast_enqueue(buf, (int)N, MPI_FLOAT, root, MPI_COMM_WORLD, st), "bcast_enqueue"))
                settle(st, "bcast_enqueue");
            get(h, buf, N);
            for (size_t i = 0; i < N; i++)
                if (h[i] != input(root, k, i)) {
                    fail("bcast_enqueue", i, h[i], input(root, k, i));
                    break;
                }
            checks++;
        }
        const size_t per = N / (size_t)size / 4 * 4;
        for (size_t i = 0; i < per; i++) h[i] = input(rank, k, i);
        put(buf, h, per);
        if (mpi_ok(coll_gpu_allgather_enqueue(buf, (int)per, MPI_FLOAT, buf + N, (int)per, MPI_FLOAT, MPI_COMM_WORLD, st),
                   "allgather_enqueue"))
            settle(st, "allgather_enqueue");
        get(h, buf + N, per * (size_t)size);
        for (size_t j = 0; j < per * (size_t)size; j++)
            if (h[j] != input((int)(j / per), k, j % per)) {
                fail("allgather_enqueue", j, h[j], input((int)(j / per), k, j % per));
                break;
            }
        checks++;
    }
    free(h);
}

/* g: an in-place allreduce on `buf` captured once, replayed `replays` times
 * with new inputs from round `k0` on. */
static void replay(cudaGraphExec_t exec, float *buf, cudaStream_t st, int k0, int replays, const char *what)
{
    float *h = host(N);
    for (int k = k0; k < k0 + replays; k++) {
        for (size_t i = 0; i < N; i++) h[i] = input(rank, k, i);
        put(buf, h, N);
        cudaError_t e = cudaGraphLaunch(exec, st);
        if (e != cudaSuccess && failures++ < 20) printf("FAIL rank %d: %s: launch: %s\n", rank, what, cudaGetErrorString(e));
        settle(st, what);
        get(h, buf, N);
        check_sum(h, k, what);
    }
    free(h);
}

static cudaGraphExec_t capture_allreduce(float *buf, cudaStream_t st, MPI_Comm comm)
{
    cudaGraph_t graph = NULL;
    cudaGraphExec_t exec = NULL;
    if (cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal) != cudaSuccess) {
        if (failures++ < 20) printf("FAIL rank %d: cudaStreamBeginCapture\n", rank);
        return NULL;
    }
    int rc = coll_gpu_allreduce_enqueue(MPI_IN_PLACE, buf, (int)N, MPI_FLOAT, MPI_SUM, comm, st);
    cudaError_t e = cudaStreamEndCapture(st, &graph);
    if (mpi_ok(rc, "captured allreduce_enqueue") && e == cudaSuccess &&
        cudaGraphInstantiateWithFlags(&exec, graph, 0) == cudaSuccess) {
        cudaGraphDestroy(graph);
        return exec;
    }
    if (failures++ < 20) printf("FAIL rank %d: capturing an allreduce: %s\n", rank, cudaGetErrorString(e));
    if (graph) cudaGraphDestroy(graph);
    return NULL;
}

int main(int argc, char **argv)
{
    int provided, expect_zero_copy = 0, auto_zero_copy = 1;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_SINGLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--expect-zero-copy")) expect_zero_copy = 1;
        else if (!strcmp(argv[i], "--no-auto")) auto_zero_copy = 0;
    if (test_select_gpu(0, NULL, NULL) < 0) {
        if (rank == 0) printf("window_check: skipped: no GPU\n");
        MPI_Finalize();
        return 77;
    }
    watchdog_init("window_check", rank, 120, 0);
    const size_t bytes = N * sizeof(float) * (size_t)(size + 1);
    float *a = test_mem_alloc(1, -1, bytes), *b = test_mem_alloc(1, -1, bytes), *c = test_mem_alloc(1, -1, bytes);
    MPI_Barrier(MPI_COMM_WORLD); /* sets the GPU path up: nonblocking calls need it */

    begin_part("a. register");
    int wa = -1, wb = -1;
    int rc = coll_gpu_register(MPI_COMM_WORLD, a, bytes, &wa);
    if (rc == MPI_ERR_UNSUPPORTED_OPERATION) {
        if (rank == 0) printf("window_check: skipped: no GPU path on this communicator\n");
        MPI_Finalize();
        return 77;
    }
    if (rc != MPI_SUCCESS || wa < 0) printf("FAIL rank %d: registering a: error %d, window %d\n", rank, rc, wa), failures++;
    rc = coll_gpu_register(MPI_COMM_WORLD, b, bytes, &wb);
    if (rc != MPI_SUCCESS || wb < 0 || wb == wa) printf("FAIL rank %d: registering b: error %d, window %d\n", rank, rc, wb), failures++;
    agree(wa, "window of a");
    agree(wb, "window of b");
    end_part();

    begin_part("b. nonblocking calls in windows");
    for (int k = 0; k < 3; k++) {
        allreduce(a, b, k, "iallreduce a -> b");
        allreduce(NULL, a, k, "iallreduce in place");
        allreduce(a + 4 * (size_t)(rank + 1), b + 4 * (size_t)(size - rank), k, "iallreduce at offsets");
        for (int root = 0; root < size; root++) bcast(b, k, root);
        allgather(a, b, k);
        strided(0, a, b, k);
        strided(1, a, b, k);
        reduce(a, b, k, k % size);
    }
    end_part();
#ifdef ALLREDUCE_INIT
    begin_part("c. persistent");
    persistent(b + 64);
    end_part();
#endif
    begin_part("d. one rank outside its windows");
    allreduce(rank == size - 1 ? c : a, b, 5, "iallreduce, one input unregistered");
    end_part();

    begin_part("e. host memory refused");
    float *h = host(1024);
    int we = 7;
    rc = coll_gpu_register(MPI_COMM_WORLD, rank == 0 ? (void *)h : (void *)c, 4096, &we);
    if (rc != MPI_ERR_ARG || we != -1)
        printf("FAIL rank %d: registering host memory on rank 0: error %d (want MPI_ERR_ARG), window %d\n", rank, rc, we),
            failures++;
    checks++;
    free(h);
    end_part();

    begin_part("f. deregister");
    deregister(wa, expect_zero_copy);
    const unsigned long long before = deregister(wb, 0);
    allreduce(a, b, 6, "iallreduce after deregistration");
    rc = coll_gpu_deregister(MPI_COMM_WORLD, 63);
    if (rc != MPI_ERR_ARG) printf("FAIL rank %d: deregistering window 63: error %d, want MPI_ERR_ARG\n", rank, rc), failures++;
    checks++;
    end_part();

    begin_part("g. stream-ordered calls and graphs in a window");
    cudaStream_t st;
    cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking);
    int wc = -1;
    if (mpi_ok(coll_gpu_stream_init(MPI_COMM_WORLD), "coll_gpu_stream_init") &&
        mpi_ok(coll_gpu_register(MPI_COMM_WORLD, c, bytes, &wc), "registering c")) {
        enqueued_calls(c, st);
        cudaGraphExec_t exec = capture_allreduce(c + N, st, MPI_COMM_WORLD);
        if (exec) replay(exec, c + N, st, 10, 3, "graph replay in a window");
        const unsigned long long after = deregister(wc, expect_zero_copy);
        if (expect_zero_copy && after <= before && failures++ < 20)
            printf("FAIL rank %d: no stream-ordered call ran zero-copy in a window (%llu calls before, %llu after)\n",
                   rank, before, after);
        checks++;
        /* Its descriptors are stale now: the replays go through scratch. */
        if (exec) replay(exec, c + N, st, 20, 2, "graph replay after deregistration");
        if (exec) cudaGraphExecDestroy(exec);
    }
    cudaStreamDestroy(st);
    end_part();

    begin_part("h. windows made on first use");
    MPI_Comm_dup(MPI_COMM_WORLD, &g_comm);
    MPI_Barrier(g_comm); /* its GPU path */
    for (int k = 0; k < 4; k++) {
        allreduce(a, b, 30 + k, "iallreduce on a new communicator");
        strided(0, a, b, 30 + k);
        strided(1, a, b, 30 + k);
        reduce(a, b, 30 + k, (k + 1) % size);
    }
    const unsigned long long auto_calls = free_counting(&g_comm);
    g_comm = MPI_COMM_WORLD;
    if (expect_zero_copy && auto_zero_copy && auto_calls == 0 && failures++ < 20)
        printf("FAIL rank %d: no MPI_Iallreduce on the new communicator ran zero-copy (no rank's verbose line at its "
               "free counted one)\n", rank);
    checks++;
    end_part();

    begin_part("i. a graph on a buffer no uncaptured call used");
    MPI_Comm gc;
    MPI_Comm_dup(MPI_COMM_WORLD, &gc);
    float *d = test_mem_alloc(1, -1, N * sizeof(float));
    cudaStream_t gs;
    cudaStreamCreateWithFlags(&gs, cudaStreamNonBlocking);
    if (mpi_ok(coll_gpu_stream_init(gc), "coll_gpu_stream_init on a new communicator")) {
        cudaGraphExec_t exec = capture_allreduce(d, gs, gc);
        /* The capture exported d; a rank that captured before its peers
         * did maps their exports from its watcher thread: replays after
         * that run zero-copy. */
        if (exec) replay(exec, d, gs, 40, 2, "graph replay, first launches");
        /* The watcher looks every 100 ms: 3 s leave room for a loaded machine. */
        for (int k = 0; exec && k < 10; k++) {
            usleep(300 * 1000);
            replay(exec, d, gs, 42 + k, 1, "graph replay, later launches");
        }
        if (exec) cudaGraphExecDestroy(exec);
    }
    cudaStreamDestroy(gs);
    const unsigned long long graph_calls = free_counting(&gc);
    if (expect_zero_copy && auto_zero_copy && graph_calls == 0 && failures++ < 20)
        printf("FAIL rank %d: no replay of a graph captured on a new buffer ran zero-copy (no rank's verbose line at "
               "its communicator's free counted one)\n", rank);
    checks++;
    test_mem_free(1, d);
    end_part();

    test_mem_free(1, a);
    test_mem_free(1, b);
    test_mem_free(1, c);
    int all = failures;
    MPI_Allreduce(MPI_IN_PLACE, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("window_check: %d checks per rank, %d failed\n", checks, all);
    MPI_Finalize();
    return all ? 1 : 0;
}
