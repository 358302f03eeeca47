/* The host reduction for the datatype x op table of common/gpucoll_types.h.
 *
 * It serves host buffers and is the reference the tests compare with, so it
 * pins down the semantics the GPU kernels must match: integers wrap around
 * (computed in the unsigned type, so signed overflow is defined), logical
 * ops yield 0/1, MAX/MIN on floats follow fmax/fmin, and 16-bit floats are
 * widened to float, combined, and rounded back to nearest even. */
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "gpucoll_ucx.h"

namespace {

float bits_to_float(uint32_t bits)
{
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

uint32_t float_to_bits(float f)
{
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    return bits;
}

float half_to_float(uint16_t h)
{
    uint32_t sign = uint32_t(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1f;
    uint32_t mant = h & 0x3ff;
    if (exp == 0x1f) return bits_to_float(sign | 0x7f800000 | (mant << 13)); /* inf, nan */
    if (exp != 0) return bits_to_float(sign | ((exp + 112) << 23) | (mant << 13));
    if (mant == 0) return bits_to_float(sign);
    /* Subnormal: normalise the mantissa. */
    uint32_t e = 113;
    while (!(mant & 0x400)) {
        mant <<= 1;
        --e;
    }
    return bits_to_float(sign | (e << 23) | ((mant & 0x3ff) << 13));
}

/* Rounds `value >> shift` to nearest, ties to even. */
uint32_t shift_round_even(uint32_t value, int shift)
{
    uint32_t r = value >> shift;
    uint32_t rem = value & ((1u << shift) - 1);
    uint32_t half = 1u << (shift - 1);
    return r + (rem > half || (rem == half && (r & 1)));
}

uint16_t float_to_half(float f)
{
    uint32_t x = float_to_bits(f);
    uint16_t sign = uint16_t((x >> 16) & 0x8000);
    uint32_t a = x & 0x7fffffff;
    if (a > 0x7f800000) return sign | 0x7e00;  /* nan */
    if (a >= 0x477ff000) return sign | 0x7c00; /* at or past 65520: infinity */
    if (a >= 0x38800000)                       /* normal half; a carry into the exponent is right */
        return sign | uint16_t(shift_round_even(((a >> 23) - 112) << 23 | (a & 0x7fffff), 13));
    if (a < 0x33000000) return sign; /* below 2^-25: zero */
    /* Subnormal half: units of 2^-24. */
    uint32_t e = a >> 23;
    uint32_t m = (a & 0x7fffff) | 0x800000;
    return sign | uint16_t(shift_round_even(m, int(126 - e)));
}

float bf16_to_float(uint16_t h) { return bits_to_float(uint32_t(h) << 16); }

uint16_t float_to_bf16(float f)
{
    uint32_t x = float_to_bits(f);
    if ((x & 0x7fffffff) > 0x7f800000) return uint16_t((x >> 16) | 0x40); /* keep nan quiet */
    x += 0x7fff + ((x >> 16) & 1);
    return uint16_t(x >> 16);
}

template <typename T> T combine_int(T a, T b, gpucoll_op_t op)
{
    using U = std::make_unsigned_t<T>;
    switch (op) {
    case GPUCOLL_OP_SUM: return T(U(U(a) + U(b)));
    case GPUCOLL_OP_PROD: return T(U(uint64_t(U(a)) * uint64_t(U(b))));
    case GPUCOLL_OP_MAX: return a > b ? a : b;
    case GPUCOLL_OP_MIN: return a < b ? a : b;
    case GPUCOLL_OP_LAND: return T(a && b);
    case GPUCOLL_OP_LOR: return T(a || b);
    case GPUCOLL_OP_LXOR: return T(!a != !b);
    case GPUCOLL_OP_BAND: return T(a & b);
    case GPUCOLL_OP_BOR: return T(a | b);
    case GPUCOLL_OP_BXOR: return T(a ^ b);
    default: return a;
    }
}

template <typename F> F combine_float(F a, F b, gpucoll_op_t op)
{
    switch (op) {
    case GPUCOLL_OP_SUM: return a + b;
    case GPUCOLL_OP_PROD: return a * b;
    case GPUCOLL_OP_MAX: return std::fmax(a, b);
    case GPUCOLL_OP_MIN: return std::fmin(a, b);
    default: return a;
    }
}

template <typename T> void reduce_native(void *inout, const void *in, size_t count, gpucoll_op_t op)
{
    T *x = static_cast<T *>(inout);
    const T *y = static_cast<const T *>(in);
    for (size_t i = 0; i < count; ++i) {
        if constexpr (std::is_floating_point_v<T>) x[i] = combine_float(x[i], y[i], op);
        else x[i] = combine_int(x[i], y[i], op);
    }
}

template <float (*Widen)(uint16_t), uint16_t (*Narrow)(float)>
void reduce_16bit_float(void *inout, const void *in, size_t count, gpucoll_op_t op)
{
    uint16_t *x = static_cast<uint16_t *>(inout);
    const uint16_t *y = static_cast<const uint16_t *>(in);
    for (size_t i = 0; i < count; ++i) x[i] = Narrow(combine_float(Widen(x[i]), Widen(y[i]), op));
}

} // namespace

extern "C" gpucoll_status_t gpucoll_ucx_host_reduce(void *inout, const void *in, size_t count,
                                                    gpucoll_dtype_t dtype, gpucoll_op_t op, void *)
{
    if (!gpucoll_op_valid(op, dtype))
        return gpucoll_fail(GPUCOLL_ERR_INVALID, "host reduce: %s is not defined on %s", gpucoll_op_name(op),
                            gpucoll_dtype_name(dtype));
    if (count == 0) return GPUCOLL_SUCCESS;
    switch (dtype) {
    case GPUCOLL_INT8: reduce_native<int8_t>(inout, in, count, op); break;
    case GPUCOLL_UINT8: reduce_native<uint8_t>(inout, in, count, op); break;
    case GPUCOLL_INT16: reduce_native<int16_t>(inout, in, count, op); break;
    case GPUCOLL_UINT16: reduce_native<uint16_t>(inout, in, count, op); break;
    case GPUCOLL_INT32: reduce_native<int32_t>(inout, in, count, op); break;
    case GPUCOLL_UINT32: reduce_native<uint32_t>(inout, in, count, op); break;
    case GPUCOLL_INT64: reduce_native<int64_t>(inout, in, count, op); break;
    case GPUCOLL_UINT64: reduce_native<uint64_t>(inout, in, count, op); break;
    case GPUCOLL_FLOAT16: reduce_16bit_float<half_to_float, float_to_half>(inout, in, count, op); break;
    case GPUCOLL_BFLOAT16: reduce_16bit_float<bf16_to_float, float_to_bf16>(inout, in, count, op); break;
    case GPUCOLL_FLOAT32: reduce_native<float>(inout, in, count, op); break;
    case GPUCOLL_FLOAT64: reduce_native<double>(inout, in, count, op); break;
    default: return gpucoll_fail(GPUCOLL_ERR_INVALID, "host reduce: unknown dtype %d", int(dtype));
    }
    return GPUCOLL_SUCCESS;
}
