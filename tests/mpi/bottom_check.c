/* MPI_BOTTOM buffers whose datatypes carry absolute addresses (built from
 * MPI_Get_address), on host or device memory, every element checked.
 *
 *   bottom_check [--mem host|device] [--one-gpu]
 *
 * The buffer argument is then NULL in Open MPI and only the datatype says
 * where the data are: a component that looks at the pointer alone takes a
 * device buffer for host memory (and the module below dereferences it).
 * Bcast, allgather and alltoallw, blocking, nonblocking and
 * persistent, on MPI_COMM_WORLD and MPI_COMM_SELF; neighbor_alltoallw on a
 * periodic ring. Exit 77 without a GPU in device mode. */
#include <cuda_runtime.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_forms.h"
#include "test_gpu.h"

enum { kN = 1000, kMax = 64 };
enum form { F_BLOCKING, F_NONBLOCKING, F_PERSISTENT, F_FORMS };
static const char *form_names[F_FORMS] = {"blocking", "nonblocking", "persistent"};
static int on_device, failures, checks;

/* `count` ints at `at`, as a type whose lower bound is their address (a
 * struct, as mpi4py's tests build them). Open MPI's reductions take
 * predefined types only, so no reduction can address MPI_BOTTOM. */
static MPI_Datatype absolute(const int *at, int count)
{
    MPI_Aint addr;
    MPI_Datatype t, ints = MPI_INT;
    MPI_Get_address(at, &addr);
    MPI_Type_create_struct(1, &count, &addr, &ints, &t);
    MPI_Type_commit(&t);
    return t;
}

static int value(int rank, int block, int i) { return rank * 100000 + block * 1000 + i % 1000; }

/* Completes a call made in form f (request posted or to start). */
static int finish(enum form f, int rc, MPI_Request *q)
{
    if (rc == MPI_SUCCESS && f == F_PERSISTENT) rc = MPI_Start(q);
    if (rc == MPI_SUCCESS && f != F_BLOCKING) rc = MPI_Wait(q, MPI_STATUS_IGNORE);
    if (f == F_PERSISTENT && *q != MPI_REQUEST_NULL) MPI_Request_free(q);
    return rc;
}

static void expect(const char *what, MPI_Comm comm, enum form f, const int *got, const int *want, int n)
{
    int name_len;
    char name[MPI_MAX_OBJECT_NAME];
    MPI_Comm_get_name(comm, name, &name_len);
    for (int i = 0; i < n; i++, checks++)
        if (got[i] != want[i] && failures++ < 20)
            fprintf(stderr, "FAIL %s %s on %s: element %d: got %d, expected %d\n", form_names[f], what, name, i, got[i],
                    want[i]);
}

#ifdef P
#define CALL(blocking, nonblocking, persistent) \
    (f == F_BLOCKING ? (blocking) : f == F_NONBLOCKING ? (nonblocking) : (persistent))
#else
#define CALL(blocking, nonblocking, persistent) (f == F_BLOCKING ? (blocking) : (nonblocking))
#endif

static void check_comm(MPI_Comm comm, int is_ring, enum form f)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    const size_t n = (size_t)kN * (size_t)(size < 2 ? 2 : size); /* a ring has two blocks even on one rank */
    int *send = test_mem_alloc(on_device, -1, n * sizeof(int)), *recv = test_mem_alloc(on_device, -1, n * sizeof(int));
    int *h = malloc(n * sizeof(int)), *want = malloc(n * sizeof(int));
    MPI_Request q = MPI_REQUEST_NULL;
    int rc;
    if (!is_ring) {
        /* bcast from the last rank into MPI_BOTTOM */
        for (int i = 0; i < kN; i++) h[i] = rank == size - 1 ? value(size - 1, 0, i) : -1, want[i] = value(size - 1, 0, i);
        test_mem_put(on_device, recv, h, kN * sizeof(int));
        MPI_Datatype t = absolute(recv, kN);
        rc = finish(f, CALL(MPI_Bcast(MPI_BOTTOM, 1, t, size - 1, comm), MPI_Ibcast(MPI_BOTTOM, 1, t, size - 1, comm, &q),
                            P(Bcast)(MPI_BOTTOM, 1, t, size - 1, comm, MPI_INFO_NULL, &q)), &q);
        test_mem_get(on_device, h, recv, kN * sizeof(int));
        expect(rc == MPI_SUCCESS ? "bcast" : "bcast (returned an error)", comm, f, h, want, kN);

        MPI_Type_free(&t);

        /* allgather from MPI_BOTTOM into an ordinary buffer */
        for (int i = 0; i < kN; i++) h[i] = value(rank, 0, i);
        test_mem_put(on_device, send, h, kN * sizeof(int));
        for (size_t i = 0; i < n; i++) h[i] = -1;
        test_mem_put(on_device, recv, h, n * sizeof(int));
        for (int r = 0; r < size; r++)
            for (int i = 0; i < kN; i++) want[(size_t)r * kN + i] = value(r, 0, i);
        t = absolute(send, kN);
        rc = finish(f, CALL(MPI_Allgather(MPI_BOTTOM, 1, t, recv, kN, MPI_INT, comm),
                            MPI_Iallgather(MPI_BOTTOM, 1, t, recv, kN, MPI_INT, comm, &q),
                            P(Allgather)(MPI_BOTTOM, 1, t, recv, kN, MPI_INT, comm, MPI_INFO_NULL, &q)), &q);
        test_mem_get(on_device, h, recv, (size_t)size * kN * sizeof(int));
        expect(rc == MPI_SUCCESS ? "allgather" : "allgather (returned an error)", comm, f, h, want, size * kN);
        MPI_Type_free(&t);
    }

    /* alltoallw (neighbor_alltoallw on the ring): block j to rank (or neighbour) j */
    int in = size, out = size, src[kMax], ones[kMax], zeros[kMax];
    MPI_Aint azeros[kMax];
    MPI_Datatype st[kMax], rt[kMax];
    for (int j = 0; j < kMax; j++) src[j] = j, ones[j] = 1, zeros[j] = 0, azeros[j] = 0;
    if (is_ring) {
        in = out = 2;
        MPI_Cart_shift(comm, 0, 1, &src[0], &src[1]);
    }
    for (int j = 0; j < out; j++)
        for (int i = 0; i < kN; i++) h[(size_t)j * kN + i] = value(rank, j, i);
    test_mem_put(on_device, send, h, (size_t)out * kN * sizeof(int));
    for (size_t i = 0; i < (size_t)in * kN; i++) h[i] = -1;
    test_mem_put(on_device, recv, h, (size_t)in * kN * sizeof(int));
    for (int j = 0; j < out; j++) st[j] = absolute(send + (size_t)j * kN, kN);
    for (int j = 0; j < in; j++) rt[j] = absolute(recv + (size_t)j * kN, kN);
    if (is_ring)
        rc = finish(f, CALL(MPI_Neighbor_alltoallw(MPI_BOTTOM, ones, azeros, st, MPI_BOTTOM, ones, azeros, rt, comm),
                            MPI_Ineighbor_alltoallw(MPI_BOTTOM, ones, azeros, st, MPI_BOTTOM, ones, azeros, rt, comm, &q),
                            P(Neighbor_alltoallw)(MPI_BOTTOM, ones, azeros, st, MPI_BOTTOM, ones, azeros, rt, comm,
                                                  MPI_INFO_NULL, &q)), &q);
    else
        rc = finish(f, CALL(MPI_Alltoallw(MPI_BOTTOM, ones, zeros, st, MPI_BOTTOM, ones, zeros, rt, comm),
                            MPI_Ialltoallw(MPI_BOTTOM, ones, zeros, st, MPI_BOTTOM, ones, zeros, rt, comm, &q),
                            P(Alltoallw)(MPI_BOTTOM, ones, zeros, st, MPI_BOTTOM, ones, zeros, rt, comm, MPI_INFO_NULL,
                                         &q)), &q);
    test_mem_get(on_device, h, recv, (size_t)in * kN * sizeof(int));
    /* ring: my negative neighbour sent me its positive-direction block (1), the positive one its block 0 */
    for (int j = 0; j < in; j++)
        for (int i = 0; i < kN; i++) want[(size_t)j * kN + i] = value(src[j], is_ring ? 1 - j : rank, i);
    /* with two ranks (or one) a ring's two directions are one peer, and MPI leaves their order open */
    if (!(is_ring && size <= 2))
        expect(rc == MPI_SUCCESS ? (is_ring ? "neighbor_alltoallw" : "alltoallw") : "alltoallw (returned an error)",
               comm, f, h, want, in * kN);
    for (int j = 0; j < out; j++) MPI_Type_free(&st[j]);
    for (int j = 0; j < in; j++) MPI_Type_free(&rt[j]);
    test_mem_free(on_device, send);
    test_mem_free(on_device, recv);
    free(h);
    free(want);
}

int main(int argc, char **argv)
{
    int one_gpu = 0, world, rank;
    MPI_Init(&argc, &argv);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--mem") && i + 1 < argc) on_device = !strcmp(argv[++i], "device");
        else if (!strcmp(argv[i], "--one-gpu")) one_gpu = 1;
    }
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (world > kMax || (on_device && test_select_gpu(one_gpu, NULL, NULL) < 0)) {
        if (rank == 0) printf("bottom_check: no GPU, or more than %d ranks: skipped\n", kMax);
        MPI_Finalize();
        return 77;
    }
    MPI_Comm ring;
    int dims[1] = {world}, periods[1] = {1};
    MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &ring);
#ifdef P
    const int forms = F_FORMS;
#else
    const int forms = F_PERSISTENT;
#endif
    for (int f = 0; f < forms; f++) {
        check_comm(MPI_COMM_WORLD, 0, f);
        check_comm(MPI_COMM_SELF, 0, f);
        check_comm(ring, 1, f);
    }
    int rc = test_tally(failures, checks, "bottom_check (%s memory, %d ranks)", on_device ? "device" : "host", world);
    MPI_Comm_free(&ring);
    MPI_Finalize();
    return rc;
}
