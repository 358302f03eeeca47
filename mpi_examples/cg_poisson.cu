/* cg_poisson.cu: distributed conjugate gradient for the 2-D Poisson problem
 *
 *     -(u_xx + u_yy) = f  on (0,1)^2,  u = 0 on the boundary,
 *
 * 5-point finite differences on an N x N grid of interior points, matrix-free.
 * The exact solution u = x(1-x) y(1-y) (f = 2[x(1-x) + y(1-y)]) is quadratic
 * in x and y, so the discrete solution equals it at the grid points: the
 * error we measure is the solver's, and it must be tiny.
 *
 * Every vector lives in GPU memory and all communication is MPI collectives
 * on device buffers:
 *   - dot products: a CUDA reduction, then MPI_Allreduce(MPI_IN_PLACE) of one
 *     double in device memory;
 *   - halo exchange: each rank owns a band of rows and needs the row just
 *     below and just above it; it packs its first and last rows and
 *     MPI_Allgather's them. That moves 2N values per rank to everyone, fine
 *     for a few dozen ranks; larger codes would use MPI_Alltoallv with
 *     neighbour-only counts or (with a CUDA-aware MPI) MPI_Sendrecv.
 * Without a GPU (or with --host) the same algorithm runs with host loops.
 *
 *   mpirun -n 4 ./cg_poisson [-n N] [--tol 1e-12] [--host] [--require-gpu]
 * Exit status 0 when CG converged and the error is below its bound. */
#include <math.h>

#include "example_util.h"

struct Problem {
    int gpu;
    int N;               /* interior points per direction */
    int rank, size;
    int j0, ny;          /* my rows: global j0 .. j0+ny-1 */
    size_t n;            /* my unknowns: ny * N */
    double *halo_send;   /* my first and last row: 2N values */
    double *halo_all;    /* everyone's: 2N * size values */
    double *dot_buf;     /* one double, reduced in place by MPI */
    double *partials;    /* per-block partial sums of the dot kernel (GPU) */
};

static const int kThreads = 256, kMaxBlocks = 1024;

static int blocks_for(size_t n)
{
    size_t b = (n + kThreads - 1) / kThreads;
    return (int)(b < (size_t)kMaxBlocks ? (b ? b : 1) : kMaxBlocks);
}

/* ---------------- kernels (and the host loops that mirror them) ---------------- */

__global__ void k_pack(const double *p, int N, int ny, double *send)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < N; i += gridDim.x * blockDim.x) {
        send[i] = p[i];                              /* first row */
        send[N + i] = p[(size_t)(ny - 1) * N + i];   /* last row */
    }
}

/* y = A p (times h^2): 4 p_ij - 4 neighbours; rows outside the band come
 * from the halo (NULL at the domain boundary, where u = 0). */
__device__ __host__ inline double stencil(const double *p, int N, int ny, const double *below,
                                          const double *above, int i, int jl)
{
    size_t k = (size_t)jl * N + i;
    double l = i > 0 ? p[k - 1] : 0, r = i < N - 1 ? p[k + 1] : 0;
    double d = jl > 0 ? p[k - N] : (below ? below[i] : 0);
    double u = jl < ny - 1 ? p[k + N] : (above ? above[i] : 0);
    return 4 * p[k] - l - r - d - u;
}

__global__ void k_apply(const double *p, int N, int ny, const double *below, const double *above, double *y)
{
    size_t n = (size_t)N * ny;
    for (size_t k = blockIdx.x * (size_t)blockDim.x + threadIdx.x; k < n; k += (size_t)gridDim.x * blockDim.x)
        y[k] = stencil(p, N, ny, below, above, (int)(k % N), (int)(k / N));
}

__global__ void k_axpy(size_t n, double a, const double *x, double *y)   /* y += a x */
{
    for (size_t k = blockIdx.x * (size_t)blockDim.x + threadIdx.x; k < n; k += (size_t)gridDim.x * blockDim.x)
        y[k] += a * x[k];
}

__global__ void k_xpby(size_t n, const double *x, double b, double *y)   /* y = x + b y */
{
    for (size_t k = blockIdx.x * (size_t)blockDim.x + threadIdx.x; k < n; k += (size_t)gridDim.x * blockDim.x)
        y[k] = x[k] + b * y[k];
}

/* Two-pass dot product with a fixed summation order, so every run (and every
 * rank count on the same data layout) gives the same bits. */
__global__ void k_dot_partial(size_t n, const double *a, const double *b, double *partials)
{
    __shared__ double s[kThreads];
    double acc = 0;
    for (size_t k = blockIdx.x * (size_t)blockDim.x + threadIdx.x; k < n; k += (size_t)gridDim.x * blockDim.x)
        acc += a[k] * b[k];
    s[threadIdx.x] = acc;
    __syncthreads();
    for (int w = blockDim.x / 2; w > 0; w /= 2) {
        if ((int)threadIdx.x < w) s[threadIdx.x] += s[threadIdx.x + w];
        __syncthreads();
    }
    if (threadIdx.x == 0) partials[blockIdx.x] = s[0];
}

__global__ void k_dot_final(int nparts, const double *partials, double *out)
{
    if (threadIdx.x == 0 && blockIdx.x == 0) {
        double acc = 0;
        for (int i = 0; i < nparts; i++) acc += partials[i];
        *out = acc;
    }
}

/* ---------------- the operations CG needs ---------------- */

static void sync_gpu(const Problem &P)
{
    if (P.gpu) {
        CUDA_CHECK(cudaGetLastError());
        CUDA_CHECK(cudaDeviceSynchronize());   /* kernels done before MPI reads */
    }
}

/* Global dot product: local part, then MPI_Allreduce on the (device) double. */
static double dot(const Problem &P, const double *a, const double *b)
{
    if (P.gpu) {
        int nb = blocks_for(P.n);
        k_dot_partial<<<nb, kThreads>>>(P.n, a, b, P.partials);
        k_dot_final<<<1, 1>>>(nb, P.partials, P.dot_buf);
        sync_gpu(P);
    } else {
        double acc = 0;
        for (size_t k = 0; k < P.n; k++) acc += a[k] * b[k];
        *P.dot_buf = acc;
    }
    MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, P.dot_buf, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
    double v;
    ex_from_buf(P.gpu, &v, P.dot_buf, sizeof v);
    return v;
}

/* y = A p, after fetching the neighbours' boundary rows of p. */
static void apply_A(const Problem &P, const double *p, double *y)
{
    if (P.gpu) {
        k_pack<<<blocks_for(P.N), kThreads>>>(p, P.N, P.ny, P.halo_send);
        sync_gpu(P);
    } else {
        memcpy(P.halo_send, p, P.N * sizeof(double));
        memcpy(P.halo_send + P.N, p + (size_t)(P.ny - 1) * P.N, P.N * sizeof(double));
    }
    MPI_CHECK(MPI_Allgather(P.halo_send, 2 * P.N, MPI_DOUBLE, P.halo_all, 2 * P.N, MPI_DOUBLE, MPI_COMM_WORLD));
    /* the row below me is the last row of rank-1; the one above, rank+1's first */
    const double *below = P.rank > 0 ? P.halo_all + (size_t)(P.rank - 1) * 2 * P.N + P.N : NULL;
    const double *above = P.rank < P.size - 1 ? P.halo_all + (size_t)(P.rank + 1) * 2 * P.N : NULL;
    if (P.gpu) {
        k_apply<<<blocks_for(P.n), kThreads>>>(p, P.N, P.ny, below, above, y);
    } else {
        for (size_t k = 0; k < P.n; k++) y[k] = stencil(p, P.N, P.ny, below, above, (int)(k % P.N), (int)(k / P.N));
    }
}

static void axpy(const Problem &P, double a, const double *x, double *y)
{
    if (P.gpu) k_axpy<<<blocks_for(P.n), kThreads>>>(P.n, a, x, y);
    else for (size_t k = 0; k < P.n; k++) y[k] += a * x[k];
}

static void xpby(const Problem &P, const double *x, double b, double *y)
{
    if (P.gpu) k_xpby<<<blocks_for(P.n), kThreads>>>(P.n, x, b, y);
    else for (size_t k = 0; k < P.n; k++) y[k] = x[k] + b * y[k];
}

static double exact(double x, double y) { return x * (1 - x) * y * (1 - y); }

int main(int argc, char **argv)
{
    int N = 128, force_host = 0, require_gpu = 0;
    double tol = 1e-12;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--host")) force_host = 1;
        else if (!strcmp(argv[i], "--require-gpu")) require_gpu = 1;
        else if (!strcmp(argv[i], "-n") && i + 1 < argc) N = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--tol") && i + 1 < argc) tol = atof(argv[++i]);
    }
    MPI_CHECK(MPI_Init(&argc, &argv));
    Problem P;
    memset(&P, 0, sizeof P);
    MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &P.rank));
    MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &P.size));
    P.gpu = example_pick_gpu(force_host);
    if (!P.gpu && require_gpu) {
        if (P.rank == 0) printf("cg_poisson: no GPU, skipped\n");
        MPI_Finalize();
        return 77;
    }
    if (N < P.size) {
        if (P.rank == 0) fprintf(stderr, "cg_poisson: need N >= number of ranks\n");
        MPI_Finalize();
        return 2;
    }

    /* band of rows: the first N % size ranks get one extra */
    P.N = N;
    P.ny = N / P.size + (P.rank < N % P.size);
    P.j0 = P.rank * (N / P.size) + (P.rank < N % P.size ? P.rank : N % P.size);
    P.n = (size_t)P.ny * N;
    const double h = 1.0 / (N + 1);
    const size_t bytes = P.n * sizeof(double);

    double *x = (double *)ex_alloc(P.gpu, bytes), *r = (double *)ex_alloc(P.gpu, bytes);
    double *p = (double *)ex_alloc(P.gpu, bytes), *Ap = (double *)ex_alloc(P.gpu, bytes);
    P.halo_send = (double *)ex_alloc(P.gpu, 2 * N * sizeof(double));
    P.halo_all = (double *)ex_alloc(P.gpu, (size_t)2 * N * P.size * sizeof(double));
    P.dot_buf = (double *)ex_alloc(P.gpu, sizeof(double));
    P.partials = (double *)ex_alloc(P.gpu, kMaxBlocks * sizeof(double));

    /* right-hand side h^2 f at my grid points; x0 = 0 so r0 = p0 = b */
    double *host = (double *)malloc(bytes);
    for (int jl = 0; jl < P.ny; jl++)
        for (int i = 0; i < N; i++) {
            double xc = (i + 1) * h, yc = (P.j0 + jl + 1) * h;
            host[(size_t)jl * N + i] = h * h * 2 * (xc * (1 - xc) + yc * (1 - yc));
        }
    ex_to_buf(P.gpu, r, host, bytes);
    ex_to_buf(P.gpu, p, host, bytes);
    memset(host, 0, bytes);
    ex_to_buf(P.gpu, x, host, bytes);

    const double bb = dot(P, r, r);
    double rr = bb;
    int it = 0;
    const int max_it = 10 * N;
    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    double t0 = MPI_Wtime();
    while (it < max_it && sqrt(rr / bb) > tol) {
        apply_A(P, p, Ap);
        double alpha = rr / dot(P, p, Ap);
        axpy(P, alpha, p, x);
        axpy(P, -alpha, Ap, r);
        double rr_new = dot(P, r, r);
        xpby(P, r, rr_new / rr, p);
        rr = rr_new;
        it++;
    }
    sync_gpu(P);
    double t = MPI_Wtime() - t0;

    /* error against the exact solution, max over all points */
    ex_from_buf(P.gpu, host, x, bytes);
    double err = 0;
    for (int jl = 0; jl < P.ny; jl++)
        for (int i = 0; i < N; i++) {
            double e = fabs(host[(size_t)jl * N + i] - exact((i + 1) * h, (P.j0 + jl + 1) * h));
            if (e > err || e != e) err = e;   /* e != e: NaN counts as failure */
        }
    MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &err, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));

    /* u is at most 1/16; a converged solve leaves rounding-level error, and
     * the bound allows for the condition number (~N^2) times the tolerance */
    const double err_bound = 1e-9 + tol * (double)N * N;
    const int converged = sqrt(rr / bb) <= tol, ok = converged && err <= err_bound;
    if (P.rank == 0) {
        printf("cg_poisson: %d ranks, %s buffers, %d x %d grid\n", P.size, P.gpu ? "device" : "host", N, N);
        printf("cg_poisson: %s in %d iterations (%.1f us each), |r|/|b| = %.2e (tol %.0e)\n",
               converged ? "converged" : "NOT converged", it, it ? t / it * 1e6 : 0.0, sqrt(rr / bb), tol);
        printf("cg_poisson: max error vs exact solution %.2e (bound %.1e): %s\n", err, err_bound,
               ok ? "ok" : "WRONG");
    }

    ex_free(P.gpu, x); ex_free(P.gpu, r); ex_free(P.gpu, p); ex_free(P.gpu, Ap);
    ex_free(P.gpu, P.halo_send); ex_free(P.gpu, P.halo_all);
    ex_free(P.gpu, P.dot_buf); ex_free(P.gpu, P.partials);
    free(host);
    MPI_Finalize();
    return ok ? 0 : 1;
}
