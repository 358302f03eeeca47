/* Bad arguments on device buffers: the peer path must turn them into MPI
 * errors on every rank (no hang, no write outside what a rank made room
 * for), and the communicator must work normally afterwards.
 *
 *   args_check [--one-gpu]
 *
 * Cases (MPI_ERRORS_RETURN on a dup of MPI_COMM_WORLD):
 *  - alltoallv where rank 0 sends rank 1 one element more than rank 1
 *    expects: MPI_ERR_TRUNCATE on rank 1, an error on every rank, and rank
 *    1's buffer untouched outside its blocks (sentinels);
 *  - alltoallv where rank 0 sends rank 1 one element less: an error on every
 *    rank (Open MPI's own path leaves that erroneous call undefined);
 *  - allreduce and bcast whose count differs on the last rank by 2^20 + 1
 *    elements (a hash of the arguments could miss it): an error everywhere,
 *    MPI_ERR_TRUNCATE where the buffer is the smaller one;
 *  - Iallreduce (count, op), a persistent allreduce (count) and Ibcast
 *    (root) whose arguments differ on the last rank: an error on every
 *    rank, each on a communicator of its own;
 *  - the same three mismatches enqueued on a stream (coll_gpu_*_enqueue)
 *    after a matching enqueued call: the stream's work ends (no kernel left
 *    waiting), and once every rank has made the call (a barrier) the call
 *    or coll_gpu_stream_status fails on every rank, later enqueued calls
 *    fail until coll_gpu_stream_init (then three correct enqueued calls,
 *    checked exactly), ordinary calls on the communicator work, and it
 *    frees;
 *  - a correct allreduce and alltoallv after each, checked exactly.
 * Needs 2+ ranks and a GPU (exit 77 otherwise). Run it where the ranks form
 * a team (coll_gpu_shared_gpu=1 when they share a GPU): on the staged path
 * these erroneous calls would be Open MPI's to judge. */
#include <cuda_runtime.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll_gpu_ext.h"
#include "test_forms.h"
#include "test_gpu.h"

static int rank, size, failures, checks;
static MPI_Comm comm;

#define FAIL(...)                                                 \
    do {                                                          \
        fprintf(stderr, "rank %d FAIL ", rank);                   \
        fprintf(stderr, __VA_ARGS__);                             \
        fprintf(stderr, "\n");                                    \
        failures++;                                               \
    } while (0)

static int err_class(int rc)
{
    int c = rc;
    if (rc != MPI_SUCCESS) MPI_Error_class(rc, &c);
    return c;
}

static int *dev_fill(size_t n, int v)
{
    int *h = malloc(n * sizeof(int)), *d = NULL;
    for (size_t i = 0; i < n; i++) h[i] = v;
    if (cudaMalloc((void **)&d, n * sizeof(int)) != cudaSuccess) MPI_Abort(MPI_COMM_WORLD, 2);
    cudaMemcpy(d, h, n * sizeof(int), cudaMemcpyHostToDevice);
    free(h);
    return d;
}

static int *to_host(const int *d, size_t n)
{
    int *h = malloc(n * sizeof(int));
    cudaMemcpy(h, d, n * sizeof(int), cudaMemcpyDeviceToHost);
    return h;
}

/* A well-formed allreduce and alltoallv, checked exactly. */
static void check_still_works(const char *after)
{
    const size_t n = 1000;
    int *s = dev_fill(n, rank + 1), *r = dev_fill(n, -1);
    int rc = MPI_Allreduce(s, r, (int)n, MPI_INT, MPI_SUM, comm);
    int *h = to_host(r, n);
    checks++;
    if (rc != MPI_SUCCESS || h[0] != size * (size + 1) / 2 || h[n - 1] != size * (size + 1) / 2)
        FAIL("allreduce after %s: rc %d, got %d", after, rc, h[0]);
    free(h);
    cudaFree(s);
    cudaFree(r);

    int counts[64], displs[64];
    for (int p = 0; p < size; p++) {
        counts[p] = 3;
        displs[p] = 3 * p;
    }
    s = dev_fill(3 * (size_t)size, rank);
    r = dev_fill(3 * (size_t)size, -1);
    rc = MPI_Alltoallv(s, counts, displs, MPI_INT, r, counts, displs, MPI_INT, comm);
    h = to_host(r, 3 * (size_t)size);
    checks++;
    for (int p = 0; p < size; p++)
        if (rc != MPI_SUCCESS || h[3 * p] != p || h[3 * p + 2] != p) {
            FAIL("alltoallv after %s: rc %d, block %d holds %d", after, rc, p, h[3 * p]);
            break;
        }
    free(h);
    cudaFree(s);
    cudaFree(r);
}

/* Rank 0 sends rank 1 `extra` elements more (or fewer) than rank 1 expects. */
static void alltoallv_mismatch(int extra)
{
    const int c = 4, gap = 4; /* blocks of c with sentinel gaps between them */
    int scounts[64], sdispls[64], rcounts[64], rdispls[64];
    for (int p = 0; p < size; p++) {
        scounts[p] = rcounts[p] = c;
        sdispls[p] = c * p;
        rdispls[p] = (c + gap) * p;
    }
    if (rank == 0) scounts[1] += extra;
    size_t rtotal = (size_t)(c + gap) * size;
    int *s = dev_fill((size_t)c * size + 8, 7), *r = dev_fill(rtotal, -1);
    int rc = MPI_Alltoallv(s, scounts, sdispls, MPI_INT, r, rcounts, rdispls, MPI_INT, comm);
    checks++;
    char what[64];
    snprintf(what, sizeof what, "alltoallv with rank 0 sending %+d", extra);
    if (rc == MPI_SUCCESS) FAIL("%s: returned success", what);
    if (extra > 0 && rank == 1 && err_class(rc) != MPI_ERR_TRUNCATE)
        FAIL("%s: rank 1 got error class %d, expected MPI_ERR_TRUNCATE", what, err_class(rc));
    int *h = to_host(r, rtotal);
    for (int p = 0; p < size; p++)
        for (int i = c; i < c + gap; i++)
            if (h[(c + gap) * p + i] != -1) {
                FAIL("%s: sentinel after block %d overwritten (%d)", what, p, h[(c + gap) * p + i]);
                p = size;
                break;
            }
    free(h);
    cudaFree(s);
    cudaFree(r);
    check_still_works(what);
}

static void count_mismatch(void)
{
    const size_t base = 1000, big = base + (1u << 20) + 1;
    size_t n = rank == size - 1 ? big : base;
    int *s = dev_fill(big, 1), *r = dev_fill(big, -1);
    int rc = MPI_Allreduce(s, r, (int)n, MPI_INT, MPI_SUM, comm);
    checks++;
    if (rc == MPI_SUCCESS) FAIL("allreduce with the last rank's count %zu: returned success", big);
    else if (rank != size - 1 && err_class(rc) != MPI_ERR_TRUNCATE)
        FAIL("allreduce count mismatch: error class %d, expected MPI_ERR_TRUNCATE", err_class(rc));
    check_still_works("allreduce count mismatch");
    rc = MPI_Bcast(r, (int)n, MPI_INT, 0, comm);
    checks++;
    if (rc == MPI_SUCCESS) FAIL("bcast with the last rank's count %zu: returned success", big);
    cudaFree(s);
    cudaFree(r);
    check_still_works("bcast count mismatch");
}

/* The communicator of a failed queued call works afterwards: a blocking
 * call (from which on its calls take the staged route, on every rank), then
 * a nonblocking and a persistent one, results checked. */
static void comm_works_after(MPI_Comm c, const char *after)
{
    const size_t n = 1000;
    const int want = size * (size + 1) / 2;
    int *s = dev_fill(n, rank + 1), *r = dev_fill(n, -1);
    for (int form = 0; form < 3; form++) {
        static const char *names[] = {"blocking", "nonblocking", "persistent"};
        MPI_Request req = MPI_REQUEST_NULL;
        cudaMemset(r, 0xff, n * sizeof(int));
        int rc = MPI_SUCCESS;
        if (form == 0) rc = MPI_Allreduce(s, r, (int)n, MPI_INT, MPI_SUM, c);
        else if (form == 1) rc = MPI_Iallreduce(s, r, (int)n, MPI_INT, MPI_SUM, c, &req);
#ifdef P
        else if ((rc = P(Allreduce)(s, r, (int)n, MPI_INT, MPI_SUM, c, MPI_INFO_NULL, &req)) == MPI_SUCCESS)
            rc = MPI_Start(&req);
#else
        else continue;
#endif
        if (rc == MPI_SUCCESS && req != MPI_REQUEST_NULL) rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
        if (form == 2 && req != MPI_REQUEST_NULL) MPI_Request_free(&req);
        int *h = to_host(r, n);
        checks++;
        if (rc != MPI_SUCCESS || h[0] != want || h[n - 1] != want)
            FAIL("%s allreduce on the communicator after %s: rc %d, got %d, expected %d", names[form], after, rc,
                 h[0], want);
        free(h);
    }
    cudaFree(s);
    cudaFree(r);
}

/* Nonblocking and persistent calls whose arguments differ between ranks
 * (count, op, or Ibcast's root on the last rank): an error on every rank,
 * no hang, no silent wrong result. Each on a dup of its own: the first
 * mismatch takes that communicator's queued path out of step until its
 * next blocking call, from which on it stages (comm_works_after). */
enum queued_form { NONBLOCKING, PERSISTENT };
static void queued_mismatch(const char *what, enum queued_form form, int count_delta, MPI_Op last_op, int last_root)
{
    MPI_Comm c;
    MPI_Comm_dup(comm, &c);
    MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
    const int last = rank == size - 1;
    const size_t n = 4096 + (last ? (size_t)count_delta : 0);
    int *s = dev_fill(n, rank + 1), *r = dev_fill(n, -1);
    int one = 1, sum = 0;
    MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, c); /* host buffers: sets up nothing on the GPU */
    int *d1 = dev_fill(1, 1), *d2 = dev_fill(1, 0);
    MPI_Allreduce(d1, d2, 1, MPI_INT, MPI_SUM, c); /* a blocking device call sets the GPU path up */
    MPI_Request req = MPI_REQUEST_NULL;
    MPI_Op op = last ? last_op : MPI_SUM;
    int rc;
    if (last_root >= 0)
        rc = MPI_Ibcast(s, (int)n, MPI_INT, last ? last_root : 0, c, &req);
    else if (form == PERSISTENT) {
        rc = P(Allreduce)(s, r, (int)n, MPI_INT, op, c, MPI_INFO_NULL, &req);
        if (rc == MPI_SUCCESS) rc = MPI_Start(&req);
    } else
        rc = MPI_Iallreduce(s, r, (int)n, MPI_INT, op, c, &req);
    if (rc == MPI_SUCCESS) rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
    if (form == PERSISTENT && req != MPI_REQUEST_NULL) MPI_Request_free(&req);
    checks++;
    if (rc == MPI_SUCCESS) FAIL("%s: MPI_SUCCESS where the ranks' arguments differ", what);
    int ok = rc == MPI_SUCCESS, oks = 0;
    MPI_Allreduce(&ok, &oks, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("args_check: %s: %d of %d ranks returned MPI_SUCCESS\n", what, oks, size);
    comm_works_after(c, what);
    MPI_Comm_free(&c);
    cudaFree(s);
    cudaFree(r);
    cudaFree(d1);
    cudaFree(d2);
    check_still_works(what);
}

/* After an enqueued call failed: coll_gpu_stream_init on every rank starts
 * the communicator's enqueued calls afresh; three correct ones, checked. */
static void enqueued_work_after_init(MPI_Comm c, cudaStream_t st, const char *what)
{
    const size_t n = 4099; /* odd: the tails of every kernel */
    const int want = size * (size + 1) / 2;
    int *s = dev_fill(n, rank + 1), *r = dev_fill(n, -1);
    int rc = coll_gpu_stream_init(c);
    checks++;
    if (rc != MPI_SUCCESS) FAIL("%s: coll_gpu_stream_init after the failed call: rc %d", what, rc);
    for (int k = 0; k < 3; k++) {
        const int bcast = k == 1, root = size - 1;
        rc = bcast ? coll_gpu_bcast_enqueue(s, (int)n, MPI_INT, root, c, st)
                   : coll_gpu_allreduce_enqueue(s, r, (int)n, MPI_INT, MPI_SUM, c, st);
        cudaStreamSynchronize(st);
        int *h = to_host(bcast ? s : r, n);
        /* the bcast leaves every rank's s at root + 1 */
        const int expect = bcast ? root + 1 : k == 0 ? want : size * (root + 1);
        checks++;
        if (rc != MPI_SUCCESS || h[0] != expect || h[n - 1] != expect)
            FAIL("%s: enqueued %s %d after coll_gpu_stream_init: rc %d, got %d / %d, expected %d", what,
                 bcast ? "bcast" : "allreduce", k, rc, h[0], h[n - 1], expect);
        free(h);
    }
    rc = coll_gpu_stream_status(c);
    checks++;
    if (rc != MPI_SUCCESS) FAIL("%s: coll_gpu_stream_status after the correct calls: rc %d", what, rc);
    cudaFree(s);
    cudaFree(r);
}

/* An enqueued call whose arguments differ on the last rank (count, op, or
 * bcast's root), on a dup of its own after a matching one. */
static void enqueued_mismatch(const char *what, int count_delta, MPI_Op last_op, int last_root)
{
    MPI_Comm c;
    MPI_Comm_dup(comm, &c);
    MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
    cudaStream_t st;
    cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking);
    const int last = rank == size - 1, want = size * (size + 1) / 2;
    const size_t base = 4096, n = base + (last ? (size_t)count_delta : 0);
    int *s = dev_fill(n, rank + 1), *r = dev_fill(n, -1);
    int rc = coll_gpu_stream_init(c);
    if (rc == MPI_SUCCESS) rc = coll_gpu_allreduce_enqueue(s, r, (int)base, MPI_INT, MPI_SUM, c, st);
    cudaStreamSynchronize(st);
    int *h = to_host(r, base);
    checks++;
    if (rc != MPI_SUCCESS || h[0] != want || h[base - 1] != want)
        FAIL("%s: the matching enqueued allreduce before it: rc %d, got %d, expected %d", what, rc, h[0], want);
    free(h);
    if (last_root >= 0)
        rc = coll_gpu_bcast_enqueue(s, (int)n, MPI_INT, last ? last_root : 0, c, st);
    else
        rc = coll_gpu_allreduce_enqueue(s, r, (int)n, MPI_INT, last ? last_op : MPI_SUM, c, st);
    cudaError_t e = cudaStreamSynchronize(st); /* a kernel left waiting would hang here (the test's timeout) */
    checks++;
    if (e != cudaSuccess) FAIL("%s: the stream after the call: %s", what, cudaGetErrorString(e));
    MPI_Barrier(MPI_COMM_WORLD); /* every rank has made the call */
    const int status = coll_gpu_stream_status(c);
    checks++;
    if (rc == MPI_SUCCESS && status == MPI_SUCCESS)
        FAIL("%s: the call and coll_gpu_stream_status returned MPI_SUCCESS where the ranks' arguments differ", what);
    int ok = rc == MPI_SUCCESS && status == MPI_SUCCESS, oks = 0;
    MPI_Allreduce(&ok, &oks, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("args_check: %s: %d of %d ranks saw no error\n", what, oks, size);
    rc = coll_gpu_allreduce_enqueue(s, r, (int)base, MPI_INT, MPI_SUM, c, st);
    cudaStreamSynchronize(st);
    checks++;
    if (rc == MPI_SUCCESS) FAIL("%s: a later enqueued call on the communicator returned MPI_SUCCESS", what);
    enqueued_work_after_init(c, st, what);
    comm_works_after(c, what);
    MPI_Comm_free(&c);
    checks++;
    if ((e = cudaDeviceSynchronize()) != cudaSuccess) FAIL("%s: the GPU after the communicator's free: %s", what,
                                                           cudaGetErrorString(e));
    cudaFree(s);
    cudaFree(r);
    cudaStreamDestroy(st);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int one_gpu = argc > 1 && !strcmp(argv[1], "--one-gpu");
    if (test_select_gpu(one_gpu, NULL, NULL) < 0 || size < 2 || size > 64) {
        if (rank == 0) printf("args_check: needs 2-64 ranks and a GPU: skipped\n");
        MPI_Finalize();
        return 77;
    }
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);

    check_still_works("setup");
    alltoallv_mismatch(+1);
    alltoallv_mismatch(-1);
    count_mismatch();
    queued_mismatch("iallreduce count", NONBLOCKING, (1 << 20) + 1, MPI_SUM, -1);
    queued_mismatch("iallreduce op", NONBLOCKING, 0, MPI_MAX, -1);
    queued_mismatch("persistent allreduce count", PERSISTENT, -7, MPI_SUM, -1);
    queued_mismatch("ibcast root", NONBLOCKING, 0, MPI_SUM, 1);
    enqueued_mismatch("enqueued allreduce count", (1 << 20) + 1, MPI_SUM, -1);
    enqueued_mismatch("enqueued allreduce op", 0, MPI_MAX, -1);
    enqueued_mismatch("enqueued bcast root", 0, MPI_SUM, 1);
    check_still_works("the enqueued mismatches");
    /* No case of count 0 on some ranks only: Open MPI's MPI_Allreduce and
     * MPI_Bcast return MPI_SUCCESS for count 0 before any coll component
     * sees the call (ompi/mpi/c/allreduce.c), so that rank skips the
     * collective and every later call on the communicator pairs with its
     * peers' previous one, whatever the component does. */

    int total_fail = 0, total_checks = 0;
    MPI_Allreduce(&failures, &total_fail, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(&checks, &total_checks, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("args_check (%d ranks): %d checks, %d failed\n", size, total_checks, total_fail);
    MPI_Comm_free(&comm);
    MPI_Finalize();
    return total_fail ? 1 : 0;
}
