// User ops the glue maps onto the kernels (mca_coll_gpu/coll_gpu_dtype.c,
// linked here as the component links it), without a GPU:
// - Horovod's fp16 ops, made as horovod/common/mpi/mpi_context.cc makes them
//   (MPI_Type_contiguous(2, MPI_BYTE), MPI_Op_create of
//   horovod::common::float16_sum & co., defined below under their names and
//   exported with -rdynamic, as Horovod's library exports its own), must map
//   as --expect says for the coll_gpu_user_op_symbols value of --symbols;
// - the kernels' element operation (kernels/reduce_ops.cuh on the host, with
//   fp16 conversions as cuda_fp16's __half2float / __float2half_rn) of each
//   mapped op must give what MPI_Reduce_local with the user op gives;
// - layouts the kernels cannot read, predefined ops on the derived type,
//   other functions, a freed op's handle reused, stay on the host;
// - coll_gpu_op_declare (the header's call, finding the implementation
//   linked here by name): every misuse refused with its MPI error class,
//   declarations mapped (and checked like the above), keyed by function;
// - threads racing the first lookups agree with one thread's answers;
// - at 2+ ranks, MPI_Allreduce with Horovod's ops on host buffers (through
//   the component) equal to the user function applied in rank order.
#include "kernel_host_shim.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <mpi.h>

#include "coll_gpu_ext.h"
#include "gpucoll_types.h"
#include "reduce_ops.cuh"

extern "C" bool coll_gpu_map_reduction(MPI_Datatype dtype, MPI_Op op, gpucoll_dtype_t *d, gpucoll_op_t *o);
extern "C" char *coll_gpu_user_op_symbols;

// The kernels' fp16 conversions, on the host: exact widening, and rounding to
// nearest even (what __half2float and __float2half_rn do).
float gpu_half_bits_to_float(uint16_t bits) { return coll_gpu_ext_half_to_float(bits); }
uint16_t gpu_float_to_half_bits(float f) { return coll_gpu_ext_float_to_half(f); }

#define EXPORTED __attribute__((visibility("default"), noinline))
namespace {
// Horovod's half.cc semantics: each pair in fp32, rounded to fp16.
enum HalfOp { H_SUM, H_MIN, H_MAX, H_PROD };
template <HalfOp K, bool Bf16 = false> void half_op(void *invec, void *inoutvec, int *len)
{
    const uint16_t *in = static_cast<const uint16_t *>(invec);
    uint16_t *inout = static_cast<uint16_t *>(inoutvec);
    for (int i = 0; i < *len; i++) {
        float a = Bf16 ? coll_gpu_ext_bf16_to_float(in[i]) : coll_gpu_ext_half_to_float(in[i]);
        float b = Bf16 ? coll_gpu_ext_bf16_to_float(inout[i]) : coll_gpu_ext_half_to_float(inout[i]);
        float r = K == H_SUM ? b + a : K == H_PROD ? b * a : K == H_MIN ? (a < b ? a : b) : (b < a ? a : b);
        inout[i] = Bf16 ? coll_gpu_ext_float_to_bf16(r) : coll_gpu_ext_float_to_half(r);
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
// The same computations under no dynamic symbol: never recognised, only declared.
static void plain_half_sum(void *a, void *b, int *n, MPI_Datatype *) { half_op<H_SUM>(a, b, n); }
static void plain_half_max(void *a, void *b, int *n, MPI_Datatype *) { half_op<H_MAX>(a, b, n); }
static void plain_bf16_sum(void *a, void *b, int *n, MPI_Datatype *) { half_op<H_SUM, true>(a, b, n); }
static void plain_float_sum(void *a, void *b, int *n, MPI_Datatype *)
{
    for (int i = 0; i < *n; i++) static_cast<float *>(b)[i] += static_cast<const float *>(a)[i];
}

namespace {

int checks, failures;
void check(bool ok, const char *what, const std::string &detail = "")
{
    checks++;
    if (ok) return;
    failures++;
    std::printf("FAIL %s%s%s\n", what, detail.empty() ? "" : ": ", detail.c_str());
}

struct Mapped {
    gpucoll_dtype_t d;
    gpucoll_op_t o;
};
Mapped map(MPI_Datatype t, MPI_Op op)
{
    Mapped m{GPUCOLL_DTYPE_NONE, GPUCOLL_OP_NONE};
    bool ok = coll_gpu_map_reduction(t, op, &m.d, &m.o);
    if (ok != (m.o != GPUCOLL_OP_NONE)) std::printf("FAIL map: returned %d with op %d\n", ok, (int)m.o), failures++;
    return m;
}
std::string name(Mapped m) { return std::string(gpucoll_dtype_name(m.d)) + "/" + gpucoll_op_name(m.o); }
void check_map(MPI_Datatype t, MPI_Op op, gpucoll_dtype_t d, gpucoll_op_t o, const char *what)
{
    Mapped m = map(t, op);
    check(m.o == o && (o == GPUCOLL_OP_NONE || m.d == d), what,
          "mapped onto " + name(m) + ", expected " + name(Mapped{d, o}));
}

uint64_t rng = 0x9e3779b97f4a7c15ull;
uint16_t random_bits(bool bf16)
{
    for (;;) {
        rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
        uint16_t h = (uint16_t)rng;
        bool finite = bf16 ? (h & 0x7f80) != 0x7f80 : (h & 0x7c00) != 0x7c00;
        if (finite) return h; // nan and inf: MPI leaves MIN/MAX of nan unspecified
    }
}

template <class T, class Op> void kernel_apply(const uint16_t *in, uint16_t *inout, size_t n)
{
    using namespace gpucoll;
    for (size_t i = 0; i < n; i++) {
        T a{in[i]}, b{inout[i]};
        inout[i] = Acc<T>::store(Op::apply(Acc<T>::load(a), Acc<T>::load(b))).bits;
    }
}
template <class T> bool kernel_reduce(gpucoll_op_t o, const uint16_t *in, uint16_t *inout, size_t n)
{
    using namespace gpucoll;
    switch (o) {
    case GPUCOLL_OP_SUM: kernel_apply<T, OpSum>(in, inout, n); return true;
    case GPUCOLL_OP_PROD: kernel_apply<T, OpProd>(in, inout, n); return true;
    case GPUCOLL_OP_MAX: kernel_apply<T, OpMax>(in, inout, n); return true;
    case GPUCOLL_OP_MIN: kernel_apply<T, OpMin>(in, inout, n); return true;
    default: return false;
    }
}

// The kernels' element operation for what `op` maps onto, against
// MPI_Reduce_local with `op` (the user's function), on 4096 pairs.
void check_meaning(MPI_Datatype t, MPI_Op op, const char *what)
{
    Mapped m = map(t, op);
    if (m.d != GPUCOLL_FLOAT16 && m.d != GPUCOLL_BFLOAT16) return check(false, what, "mapped onto " + name(m));
    const bool bf16 = m.d == GPUCOLL_BFLOAT16;
    const size_t n = 4096;
    std::vector<uint16_t> in(n), orig(n), want, got;
    for (size_t i = 0; i < n; i++) in[i] = random_bits(bf16), orig[i] = random_bits(bf16);
    want = got = orig;
    MPI_Reduce_local(in.data(), want.data(), (int)n, t, op);
    bool ran = bf16 ? kernel_reduce<gpucoll::bf16_t>(m.o, in.data(), got.data(), n)
                    : kernel_reduce<gpucoll::half_t>(m.o, in.data(), got.data(), n);
    size_t bad = n;
    for (size_t i = 0; ran && i < n && bad == n; i++)
        if (want[i] != got[i]) bad = i;
    char detail[160] = "";
    if (bad < n)
        std::snprintf(detail, sizeof detail, "%s: element %zu: 0x%04x op 0x%04x: kernel 0x%04x, user function 0x%04x",
                      name(m).c_str(), bad, in[bad], orig[bad], got[bad], want[bad]);
    check(ran && bad == n, what, detail);
}

} // namespace

namespace {

struct Hvd {
    MPI_Datatype half;
    MPI_Op sum, min, max, prod;
};
// As horovod/common/mpi/mpi_context.cc's CreateMPIFloat16TypeAndOps.
Hvd make_horovod()
{
    Hvd h;
    MPI_Type_contiguous(2, MPI_BYTE, &h.half);
    MPI_Type_commit(&h.half);
    MPI_Op_create(&horovod::common::float16_sum, 1, &h.sum);
    MPI_Op_create(&horovod::common::float16_min, 1, &h.min);
    MPI_Op_create(&horovod::common::float16_max, 1, &h.max);
    MPI_Op_create(&horovod::common::float16_prod, 1, &h.prod);
    return h;
}

// --expect: which of sum,min,max,prod the --symbols value names.
struct Expect {
    bool sum = true, min = true, max = true, prod = true;
};

void check_horovod(const Hvd &h, const Expect &e)
{
    struct {
        MPI_Op op;
        bool on;
        gpucoll_op_t o;
        const char *what;
    } ops[] = {{h.sum, e.sum, GPUCOLL_OP_SUM, "Horovod float16_sum"},
               {h.min, e.min, GPUCOLL_OP_MIN, "Horovod float16_min"},
               {h.max, e.max, GPUCOLL_OP_MAX, "Horovod float16_max"},
               {h.prod, e.prod, GPUCOLL_OP_PROD, "Horovod float16_prod"}};
    MPI_Datatype dup;
    MPI_Type_dup(h.half, &dup);
    for (auto &x : ops) {
        check_map(h.half, x.op, GPUCOLL_FLOAT16, x.on ? x.o : GPUCOLL_OP_NONE, x.what);
        check_map(dup, x.op, GPUCOLL_FLOAT16, x.on ? x.o : GPUCOLL_OP_NONE, "the same on a dup of the type");
        if (x.on) check_meaning(h.half, x.op, x.what);
    }
    MPI_Type_free(&dup);
}

// What the kernels cannot read as fp16, or what is not the user function.
void check_left_to_host(const Hvd &h)
{
    MPI_Datatype four, strided, wide, shifted;
    MPI_Type_contiguous(4, MPI_BYTE, &four);
    MPI_Type_vector(2, 1, 2, MPI_BYTE, &strided); // 2 bytes with a hole
    MPI_Type_create_resized(h.half, 0, 4, &wide); // 2 bytes every 4
    int len = 2;
    MPI_Aint disp = 2;
    MPI_Type_create_hindexed(1, &len, &disp, MPI_BYTE, &shifted); // data 2 bytes after the buffer
    MPI_Datatype types[] = {four, strided, wide, shifted};
    for (MPI_Datatype &t : types) MPI_Type_commit(&t);
    check_map(four, h.sum, GPUCOLL_FLOAT16, GPUCOLL_OP_NONE, "float16_sum on 4-byte elements");
    check_map(strided, h.sum, GPUCOLL_FLOAT16, GPUCOLL_OP_NONE, "float16_sum on a 2-byte type with a hole");
    check_map(wide, h.sum, GPUCOLL_FLOAT16, GPUCOLL_OP_NONE, "float16_sum on a type of extent 4");
    check_map(shifted, h.sum, GPUCOLL_FLOAT16, GPUCOLL_OP_NONE, "float16_sum on data at offset 2");
    check_map(MPI_SHORT, h.sum, GPUCOLL_FLOAT16, GPUCOLL_OP_NONE, "float16_sum on MPI_SHORT (predefined)");
    check_map(h.half, MPI_SUM, GPUCOLL_FLOAT16, GPUCOLL_OP_NONE, "MPI_SUM on the derived type");
    for (MPI_Datatype &t : types) MPI_Type_free(&t);
    // A handle freed and handed out again for another function.
    MPI_Op once, other;
    MPI_Op_create(&horovod::common::float16_sum, 1, &once);
    MPI_Op old = once;
    MPI_Op_free(&once);
    MPI_Op_create(&plain_half_sum, 1, &other);
    std::printf("handle of a freed op %s reused\n", other == old ? "was" : "was not");
    check_map(h.half, other, GPUCOLL_FLOAT16, GPUCOLL_OP_NONE, "an undeclared function on a reused handle");
    MPI_Op_free(&other);
}

void check_refusals(const Hvd &h, const coll_gpu_ext_t &ext, MPI_Op plain_sum, MPI_Op float_sum)
{
    MPI_Datatype loose, strided;
    MPI_Type_contiguous(2, MPI_BYTE, &loose); // never committed
    MPI_Type_vector(2, 1, 2, MPI_BYTE, &strided);
    MPI_Type_commit(&strided);
    struct {
        MPI_Op op;
        MPI_Datatype type, as_type;
        MPI_Op as_op;
        int want;
        const char *what;
    } bad[] = {
        {MPI_SUM, h.half, ext.float16, MPI_SUM, MPI_ERR_OP, "user_op predefined"},
        {MPI_OP_NULL, h.half, ext.float16, MPI_SUM, MPI_ERR_OP, "user_op MPI_OP_NULL"},
        {plain_sum, MPI_DATATYPE_NULL, ext.float16, MPI_SUM, MPI_ERR_TYPE, "user_type MPI_DATATYPE_NULL"},
        {plain_sum, loose, ext.float16, MPI_SUM, MPI_ERR_TYPE, "user_type not committed"},
        {plain_sum, strided, ext.float16, MPI_SUM, MPI_ERR_TYPE, "user_type with a hole"},
        {plain_sum, h.half, MPI_DATATYPE_NULL, MPI_SUM, MPI_ERR_TYPE, "as_type MPI_DATATYPE_NULL"},
        {plain_sum, h.half, h.half, MPI_SUM, MPI_ERR_TYPE, "as_type an unnamed derived type"},
        {plain_sum, h.half, MPI_FLOAT, MPI_SUM, MPI_ERR_TYPE, "as_type of another size"},
        {plain_sum, h.half, MPI_2INT, MPI_MAXLOC, MPI_ERR_TYPE, "as_type a pair type"},
        {plain_sum, h.half, ext.float16, MPI_BAND, MPI_ERR_OP, "as_op bitwise on float16"},
        {plain_sum, h.half, ext.float16, MPI_MAXLOC, MPI_ERR_OP, "as_op MPI_MAXLOC"},
        {plain_sum, h.half, ext.float16, MPI_OP_NULL, MPI_ERR_OP, "as_op MPI_OP_NULL"},
        {plain_sum, h.half, ext.float16, h.sum, MPI_ERR_OP, "as_op a user op"},
        {plain_sum, h.half, ext.float16, ext.bfloat16_sum, MPI_ERR_OP, "as_op the bf16 op on float16"},
        {float_sum, MPI_FLOAT, MPI_INT16_T, MPI_SUM, MPI_ERR_TYPE, "sizes differ (predefined)"},
    };
    for (auto &b : bad) {
        int rc = coll_gpu_op_declare(b.op, b.type, b.as_type, b.as_op);
        int cls = -1;
        if (rc != MPI_SUCCESS) MPI_Error_class(rc, &cls);
        check(cls == b.want, b.what, "returned " + std::to_string(rc) + ", class " + std::to_string(cls));
    }
    check_map(h.half, plain_sum, GPUCOLL_FLOAT16, GPUCOLL_OP_NONE, "nothing declared by the refused calls");
    MPI_Type_free(&loose);
    MPI_Type_free(&strided);
}

void check_declared(const Hvd &h, const coll_gpu_ext_t &ext, MPI_Op plain_sum, MPI_Op float_sum)
{
    check(coll_gpu_op_declare(plain_sum, h.half, ext.float16, MPI_SUM) == MPI_SUCCESS, "declare fp16 sum");
    check_map(h.half, plain_sum, GPUCOLL_FLOAT16, GPUCOLL_OP_SUM, "a declared fp16 sum");
    check_meaning(h.half, plain_sum, "a declared fp16 sum");
    check(coll_gpu_op_declare(plain_sum, h.half, ext.float16, ext.float16_sum) == MPI_SUCCESS,
          "the same declaration again (the header's op for MPI_SUM)");
    int rc = coll_gpu_op_declare(plain_sum, h.half, ext.float16, MPI_MAX), cls = -1;
    if (rc != MPI_SUCCESS) MPI_Error_class(rc, &cls);
    check(cls == MPI_ERR_ARG, "another meaning for a declared function", "class " + std::to_string(cls));
    check_map(h.half, plain_sum, GPUCOLL_FLOAT16, GPUCOLL_OP_SUM, "the first declaration stays");
    // Keyed by the function: another op of it maps alike, on any such layout.
    MPI_Op again;
    MPI_Datatype bytes2;
    MPI_Op_create(&plain_half_sum, 1, &again);
    MPI_Type_contiguous(1, MPI_UINT16_T, &bytes2);
    MPI_Type_commit(&bytes2);
    check_map(bytes2, again, GPUCOLL_FLOAT16, GPUCOLL_OP_SUM, "another op of the declared function");
    MPI_Op_free(&again);
    MPI_Type_free(&bytes2);

    MPI_Op max_op, bf16_op;
    MPI_Op_create(&plain_half_max, 1, &max_op);
    MPI_Op_create(&plain_bf16_sum, 1, &bf16_op);
    check(coll_gpu_op_declare(max_op, h.half, ext.float16, ext.float16_max) == MPI_SUCCESS, "declare fp16 max");
    check_meaning(h.half, max_op, "a declared fp16 max");
    check(coll_gpu_op_declare(bf16_op, h.half, ext.bfloat16, MPI_SUM) == MPI_SUCCESS, "declare bf16 sum");
    check_meaning(h.half, bf16_op, "a declared bf16 sum");
    // On a predefined type: that type only.
    check(coll_gpu_op_declare(float_sum, MPI_FLOAT, MPI_FLOAT, MPI_SUM) == MPI_SUCCESS, "declare a float sum");
    check_map(MPI_FLOAT, float_sum, GPUCOLL_FLOAT32, GPUCOLL_OP_SUM, "a declared sum on MPI_FLOAT");
    check_map(MPI_INT, float_sum, GPUCOLL_FLOAT32, GPUCOLL_OP_NONE, "that sum on MPI_INT");
    MPI_Datatype four;
    MPI_Type_contiguous(4, MPI_BYTE, &four);
    MPI_Type_commit(&four);
    check_map(four, float_sum, GPUCOLL_FLOAT32, GPUCOLL_OP_NONE, "that sum on a derived 4-byte type");
    MPI_Type_free(&four);
    MPI_Op_free(&max_op);
    MPI_Op_free(&bf16_op);
}

// Threads asking at once, before any single-threaded lookup: the first parse
// of the parameter and each function's first lookup race here.
void check_threads(const Hvd &h, const Expect &e, MPI_Op plain_sum)
{
    const MPI_Op ops[] = {h.sum, h.min, h.max, h.prod, plain_sum};
    const gpucoll_op_t want[] = {e.sum ? GPUCOLL_OP_SUM : GPUCOLL_OP_NONE, e.min ? GPUCOLL_OP_MIN : GPUCOLL_OP_NONE,
                                 e.max ? GPUCOLL_OP_MAX : GPUCOLL_OP_NONE, e.prod ? GPUCOLL_OP_PROD : GPUCOLL_OP_NONE,
                                 GPUCOLL_OP_NONE};
    std::atomic<int> wrong{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 6; t++)
        threads.emplace_back([&, t] {
            for (int i = 0; i < 3000; i++) {
                int k = (i * 7 + t) % 5;
                gpucoll_dtype_t d;
                gpucoll_op_t o;
                coll_gpu_map_reduction(h.half, ops[k], &d, &o);
                wrong += o != want[k];
            }
        });
    for (auto &t : threads) t.join();
    check(wrong == 0, "threads' answers", std::to_string(wrong.load()) + " wrong");
}

// Host buffers through the component: the user function, in rank order.
void check_host_allreduce(const Hvd &h, int rank, int size)
{
    const int n = 1031;
    MPI_Op ops[] = {h.sum, h.min, h.max, h.prod};
    for (MPI_Op op : ops) {
        std::vector<uint16_t> mine(n), got(n), want(n);
        for (int r = 0; r < size; r++)
            for (int i = 0; i < n; i++) {
                uint16_t v = coll_gpu_ext_float_to_half(0.5f + 0.25f * (float)((i * 31 + r * 17) % 13) + 0.001f * r);
                if (r == rank) mine[i] = v;
                if (r == 0) want[i] = v;
                else {
                    int one = 1;
                    uint16_t in = v;
                    MPI_User_function *fn = op == h.sum   ? horovod::common::float16_sum
                                            : op == h.min ? horovod::common::float16_min
                                            : op == h.max ? horovod::common::float16_max
                                                          : horovod::common::float16_prod;
                    uint16_t acc = want[i];
                    fn(&in, &acc, &one, nullptr);
                    want[i] = acc;
                }
            }
        int rc = MPI_Allreduce(mine.data(), got.data(), n, h.half, op, MPI_COMM_WORLD);
        size_t bad = n;
        for (int i = 0; i < n && bad == (size_t)n; i++) {
            float g = coll_gpu_ext_half_to_float(got[i]), w = coll_gpu_ext_half_to_float(want[i]);
            // Open MPI's own order of pairs: one fp16 rounding per rank at most.
            if (g - w > 0.002f * size * (w < 0 ? -w : w) || w - g > 0.002f * size * (w < 0 ? -w : w)) bad = i;
        }
        check(rc == MPI_SUCCESS && bad == (size_t)n, "MPI_Allreduce on host buffers with a Horovod op",
              bad < (size_t)n ? "element " + std::to_string(bad) : "");
    }
}

Expect parse_expect(const char *s)
{
    Expect e;
    std::string v = s;
    e.sum = v.find("sum") != std::string::npos;
    e.min = v.find("min") != std::string::npos;
    e.max = v.find("max") != std::string::npos;
    e.prod = v.find("prod") != std::string::npos;
    return e;
}

} // namespace

int main(int argc, char **argv)
{
    Expect expect;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (std::strcmp(argv[i], "--symbols") == 0) coll_gpu_user_op_symbols = argv[i + 1];
        else if (std::strcmp(argv[i], "--expect") == 0) expect = parse_expect(argv[i + 1]);
    }
    int provided, rank, size;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    coll_gpu_ext_t ext;
    coll_gpu_ext_init(&ext);
    Hvd h = make_horovod();
    MPI_Op plain_sum, float_sum;
    MPI_Op_create(&plain_half_sum, 1, &plain_sum);
    MPI_Op_create(&plain_float_sum, 1, &float_sum);

    check_threads(h, expect, plain_sum);
    check_horovod(h, expect);
    check_left_to_host(h);
    check_refusals(h, ext, plain_sum, float_sum);
    check_declared(h, ext, plain_sum, float_sum);
    if (size > 1) check_host_allreduce(h, rank, size);

    std::printf("user_op_map_check (rank %d): %d checks, %d failed\n", rank, checks, failures);
    MPI_Op *ops[] = {&h.sum, &h.min, &h.max, &h.prod, &plain_sum, &float_sum};
    for (MPI_Op *op : ops) MPI_Op_free(op);
    MPI_Type_free(&h.half);
    coll_gpu_ext_free(&ext);
    MPI_Finalize();
    return failures || checks == 0 ? 1 : 0;
}
