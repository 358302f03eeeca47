// fp16 / bf16 conversions and reductions of the host code, checked against a
// reference written here from the IEEE definitions (exact values in double,
// std::nearbyint for round-to-nearest-even), not from bit tricks.
//
// Under test:
//  - include/coll_gpu_ext.h: the host converters and the user ops' functions
//    (what MPI runs without coll/gpu or on host buffers);
//  - ucx_transport/host_reduce.cpp through gpucoll_ucx_host_reduce (when UCX
//    is built): its converters are internal, so through the reduction;
//  - kernels/reduce_ops.cuh: Acc<bf16_t>, the kernels' own bf16 rounding,
//    compiled for the host through kernel_host_shim.h. (Acc<half_t> calls
//    __half2float/__float2half_rn via gpu_port.h: device-only, not here.)
//
// Sums and products are computed by the code under test in fp32 and rounded
// once; since 24 >= 2p + 2 for p = 11 (fp16) and p = 8 (bf16), that double
// rounding equals rounding the exact result, which is what the reference does.
#include "kernel_host_shim.h"

#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "coll_gpu_ext.h"
#include "reduce_ops.cuh"
#if COLL_GPU_TEST_HAVE_UCX
#include "gpucoll_ucx.h"
#endif

#include "../common/check.h"

// ---- reference ---------------------------------------------------------------
struct Format {
    const char *name;
    int mant_bits; // stored fraction bits
    int bias;
    uint16_t exp_mask() const { return (uint16_t)(((1u << (15 - mant_bits)) - 1) << mant_bits); }
    uint16_t quiet_bit() const { return (uint16_t)(1u << (mant_bits - 1)); }
};
static const Format kHalf{"fp16", 10, 15};
static const Format kBf16{"bf16", 7, 127};

static double ref_to_double(const Format &f, uint16_t h)
{
    int e = (h & 0x7fff) >> f.mant_bits;
    int m = h & ((1 << f.mant_bits) - 1);
    double v;
    if (h & f.exp_mask()) {
        if ((h & f.exp_mask()) == f.exp_mask()) v = m ? NAN : INFINITY;
        else v = std::ldexp((double)((1 << f.mant_bits) + m), e - f.bias - f.mant_bits);
    } else {
        v = std::ldexp((double)m, 1 - f.bias - f.mant_bits);
    }
    return (h & 0x8000) ? -v : v;
}

// x rounded to the format, nearest, ties to even; NaN gives the quiet NaN.
static uint16_t ref_round(const Format &f, double x)
{
    uint16_t sign = std::signbit(x) ? 0x8000 : 0;
    if (std::isnan(x)) return sign | f.exp_mask() | f.quiet_bit();
    double ax = std::fabs(x);
    if (std::isinf(ax)) return sign | f.exp_mask();
    if (ax == 0) return sign;
    int e;
    std::frexp(ax, &e);
    e -= 1; // ax in [2^e, 2^(e+1))
    const int emin = 1 - f.bias;
    if (e < emin) e = emin; // subnormal: the quantum stops shrinking
    // ax in units of the quantum 2^(e - mant_bits): exact, then rounded.
    double units = std::nearbyint(std::ldexp(ax, f.mant_bits - e));
    // A normal value is (1 << mant_bits) + fraction units with exponent field
    // e + bias; a subnormal's field is 0. Rounding up to the next binade or
    // into infinity is the carry of this sum.
    long bits = ((long)(e + f.bias) << f.mant_bits) + (long)units - (1L << f.mant_bits);
    if (bits >= f.exp_mask()) return sign | f.exp_mask();
    return (uint16_t)(sign | bits);
}

static bool is_nan16(const Format &f, uint16_t h)
{
    return (h & f.exp_mask()) == f.exp_mask() && (h & ((1u << f.mant_bits) - 1));
}

// The reference itself, on values whose encoding is known by heart.
static void check_reference()
{
    CHECK(ref_round(kHalf, 1.0) == 0x3c00 && ref_round(kHalf, -2.0) == 0xc000, "fp16 1/-2");
    CHECK(ref_round(kHalf, 65504.0) == 0x7bff && ref_round(kHalf, 65520.0) == 0x7c00, "fp16 max/overflow");
    CHECK(ref_round(kHalf, 65519.99) == 0x7bff, "fp16 just below the overflow tie");
    CHECK(ref_round(kHalf, std::ldexp(1.0, -24)) == 0x0001 && ref_round(kHalf, std::ldexp(1.0, -25)) == 0x0000,
          "fp16 min subnormal, tie to zero");
    CHECK(ref_round(kHalf, std::ldexp(3.0, -25)) == 0x0002, "fp16 tie 1.5 units -> 2");
    CHECK(ref_round(kHalf, 1.0 + std::ldexp(1.0, -11)) == 0x3c00, "fp16 tie to even (down)");
    CHECK(ref_round(kHalf, 1.0 + 3 * std::ldexp(1.0, -11)) == 0x3c02, "fp16 tie to even (up)");
    CHECK(ref_round(kHalf, std::ldexp(1023.0, -24) + std::ldexp(1.0, -25)) == 0x0400, "fp16 subnormal -> normal");
    CHECK(ref_round(kBf16, 1.0) == 0x3f80 && ref_round(kBf16, FLT_MAX) == 0x7f80, "bf16 1, FLT_MAX -> inf");
    CHECK(ref_round(kBf16, std::ldexp(1.0, -133)) == 0x0001, "bf16 min subnormal");
    CHECK(ref_to_double(kHalf, 0x0001) == std::ldexp(1.0, -24) && ref_to_double(kHalf, 0x7bff) == 65504.0,
          "fp16 decode");
    CHECK(ref_to_double(kBf16, 0xc040) == -3.0, "bf16 decode");
}

// ---- conversions ---------------------------------------------------------------
using ToFloat = float (*)(uint16_t);
using FromFloat = uint16_t (*)(float);

// Every 16-bit pattern: exact widening, and narrowing it back is the identity.
static void check_widen_all(const Format &f, const char *who, ToFloat widen, FromFloat narrow)
{
    int bad = 0;
    for (uint32_t h = 0; h < 0x10000 && bad < 5; h++) {
        float got = widen((uint16_t)h);
        double want = ref_to_double(f, (uint16_t)h);
        bool ok;
        if (std::isnan(want)) ok = std::isnan(got) && std::signbit(got) == !!(h & 0x8000);
        else ok = __float_as_uint(got) == __float_as_uint((float)want); // exact, -0 included
        if (ok && narrow) {
            uint16_t back = narrow(got);
            ok = std::isnan(want) ? is_nan16(f, back) && (back & f.quiet_bit()) && (back & 0x8000) == (h & 0x8000)
                                  : back == h;
        }
        if (!ok) {
            CHECK(false, "%s %s: 0x%04x -> %a", who, f.name, h, (double)got);
            bad++;
        }
    }
}

static void check_narrow_one(const Format &f, const char *who, FromFloat narrow, float x, int *bad)
{
    uint16_t got = narrow(x), want = ref_round(f, x);
    bool ok = std::isnan(x) ? is_nan16(f, got) && (got & f.quiet_bit()) && (got & 0x8000) == (want & 0x8000)
                            : got == want;
    if (!ok && (*bad)++ < 5)
        CHECK(false, "%s %s: %a (0x%08x) -> 0x%04x, want 0x%04x", who, f.name, x, __float_as_uint(x), got, want);
}

// float -> 16 bits: edge values, every rounding position of every exponent
// the format can reach, and random bit patterns.
static void check_narrow(const Format &f, const char *who, FromFloat narrow)
{
    int bad = 0;
    const float edges[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, -NAN, __uint_as_float(0x7f800001u),
                           __uint_as_float(0xffc00001u), FLT_MAX, -FLT_MAX, FLT_MIN, __uint_as_float(1),
                           __uint_as_float(0x807fffffu), 65504.0f, 65519.0f,
                           std::nextafter(65520.0f, 0.0f), 65520.0f, 65536.0f, 1e-8f, 2.9802322e-8f /* 2^-25 */,
                           std::nextafter(2.9802322e-8f, 1.0f), 5.9604645e-8f /* 2^-24 */, 6.097555e-5f,
                           6.1035156e-5f /* 2^-14 */, 3.3895314e38f, 3.3961775e38f, 1.0f, -1.0f, 1.0009766f};
    for (float x : edges) check_narrow_one(f, who, narrow, x, &bad);
    // Around each rounding boundary: for each float exponent, the dropped
    // bits at 0, 1, half-1, half, half+1 and all-ones, under all kept bits
    // patterns of a few forms.
    std::mt19937 rng(12345);
    for (int fexp = 1; fexp < 255; fexp++) {
        int unbiased = fexp - 127;
        int emin = 1 - f.bias;
        int drop = 23 - f.mant_bits + (unbiased < emin ? emin - unbiased : 0);
        if (drop > 24) drop = 24; // below half the smallest subnormal: all round to zero
        for (int k = 0; k < 64; k++) {
            uint32_t dropped_forms[] = {0u, 1u, (1u << (drop - 1)) - 1, 1u << (drop - 1), (1u << (drop - 1)) + 1,
                                        (drop >= 24 ? 0x7fffffu : (1u << drop) - 1)};
            uint32_t kept = (rng() & 0x7fffffu) & ~((drop >= 23 ? 0x7fffffu : (1u << drop) - 1));
            if (k == 0) kept = 0;
            if (k == 1) kept = 0x7fffffu & ~((drop >= 23 ? 0x7fffffu : (1u << drop) - 1));
            for (uint32_t d : dropped_forms) {
                uint32_t mant = (kept | (d & ((1u << (drop < 23 ? drop : 23)) - 1))) & 0x7fffffu;
                uint32_t u = ((uint32_t)fexp << 23) | mant;
                check_narrow_one(f, who, narrow, __uint_as_float(u), &bad);
                check_narrow_one(f, who, narrow, __uint_as_float(u | 0x80000000u), &bad);
            }
        }
    }
    for (int i = 0; i < 2000000; i++) check_narrow_one(f, who, narrow, __uint_as_float((uint32_t)rng()), &bad);
    // Every float subnormal exponent region of fp16: all of [2^-26, 2^-13).
    if (f.mant_bits == 10)
        for (uint32_t u = 0x32800000u; u < 0x39000000u; u += 7)
            check_narrow_one(f, who, narrow, __uint_as_float(u), &bad);
}

// ---- reductions ------------------------------------------------------------------
enum class Op { Sum, Prod, Max, Min };
static const char *op_name(Op op)
{
    return op == Op::Sum ? "sum" : op == Op::Prod ? "prod" : op == Op::Max ? "max" : "min";
}

// Edge values for the inout operand, each paired with all 65536 inputs.
static std::vector<uint16_t> edge_operands(const Format &f)
{
    return {0x0000, 0x8000, 0x0001, 0x8001, f.exp_mask(), (uint16_t)(0x8000 | f.exp_mask()),
                               (uint16_t)(f.exp_mask() | f.quiet_bit()), (uint16_t)(f.exp_mask() - 1),
                               (uint16_t)(0x8000 | (f.exp_mask() - 1)), ref_round(f, 1.0), ref_round(f, -1.0),
                               ref_round(f, 0.5), ref_round(f, 3.0), ref_round(f, 1.0 + std::ldexp(1.0, -f.mant_bits)),
            ref_round(f, std::ldexp(1.0, 1 - f.bias))};
}

// What each op must give for non-NaN operands a (in) and b (inout).
static uint16_t ref_op(const Format &f, Op op, uint16_t a, uint16_t b)
{
    double x = ref_to_double(f, a), y = ref_to_double(f, b);
    switch (op) {
    case Op::Sum: return ref_round(f, x + y); // exact in double for fp16; correctly rounded for bf16
    case Op::Prod: return ref_round(f, x * y); // exact: at most 22 significant bits
    case Op::Max: return x > y ? a : b;
    default: return x < y ? a : b;
    }
}

using UserFn = void (*)(void *, void *, int *, MPI_Datatype *);
using ArrayOp = void (*)(const uint16_t *in, uint16_t *inout, int n, void *ctx);

// One implementation of one op, on arrays as MPI calls it: every input
// against each edge value, then against random values. fmax_nan: max/min
// follow fmax/fmin with NaN (else: the inout operand's NaN propagates).
static void check_op(const Format &f, const char *who, Op op, ArrayOp run, void *ctx, bool fmax_nan)
{
    std::vector<uint16_t> in(0x10000), inout(0x10000), before(0x10000);
    const std::vector<uint16_t> edges = edge_operands(f);
    std::mt19937 rng(777);
    int bad = 0;
    for (size_t pass = 0; pass < edges.size() + 32; pass++) {
        for (uint32_t a = 0; a < 0x10000; a++) {
            in[a] = (uint16_t)a;
            inout[a] = before[a] = pass < edges.size() ? edges[pass] : (uint16_t)rng();
        }
        run(in.data(), inout.data(), 0x10000, ctx);
        for (uint32_t a = 0; a < 0x10000 && bad < 5; a++) {
            uint16_t x = in[a], y = before[a], got = inout[a];
            bool nx = is_nan16(f, x), ny = is_nan16(f, y), ok;
            bool minmax = op == Op::Max || op == Op::Min;
            if (minmax && (nx || ny)) {
                // coll_gpu_ext.h: the inout operand's NaN propagates.
                // host_reduce.cpp: fmax/fmin: the other operand, except that
                // a signaling NaN (quiet bit clear; widening keeps it
                // signaling) may give NaN, as IEEE maxNum/minNum say.
                bool signaling = (nx && !(x & f.quiet_bit())) || (ny && !(y & f.quiet_bit()));
                ok = fmax_nan ? (nx && ny ? is_nan16(f, got)
                                          : got == (nx ? y : x) || (signaling && is_nan16(f, got)))
                              : (!ny || is_nan16(f, got));
            } else if (!minmax && (nx || ny || std::isnan(op == Op::Sum ? ref_to_double(f, x) + ref_to_double(f, y)
                                                                        : ref_to_double(f, x) * ref_to_double(f, y)))) {
                ok = is_nan16(f, got);
            } else {
                uint16_t want = ref_op(f, op, x, y);
                // max/min of +0 and -0 may give either zero
                ok = got == want || ((op == Op::Max || op == Op::Min) && ((got | want) & 0x7fff) == 0);
            }
            if (!ok && bad++ < 5)
                CHECK(false, "%s %s %s: in 0x%04x inout 0x%04x -> 0x%04x, want 0x%04x", who, f.name, op_name(op), x, y,
                      got, ref_op(f, op, x, y));
        }
    }
}

template <UserFn fn> static void run_user_fn(const uint16_t *in, uint16_t *inout, int n, void *)
{
    fn(const_cast<uint16_t *>(in), inout, &n, nullptr);
}

#if COLL_GPU_TEST_HAVE_UCX
struct HostReduceCtx {
    gpucoll_dtype_t dtype;
    gpucoll_op_t op;
};
static void run_host_reduce(const uint16_t *in, uint16_t *inout, int n, void *ctx)
{
    auto *c = static_cast<HostReduceCtx *>(ctx);
    gpucoll_status_t st = gpucoll_ucx_host_reduce(inout, in, (size_t)n, c->dtype, c->op, nullptr);
    CHECK(st == GPUCOLL_SUCCESS, "gpucoll_ucx_host_reduce status %d", (int)st);
}
#endif

// Acc<bf16_t> (kernels/reduce_ops.cuh) through plain function pointers.
static float acc_bf16_load(uint16_t b) { return gpucoll::Acc<gpucoll::bf16_t>::load(gpucoll::bf16_t{b}); }
static uint16_t acc_bf16_store(float f) { return gpucoll::Acc<gpucoll::bf16_t>::store(f).bits; }

int main()
{
    check_reference();

    check_widen_all(kHalf, "coll_gpu_ext", coll_gpu_ext_half_to_float, coll_gpu_ext_float_to_half);
    check_widen_all(kBf16, "coll_gpu_ext", coll_gpu_ext_bf16_to_float, coll_gpu_ext_float_to_bf16);
    check_widen_all(kBf16, "reduce_ops Acc<bf16_t>", acc_bf16_load, acc_bf16_store);
    check_narrow(kHalf, "coll_gpu_ext", coll_gpu_ext_float_to_half);
    check_narrow(kBf16, "coll_gpu_ext", coll_gpu_ext_float_to_bf16);
    check_narrow(kBf16, "reduce_ops Acc<bf16_t>", acc_bf16_store);

    check_op(kHalf, "coll_gpu_ext", Op::Sum, run_user_fn<coll_gpu_ext_float16_sum>, nullptr, false);
    check_op(kHalf, "coll_gpu_ext", Op::Prod, run_user_fn<coll_gpu_ext_float16_prod>, nullptr, false);
    check_op(kHalf, "coll_gpu_ext", Op::Max, run_user_fn<coll_gpu_ext_float16_max>, nullptr, false);
    check_op(kHalf, "coll_gpu_ext", Op::Min, run_user_fn<coll_gpu_ext_float16_min>, nullptr, false);
    check_op(kBf16, "coll_gpu_ext", Op::Sum, run_user_fn<coll_gpu_ext_bfloat16_sum>, nullptr, false);
    check_op(kBf16, "coll_gpu_ext", Op::Prod, run_user_fn<coll_gpu_ext_bfloat16_prod>, nullptr, false);
    check_op(kBf16, "coll_gpu_ext", Op::Max, run_user_fn<coll_gpu_ext_bfloat16_max>, nullptr, false);
    check_op(kBf16, "coll_gpu_ext", Op::Min, run_user_fn<coll_gpu_ext_bfloat16_min>, nullptr, false);

#if COLL_GPU_TEST_HAVE_UCX
    const gpucoll_op_t ops[] = {GPUCOLL_OP_SUM, GPUCOLL_OP_PROD, GPUCOLL_OP_MAX, GPUCOLL_OP_MIN};
    const Op ref_ops[] = {Op::Sum, Op::Prod, Op::Max, Op::Min};
    for (int i = 0; i < 4; i++) {
        HostReduceCtx h{GPUCOLL_FLOAT16, ops[i]}, b{GPUCOLL_BFLOAT16, ops[i]};
        check_op(kHalf, "host_reduce", ref_ops[i], run_host_reduce, &h, true);
        check_op(kBf16, "host_reduce", ref_ops[i], run_host_reduce, &b, true);
    }
    std::printf("fp16_rounding (with host_reduce): %d failed\n", failures);
#else
    std::printf("fp16_rounding (no UCX: host_reduce not built, not tested): %d failed\n", failures);
#endif
    return failures ? 1 : 0;
}
