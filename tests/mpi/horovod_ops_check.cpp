// Horovod's fp16 reductions on device buffers, as Horovod's MPI backend
// (HOROVOD_GPU_OPERATIONS=MPI) makes them: MPI_Type_contiguous(2, MPI_BYTE)
// and MPI_Op_create of horovod::common::float16_sum, _min, _max and _prod
// (defined below under those names, exported with -rdynamic as Horovod's
// library exports its own), called from a background thread under
// MPI_THREAD_MULTIPLE. Run with coll_gpu_verbose=50.
//
//   horovod_ops_check [--hvd-path gpu|host] [--declare] [--one-gpu] [--mem host] [--quick]
//
// MPI_Allreduce (also in place), MPI_Iallreduce, MPI_Reduce, MPI_Reduce_
// scatter_block and MPI_Reduce_scatter (uneven counts, as Horovod's
// reducescatter) with each op, 1 to 3 Mi elements, against the user
// function applied on the host in rank order: sum and prod within one fp16
// rounding per rank of the largest partial result, min and max exactly.
// Which path each call took is read from coll/gpu's own verbose lines
// (stderr is captured around the call): --hvd-path gpu requires every
// Horovod-op allreduce, iallreduce, reduce and reduce_scatter_block to run
// on the GPU ("ran peer-to-peer" / "queued on the GPU"), host forbids it
// (coll_gpu_user_op_symbols=none). The same functions under no exported
// name must stay off the GPU, unless --declare declares them through
// coll_gpu_op_declare, which then requires them on the GPU.
// Exit 77 without a GPU. --mem host: the same calls on host buffers, which
// must all stay off the GPU (the program's own check, without a GPU);
// --quick: up to 65537 elements.
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <mpi.h>

#include "coll_gpu_ext.h"
#include "test_gpu.h"

#define EXPORTED __attribute__((visibility("default"), noinline))
namespace {
// horovod/common/half.cc: each pair in fp32, rounded to fp16 (nearest even).
enum HalfOp { H_SUM, H_MIN, H_MAX, H_PROD };
template <HalfOp K> void half_op(void *invec, void *inoutvec, int *len)
{
    const uint16_t *in = static_cast<const uint16_t *>(invec);
    uint16_t *inout = static_cast<uint16_t *>(inoutvec);
    for (int i = 0; i < *len; i++) {
        float a = coll_gpu_ext_half_to_float(in[i]), b = coll_gpu_ext_half_to_float(inout[i]);
        float r = K == H_SUM ? b + a : K == H_PROD ? b * a : K == H_MIN ? (a < b ? a : b) : (b < a ? a : b);
        inout[i] = coll_gpu_ext_float_to_half(r);
    }
}
} // namespace
namespace horovod {
namespace common {
EXPORTED void float16_sum(void *a, void *b, int *n, MPI_Datatype *) { half_op<H_SUM>(a, b, n); }
EXPORTED void float16_min(void *a, void *b, int *n, MPI_Datatype *) { half_op<H_MIN>(a, b, n); }
EXPORTED void float16_max(void *a, void *b, int *n, MPI_Datatype *) { half_op<H_MAX>(a, b, n); }
EXPORTED void float16_prod(void *a, void *b, int *n, MPI_Datatype *) { half_op<H_PROD>(a, b, n); }
} // namespace common
} // namespace horovod
static void plain_sum(void *a, void *b, int *n, MPI_Datatype *) { half_op<H_SUM>(a, b, n); }
static void plain_min(void *a, void *b, int *n, MPI_Datatype *) { half_op<H_MIN>(a, b, n); }
static void plain_max(void *a, void *b, int *n, MPI_Datatype *) { half_op<H_MAX>(a, b, n); }
static void plain_prod(void *a, void *b, int *n, MPI_Datatype *) { half_op<H_PROD>(a, b, n); }

namespace {

int rank, size, checks, failures;
bool on_device = true;

void fail(const std::string &what)
{
    failures++;
    std::printf("FAIL rank %d: %s\n", rank, what.c_str());
    std::fflush(stdout);
}

// This process's stderr in a file while a call runs, then copied back to
// the real stderr (the log keeps it) and returned.
class Capture {
  public:
    Capture()
    {
        std::fflush(stderr);
        file_ = std::tmpfile();
        saved_ = dup(2);
        if (file_ != nullptr && saved_ >= 0) dup2(fileno(file_), 2);
    }
    std::string end()
    {
        std::string text;
        std::fflush(stderr);
        if (file_ == nullptr || saved_ < 0) return text;
        dup2(saved_, 2);
        close(saved_);
        std::rewind(file_);
        char buf[4096];
        for (size_t n; (n = std::fread(buf, 1, sizeof buf, file_)) > 0;) text.append(buf, n);
        std::fclose(file_);
        if (!text.empty()) std::fwrite(text.data(), 1, text.size(), stderr);
        return text;
    }

  private:
    FILE *file_ = nullptr;
    int saved_ = -1;
};

bool on_gpu(const std::string &log)
{
    return log.find("ran peer-to-peer") != std::string::npos || log.find("queued on the GPU") != std::string::npos;
}

struct OpCase {
    const char *name;
    MPI_Op op;
    MPI_User_function *fn;
    bool exact; // min/max: bit for bit
    bool gpu;   // must run on the GPU (else: must not)
};

// Rank r's element i: nonzero, mixed signs and exponents (sums round);
// near 1 for products (no overflow at 4 ranks).
uint16_t input(int r, size_t i, bool prod)
{
    float v = prod ? 1.0f + (float)((int)((i * 13 + r * 7) % 17) - 8) / 16.0f
                   : (float)(1 + (i * 37 + r * 11) % 61) * ((i + r) % 3 == 0 ? -0.0625f : 0.0390625f) + 0.001f * r;
    return coll_gpu_ext_float_to_half(v);
}

float ulp16(float x)
{
    x = std::fabs(x);
    if (x < 6.103515625e-05f) return 5.9604645e-08f; // subnormal spacing, 2^-24
    return std::ldexp(1.0f, std::ilogb(x) - 10);
}

// The user function over ranks 0..size-1 of element i, and the bound on
// what the GPU may differ by (one rounding per rank of the largest partial).
uint16_t reference(const OpCase &c, size_t i, float *slack)
{
    bool prod = c.fn == horovod::common::float16_prod || c.fn == plain_prod;
    uint16_t acc = input(0, i, prod);
    float most = std::fabs(coll_gpu_ext_half_to_float(acc));
    for (int r = 1; r < size; r++) {
        uint16_t in = input(r, i, prod);
        int one = 1;
        c.fn(&in, &acc, &one, nullptr);
        most = std::fmax(most, std::fabs(coll_gpu_ext_half_to_float(acc)));
    }
    *slack = (float)size * ulp16(most);
    return acc;
}

} // namespace

namespace {

struct Run {
    MPI_Datatype half;
    uint16_t *d_in = nullptr, *d_out = nullptr;
    std::vector<uint16_t> host;
};

// This rank's inputs for global elements [first, first + n) into d.
void put_inputs(const OpCase &c, uint16_t *d, size_t first, size_t n, std::vector<uint16_t> &host)
{
    bool prod = c.fn == horovod::common::float16_prod || c.fn == plain_prod;
    host.resize(n);
    for (size_t i = 0; i < n; i++) host[i] = input(rank, first + i, prod);
    test_mem_put(on_device, d, host.data(), n * 2);
}

// d[0, n) against the reduction of global elements [first, first + n).
void verify(const OpCase &c, const uint16_t *d, size_t first, size_t n, int rc, const std::string &what)
{
    checks++;
    if (rc != MPI_SUCCESS) return fail(what + ": returned " + std::to_string(rc));
    std::vector<uint16_t> got(n);
    test_mem_get(on_device, got.data(), d, n * 2);
    for (size_t i = 0; i < n; i++) {
        float slack;
        uint16_t want = reference(c, first + i, &slack);
        float g = coll_gpu_ext_half_to_float(got[i]), w = coll_gpu_ext_half_to_float(want);
        bool ok = c.exact ? got[i] == want : std::isfinite(g) && std::fabs(g - w) <= slack;
        if (ok) continue;
        char msg[200];
        std::snprintf(msg, sizeof msg, ": element %zu: got %g (0x%04x), the user function gives %g (0x%04x)",
                      first + i, g, got[i], w, want);
        return fail(what + msg);
    }
}

void expect_path(const OpCase &c, const std::string &log, const std::string &what, bool asserted = true)
{
    if (!asserted) return;
    checks++;
    if (on_gpu(log) == c.gpu) return;
    fail(what + (c.gpu ? ": did not run on the GPU (no \"ran peer-to-peer\" / \"queued on the GPU\" line of "
                         "coll_gpu_verbose=50)"
                       : ": ran on the GPU, but this op must stay on the host"));
}

std::string label(const char *call, const OpCase &c, size_t n)
{
    return std::string(call) + " " + c.name + " n=" + std::to_string(n);
}

void allreduce(Run &r, const OpCase &c, size_t n, bool in_place)
{
    put_inputs(c, in_place ? r.d_out : r.d_in, 0, n, r.host);
    Capture cap;
    int rc = MPI_Allreduce(in_place ? MPI_IN_PLACE : r.d_in, r.d_out, (int)n, r.half, c.op, MPI_COMM_WORLD);
    std::string what = label(in_place ? "MPI_Allreduce in place" : "MPI_Allreduce", c, n);
    expect_path(c, cap.end(), what);
    verify(c, r.d_out, 0, n, rc, what);
}

void iallreduce(Run &r, const OpCase &c, size_t n)
{
    put_inputs(c, r.d_in, 0, n, r.host);
    Capture cap;
    MPI_Request req;
    int rc = MPI_Iallreduce(r.d_in, r.d_out, (int)n, r.half, c.op, MPI_COMM_WORLD, &req);
    if (rc == MPI_SUCCESS) rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
    std::string what = label("MPI_Iallreduce", c, n);
    expect_path(c, cap.end(), what);
    verify(c, r.d_out, 0, n, rc, what);
}

void reduce(Run &r, const OpCase &c, size_t n)
{
    const int root = size - 1;
    put_inputs(c, r.d_in, 0, n, r.host);
    Capture cap;
    int rc = MPI_Reduce(r.d_in, r.d_out, (int)n, r.half, c.op, root, MPI_COMM_WORLD);
    std::string what = label("MPI_Reduce", c, n);
    expect_path(c, cap.end(), what);
    if (rank == root) verify(c, r.d_out, 0, n, rc, what);
    else if (rc != MPI_SUCCESS) fail(what + ": returned " + std::to_string(rc));
}

void reduce_scatter_block(Run &r, const OpCase &c, size_t n)
{
    put_inputs(c, r.d_in, 0, n * size, r.host);
    Capture cap;
    int rc = MPI_Reduce_scatter_block(r.d_in, r.d_out, (int)n, r.half, c.op, MPI_COMM_WORLD);
    std::string what = label("MPI_Reduce_scatter_block", c, n);
    expect_path(c, cap.end(), what);
    verify(c, r.d_out, n * rank, n, rc, what);
}

// Horovod's reducescatter: MPI_Reduce_scatter with uneven counts. Its path
// is not asserted: the vector reductions' glue does not map user ops yet.
void reduce_scatter(Run &r, const OpCase &c, size_t n)
{
    std::vector<int> counts(size);
    size_t total = 0, first = 0;
    for (int q = 0; q < size; q++) {
        counts[q] = (int)(n + (size_t)q * (n / 3 + 1));
        if (q < rank) first += counts[q];
        total += counts[q];
    }
    put_inputs(c, r.d_in, 0, total, r.host);
    Capture cap;
    int rc = MPI_Reduce_scatter(r.d_in, r.d_out, counts.data(), r.half, c.op, MPI_COMM_WORLD);
    std::string what = label("MPI_Reduce_scatter", c, n);
    expect_path(c, cap.end(), what, false);
    verify(c, r.d_out, first, counts[rank], rc, what);
}

// A float allreduce on the GPU first: the path must be up, so that a user-op
// call staged later is staged for its op, not for a missing GPU path.
void warm_up(Run &r)
{
    MPI_Barrier(MPI_COMM_WORLD);
    float *d = reinterpret_cast<float *>(r.d_in);
    std::vector<float> zeros(4096, 0.0f);
    test_mem_put(on_device, d, zeros.data(), zeros.size() * sizeof(float));
    Capture cap;
    int rc = MPI_Allreduce(MPI_IN_PLACE, d, 4096, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    std::string log = cap.end();
    checks++;
    if (rc != MPI_SUCCESS || (on_device && log.find("ran peer-to-peer") == std::string::npos))
        fail("warm-up float MPI_Allreduce did not run on the GPU (run with coll_gpu_verbose=50, and "
             "coll_gpu_shared_gpu=1 where ranks share a GPU): nothing here could be told apart");
}

} // namespace

namespace {

struct Options {
    bool hvd_gpu = true, declare = false, one_gpu = false, mem_host = false, quick = false;
};

// Horovod's type and ops (mpi_context.cc's CreateMPIFloat16TypeAndOps), and
// the same functions without an exported name; those declared on request.
std::vector<OpCase> make_ops(MPI_Datatype half, const Options &o, const coll_gpu_ext_t &ext)
{
    struct {
        const char *name;
        MPI_User_function *fn;
        bool exact, hvd;
        MPI_Op as;
    } defs[] = {{"horovod float16_sum", horovod::common::float16_sum, false, true, MPI_SUM},
                {"horovod float16_min", horovod::common::float16_min, true, true, MPI_MIN},
                {"horovod float16_max", horovod::common::float16_max, true, true, MPI_MAX},
                {"horovod float16_prod", horovod::common::float16_prod, false, true, MPI_PROD},
                {"unexported fp16 sum", plain_sum, false, false, MPI_SUM},
                {"unexported fp16 min", plain_min, true, false, MPI_MIN},
                {"unexported fp16 max", plain_max, true, false, MPI_MAX},
                {"unexported fp16 prod", plain_prod, false, false, MPI_PROD}};
    std::vector<OpCase> ops;
    for (auto &d : defs) {
        OpCase c{d.name, MPI_OP_NULL, d.fn, d.exact, on_device && (d.hvd ? o.hvd_gpu : o.declare)};
        MPI_Op_create(d.fn, 1, &c.op);
        if (!d.hvd && o.declare) {
            int rc = coll_gpu_op_declare(c.op, half, ext.float16, d.as);
            checks++;
            if (rc != MPI_SUCCESS) fail(std::string("coll_gpu_op_declare of ") + d.name + ": " + std::to_string(rc));
        }
        ops.push_back(c);
    }
    return ops;
}

void body(const Options &o, int device)
{
    if (device >= 0) cudaSetDevice(device); // the current GPU is per thread
    coll_gpu_ext_t ext;
    coll_gpu_ext_init(&ext);
    Run r;
    MPI_Type_contiguous(2, MPI_BYTE, &r.half);
    MPI_Type_commit(&r.half);
    std::vector<OpCase> ops = make_ops(r.half, o, ext);
    const size_t counts[] = {1, 7, 1000, 65537, 1 << 20, 3 << 20};
    // Elements: twice the largest count covers reduce_scatter's uneven blocks.
    const size_t most = (size_t)(3 << 20) * 2;
    r.d_in = static_cast<uint16_t *>(test_mem_alloc(on_device, -1, most * 2 * (size_t)size));
    r.d_out = static_cast<uint16_t *>(test_mem_alloc(on_device, -1, most * 2));
    warm_up(r);
    for (size_t n : counts)
        for (const OpCase &c : ops) {
            if (o.quick && n > 65537) break;
            allreduce(r, c, n, false);
            allreduce(r, c, n, true);
            iallreduce(r, c, n);
            reduce(r, c, n);
            size_t per_rank = n / (size_t)size + 1;
            reduce_scatter_block(r, c, per_rank);
            reduce_scatter(r, c, per_rank);
        }
    for (OpCase &c : ops) MPI_Op_free(&c.op);
    MPI_Type_free(&r.half);
    coll_gpu_ext_free(&ext);
    test_mem_free(on_device, r.d_in);
    test_mem_free(on_device, r.d_out);
}

Options parse(int argc, char **argv)
{
    Options o;
    for (int i = 1; i < argc; i++) {
        if (!std::strcmp(argv[i], "--one-gpu")) o.one_gpu = true;
        else if (!std::strcmp(argv[i], "--declare")) o.declare = true;
        else if (!std::strcmp(argv[i], "--quick")) o.quick = true;
        else if (!std::strcmp(argv[i], "--hvd-path") && i + 1 < argc) o.hvd_gpu = !std::strcmp(argv[++i], "gpu");
        else if (!std::strcmp(argv[i], "--mem") && i + 1 < argc) o.mem_host = !std::strcmp(argv[++i], "host");
    }
    return o;
}

} // namespace

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided); // as Horovod asks
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    Options o = parse(argc, argv);
    on_device = !o.mem_host;
    int device = on_device ? test_select_gpu(o.one_gpu, nullptr, nullptr) : -1;
    if (on_device && device < 0) {
        if (rank == 0) std::printf("horovod_ops_check: no GPU: skipped\n");
        MPI_Finalize();
        return 77;
    }
    // Without coll/gpu Open MPI's own reductions read these device buffers on the host.
    if (dlsym(RTLD_DEFAULT, "coll_gpu_impl_op_declare") == nullptr) {
        fail("coll/gpu is not loaded in this process (no coll_gpu_impl_op_declare)");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    // Horovod's collectives come from its background thread.
    if (provided == MPI_THREAD_MULTIPLE) std::thread(body, o, device).join();
    else body(o, device);
    std::printf("horovod_ops_check (rank %d, %d ranks, %s buffers, Horovod ops on the %s%s): %d checks, %d failed\n",
                rank, size, on_device ? "device" : "host", on_device && o.hvd_gpu ? "GPU" : "host",
                o.declare ? ", others declared" : "", checks, failures);
    MPI_Finalize();
    return failures || checks == 0 ? 1 : 0;
}
