/* horovod_style.c: the MPI calls Horovod's MPI backend makes on GPU buffers,
 * each checked.
 *
 * Horovod (horovod/common/ops/mpi_operations.cc, common/mpi/mpi_context.cc) fuses
 * tensors into one buffer and calls:
 *   - MPI_Allreduce(MPI_IN_PLACE, ...) on the fusion buffer; fp16 travels as
 *     MPI_Type_contiguous(2, MPI_BYTE) with a user MPI_Op that sums halves
 *     on the host (MPI has no half type);
 *   - MPI_Allgatherv with per-rank counts (first dimensions differ by rank);
 *   - MPI_Alltoall of the split sizes (host ints), then MPI_Alltoallv;
 *   - MPI_Bcast for broadcast_parameters.
 * Here all of them run on device buffers (host buffers without a GPU or with
 * --host). --require-gpu: exit 77 without a GPU. Exit 1 on a wrong result. */
#include <stdint.h>

#include "example_util.h"

static int g_gpu, g_rank, g_size;
static long g_failures;

/* ---- IEEE half <-> float on the host, as Horovod's half.h does ---- */
static float half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ffu, bits;
    if (exp == 0x1f) {
        bits = sign | 0x7f800000u | (man << 13);               /* inf, nan */
    } else if (exp == 0) {
        float v = (float)man / 16777216.0f;                     /* zero, subnormal: man * 2^-24 */
        return sign ? -v : v;
    } else {
        bits = sign | ((exp + 112) << 23) | (man << 13);
    }
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

static uint16_t float_to_half(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t a = u & 0x7fffffffu;
    if (a >= 0x7f800000u) return sign | 0x7c00u | (a > 0x7f800000u ? 0x200u : 0);
    if (a >= 0x477ff000u) return sign | 0x7c00u;                /* overflow to inf */
    if (a < 0x38800000u) {                                      /* subnormal half */
        float s;
        memcpy(&s, &a, 4);
        s *= 16777216.0f;
        uint32_t r = (uint32_t)s;
        float frac = s - (float)r;
        if (frac > 0.5f || (frac == 0.5f && (r & 1u))) r++;
        return sign | (uint16_t)r;
    }
    uint32_t h = ((a >> 23) - 112) << 10 | ((a & 0x7fffffu) >> 13), rest = a & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) h++;  /* round to nearest even */
    return sign | (uint16_t)h;
}

/* Horovod's float16_sum: the user MPI_Op for its 2-byte type (host memory). */
static void float16_sum(void *invec, void *inoutvec, int *len, MPI_Datatype *type)
{
    (void)type;
    const uint16_t *in = invec;
    uint16_t *inout = inoutvec;
    for (int i = 0; i < *len; i++)
        inout[i] = float_to_half(half_to_float(in[i]) + half_to_float(inout[i]));
}

/* Counts wrong elements over all ranks and reports one line per check. */
static void report(const char *what, long wrong)
{
    MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &wrong, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD));
    if (g_rank == 0) printf("  %-66s %s\n", what, wrong ? "WRONG" : "ok");
    if (wrong) g_failures++;
}

static long check_f32(const float *got, const float *want, size_t n, const char *what)
{
    long wrong = 0;
    for (size_t i = 0; i < n; i++)
        if (got[i] != want[i] && wrong++ == 0)
            fprintf(stderr, "rank %d: %s: [%zu] = %g, expected %g\n", g_rank, what, i, got[i], want[i]);
    return wrong;
}

static long check_f16(const uint16_t *got, const uint16_t *want, size_t n, const char *what)
{
    long wrong = 0;
    for (size_t i = 0; i < n; i++)
        if (got[i] != want[i] && wrong++ == 0)
            fprintf(stderr, "rank %d: %s: [%zu] = %g, expected %g\n", g_rank, what, i,
                    half_to_float(got[i]), half_to_float(want[i]));
    return wrong;
}

/* Fused fp32 gradient allreduce, in place, MPI_SUM. */
static void allreduce_f32(int count)
{
    size_t bytes = (size_t)count * 4;
    float *h = malloc(bytes), *want = malloc(bytes), *d = ex_alloc(g_gpu, bytes);
    for (int i = 0; i < count; i++) {
        h[i] = (float)((g_rank + 1) * (i % 5 + 1));
        want[i] = (float)(g_size * (g_size + 1) / 2 * (i % 5 + 1));
    }
    ex_to_buf(g_gpu, d, h, bytes);
    MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, d, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD));
    ex_from_buf(g_gpu, h, d, bytes);
    char what[96];
    snprintf(what, sizeof what, "Allreduce IN_PLACE fp32 MPI_SUM, %d elements", count);
    report(what, check_f32(h, want, count, what));
    ex_free(g_gpu, d);
    free(h);
    free(want);
}

/* fp16 allreduce the Horovod way: 2-byte contiguous type + user sum op. */
static void allreduce_f16(int count, MPI_Datatype f16, MPI_Op f16_sum)
{
    size_t bytes = (size_t)count * 2;
    uint16_t *h = malloc(bytes), *want = malloc(bytes), *d = ex_alloc(g_gpu, bytes);
    for (int i = 0; i < count; i++) {
        h[i] = float_to_half((float)((i + g_rank) % 9 - 4));
        float s = 0;   /* small integers: exact in half whatever the order */
        for (int r = 0; r < g_size; r++) s += (float)((i + r) % 9 - 4);
        want[i] = float_to_half(s);
    }
    ex_to_buf(g_gpu, d, h, bytes);
    MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, d, count, f16, f16_sum, MPI_COMM_WORLD));
    ex_from_buf(g_gpu, h, d, bytes);
    char what[96];
    snprintf(what, sizeof what, "Allreduce IN_PLACE fp16 (2 x MPI_BYTE, user op), %d elements", count);
    report(what, check_f16(h, want, count, what));
    ex_free(g_gpu, d);
    free(h);
    free(want);
}

/* Rank r contributes rows * (r+1) + r % 3 elements (the last rank none when
 * there are 3 or more ranks: empty tensors happen in Horovod). */
static int gather_count(int r, int rows)
{
    return (g_size >= 3 && r == g_size - 1) ? 0 : rows * (r + 1) + r % 3;
}

/* Allgatherv of fp32 in place and of fp16 out of place. */
static void allgatherv(int rows, MPI_Datatype f16)
{
    int *counts = malloc(g_size * sizeof(int)), *displs = malloc(g_size * sizeof(int)), total = 0;
    for (int r = 0; r < g_size; r++) {
        counts[r] = gather_count(r, rows);
        displs[r] = total;
        total += counts[r];
    }
    float *h = malloc((size_t)total * 4 + 4), *want = malloc((size_t)total * 4 + 4);
    uint16_t *h16 = malloc((size_t)total * 2 + 2), *want16 = malloc((size_t)total * 2 + 2);
    for (int r = 0; r < g_size; r++)
        for (int k = 0; k < counts[r]; k++) {
            want[displs[r] + k] = (float)(r * 100000 + k);
            want16[displs[r] + k] = float_to_half((float)((r * 37 + k) % 2000));
        }
    /* in place: my block already sits at displs[rank] of the receive buffer */
    for (int i = 0; i < total; i++) h[i] = -1.0f;
    memcpy(h + displs[g_rank], want + displs[g_rank], (size_t)counts[g_rank] * 4);
    float *d = ex_alloc(g_gpu, (size_t)total * 4);
    ex_to_buf(g_gpu, d, h, (size_t)total * 4);
    MPI_CHECK(MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, d, counts, displs, MPI_FLOAT, MPI_COMM_WORLD));
    ex_from_buf(g_gpu, h, d, (size_t)total * 4);
    char what[96];
    snprintf(what, sizeof what, "Allgatherv IN_PLACE fp32, %d elements in all", total);
    report(what, check_f32(h, want, total, what));

    uint16_t *s16 = ex_alloc(g_gpu, (size_t)counts[g_rank] * 2), *d16 = ex_alloc(g_gpu, (size_t)total * 2);
    ex_to_buf(g_gpu, s16, want16 + displs[g_rank], (size_t)counts[g_rank] * 2);
    MPI_CHECK(MPI_Allgatherv(s16, counts[g_rank], f16, d16, counts, displs, f16, MPI_COMM_WORLD));
    ex_from_buf(g_gpu, h16, d16, (size_t)total * 2);
    snprintf(what, sizeof what, "Allgatherv fp16 (2 x MPI_BYTE), %d elements in all", total);
    report(what, check_f16(h16, want16, total, what));

    ex_free(g_gpu, d);
    ex_free(g_gpu, s16);
    ex_free(g_gpu, d16);
    free(h); free(want); free(h16); free(want16); free(counts); free(displs);
}

/* Rank `from` sends this many elements to rank `to` (zero for some pairs). */
static int split(int from, int to) { return (from * 3 + to * 5) % 4 * 3; }

static float a2a_value(int from, int to, int k) { return (float)(from * 10000 + to * 1000 + k); }

/* Alltoallv with uneven splits; the receive counts come from an
 * MPI_Alltoall of the send counts on host memory, as Horovod does. */
static void alltoallv(void)
{
    int *sc = malloc(g_size * sizeof(int)), *sd = malloc(g_size * sizeof(int));
    int *rc = malloc(g_size * sizeof(int)), *rd = malloc(g_size * sizeof(int));
    int stotal = 0, rtotal = 0;
    for (int j = 0; j < g_size; j++) sc[j] = split(g_rank, j);
    MPI_CHECK(MPI_Alltoall(sc, 1, MPI_INT, rc, 1, MPI_INT, MPI_COMM_WORLD));
    for (int j = 0; j < g_size; j++) {
        sd[j] = stotal;
        stotal += sc[j];
        rd[j] = rtotal;
        rtotal += rc[j];
    }
    float *hs = malloc((size_t)stotal * 4 + 4), *hr = malloc((size_t)rtotal * 4 + 4);
    float *want = malloc((size_t)rtotal * 4 + 4);
    for (int j = 0; j < g_size; j++) {
        for (int k = 0; k < sc[j]; k++) hs[sd[j] + k] = a2a_value(g_rank, j, k);
        for (int k = 0; k < rc[j]; k++) want[rd[j] + k] = a2a_value(j, g_rank, k);
    }
    float *ds = ex_alloc(g_gpu, (size_t)stotal * 4), *dr = ex_alloc(g_gpu, (size_t)rtotal * 4);
    ex_to_buf(g_gpu, ds, hs, (size_t)stotal * 4);
    MPI_CHECK(MPI_Alltoallv(ds, sc, sd, MPI_FLOAT, dr, rc, rd, MPI_FLOAT, MPI_COMM_WORLD));
    ex_from_buf(g_gpu, hr, dr, (size_t)rtotal * 4);
    report("Alltoallv fp32, uneven splits (some empty)", check_f32(hr, want, rtotal, "Alltoallv"));
    ex_free(g_gpu, ds);
    ex_free(g_gpu, dr);
    free(hs); free(hr); free(want); free(sc); free(sd); free(rc); free(rd);
}

/* broadcast_parameters: fp32 from rank 0, fp16 from the last rank. */
static void bcast(int count, MPI_Datatype f16)
{
    float *h = malloc((size_t)count * 4), *want = malloc((size_t)count * 4), *d = ex_alloc(g_gpu, (size_t)count * 4);
    uint16_t *h16 = malloc((size_t)count * 2), *want16 = malloc((size_t)count * 2), *d16 = ex_alloc(g_gpu, (size_t)count * 2);
    const int root16 = g_size - 1;
    for (int i = 0; i < count; i++) {
        want[i] = (float)(i % 1000) * 0.5f;
        want16[i] = float_to_half((float)(i % 512) - 256.0f);
        h[i] = g_rank == 0 ? want[i] : -7.0f;
        h16[i] = g_rank == root16 ? want16[i] : float_to_half(-7.0f);
    }
    ex_to_buf(g_gpu, d, h, (size_t)count * 4);
    ex_to_buf(g_gpu, d16, h16, (size_t)count * 2);
    MPI_CHECK(MPI_Bcast(d, count, MPI_FLOAT, 0, MPI_COMM_WORLD));
    MPI_CHECK(MPI_Bcast(d16, count, f16, root16, MPI_COMM_WORLD));
    ex_from_buf(g_gpu, h, d, (size_t)count * 4);
    ex_from_buf(g_gpu, h16, d16, (size_t)count * 2);
    char what[96];
    snprintf(what, sizeof what, "Bcast fp32 from rank 0, %d elements", count);
    report(what, check_f32(h, want, count, what));
    snprintf(what, sizeof what, "Bcast fp16 (2 x MPI_BYTE) from rank %d, %d elements", root16, count);
    report(what, check_f16(h16, want16, count, what));
    ex_free(g_gpu, d);
    ex_free(g_gpu, d16);
    free(h); free(want); free(h16); free(want16);
}

int main(int argc, char **argv)
{
    int force_host = 0, require_gpu = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--host")) force_host = 1;
        else if (!strcmp(argv[i], "--require-gpu")) require_gpu = 1;
    }
    MPI_CHECK(MPI_Init(&argc, &argv));
    MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &g_rank));
    MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &g_size));
    g_gpu = example_pick_gpu(force_host);
    if (!g_gpu && require_gpu) {
        if (g_rank == 0) printf("horovod_style: no GPU, skipped\n");
        MPI_Finalize();
        return 77;
    }
    if (g_rank == 0) printf("horovod_style: %d ranks, %s buffers\n", g_size, g_gpu ? "device" : "host");

    /* Horovod's fp16 type and sum op (common/mpi/mpi_context.cc) */
    MPI_Datatype f16;
    MPI_Op f16_sum;
    MPI_CHECK(MPI_Type_contiguous(2, MPI_BYTE, &f16));
    MPI_CHECK(MPI_Type_commit(&f16));
    MPI_CHECK(MPI_Op_create(float16_sum, 1, &f16_sum));

    /* sizes like fused buffers: tiny, odd, and a few MiB */
    const int counts[] = {1, 17, 4099, 1 << 20};
    for (int i = 0; i < 4; i++) allreduce_f32(counts[i]);
    for (int i = 0; i < 4; i++) allreduce_f16(counts[i], f16, f16_sum);
    allgatherv(1, f16);
    allgatherv(1000, f16);
    alltoallv();
    bcast(1 << 16, f16);

    MPI_CHECK(MPI_Op_free(&f16_sum));
    MPI_CHECK(MPI_Type_free(&f16));
    if (g_rank == 0) printf("horovod_style: %s\n", g_failures ? "FAILED" : "all results correct");
    MPI_Finalize();
    return g_failures ? 1 : 0;
}
