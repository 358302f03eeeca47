#include "dtypes.hpp"

#include <cmath>
#include <cstring>

size_t dtype_size(DType t)
{
    switch (t) {
    case DType::F32: return 4;
    case DType::F64: return 8;
    case DType::F16: return 2;
    case DType::BF16: return 2;
    case DType::I32: return 4;
    }
    return 0;
}

const char *dtype_name(DType t)
{
    switch (t) {
    case DType::F32: return "fp32";
    case DType::F64: return "fp64";
    case DType::F16: return "fp16";
    case DType::BF16: return "bf16";
    case DType::I32: return "int32";
    }
    return "?";
}

const char *op_name(Op op)
{
    switch (op) {
    case Op::Sum: return "sum";
    case Op::Max: return "max";
    case Op::Min: return "min";
    }
    return "?";
}

bool parse_dtype(const std::string &s, DType *out)
{
    static const struct { const char *name; DType t; } names[] = {
        {"fp32", DType::F32}, {"float", DType::F32}, {"f32", DType::F32},
        {"fp64", DType::F64}, {"double", DType::F64}, {"f64", DType::F64},
        {"fp16", DType::F16}, {"half", DType::F16}, {"f16", DType::F16},
        {"bf16", DType::BF16}, {"bfloat16", DType::BF16},
        {"int32", DType::I32}, {"int", DType::I32}, {"i32", DType::I32}};
    for (const auto &n : names)
        if (s == n.name) { *out = n.t; return true; }
    return false;
}

bool parse_op(const std::string &s, Op *out)
{
    if (s == "sum") { *out = Op::Sum; return true; }
    if (s == "max") { *out = Op::Max; return true; }
    if (s == "min") { *out = Op::Min; return true; }
    return false;
}

static uint32_t float_bits(float f) { uint32_t u; std::memcpy(&u, &f, 4); return u; }
static float bits_float(uint32_t u) { float f; std::memcpy(&f, &u, 4); return f; }

float half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1f;
    uint32_t man = h & 0x3ffu;
    if (exp == 0x1f)                       /* inf / nan */
        return bits_float(sign | 0x7f800000u | (man << 13));
    if (exp == 0) {                        /* zero / subnormal: man * 2^-24 */
        float v = std::ldexp((float)man, -24);
        return sign ? -v : v;
    }
    return bits_float(sign | ((exp + 112) << 23) | (man << 13));
}

uint16_t float_to_half(float f)
{
    uint32_t u = float_bits(f);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t absu = u & 0x7fffffffu;
    if (absu >= 0x7f800000u)               /* inf / nan (keep nan quiet) */
        return (uint16_t)(sign | 0x7c00u | (absu > 0x7f800000u ? 0x200u : 0));
    if (absu >= 0x477ff000u)               /* rounds to >= 65520: overflow */
        return (uint16_t)(sign | 0x7c00u);
    if (absu < 0x38800000u) {              /* below 2^-14: subnormal half */
        /* scale so the subnormal unit 2^-24 becomes 1, then round to even */
        float a = bits_float(absu) * 16777216.0f;
        return (uint16_t)(sign | (uint16_t)std::nearbyint(a));
    }
    uint32_t man = absu & 0x7fffffu;
    uint32_t exp = (absu >> 23) - 112;
    uint32_t h = (exp << 10) | (man >> 13);
    uint32_t rest = man & 0x1fffu;         /* dropped bits decide rounding */
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u)))
        h++;                               /* may carry into the exponent: fine */
    return (uint16_t)(sign | h);
}

float bf16_to_float(uint16_t b) { return bits_float((uint32_t)b << 16); }

uint16_t float_to_bf16(float f)
{
    uint32_t u = float_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u)   /* nan: keep it a quiet nan */
        return (uint16_t)((u >> 16) | 0x40u);
    u += 0x7fffu + ((u >> 16) & 1u);       /* round to nearest even */
    return (uint16_t)(u >> 16);
}

void dtype_store(DType t, void *buf, size_t idx, double v)
{
    switch (t) {
    case DType::F32: static_cast<float *>(buf)[idx] = (float)v; break;
    case DType::F64: static_cast<double *>(buf)[idx] = v; break;
    case DType::F16: static_cast<uint16_t *>(buf)[idx] = float_to_half((float)v); break;
    case DType::BF16: static_cast<uint16_t *>(buf)[idx] = float_to_bf16((float)v); break;
    case DType::I32: static_cast<int32_t *>(buf)[idx] = (int32_t)v; break;
    }
}

double dtype_load(DType t, const void *buf, size_t idx)
{
    switch (t) {
    case DType::F32: return static_cast<const float *>(buf)[idx];
    case DType::F64: return static_cast<const double *>(buf)[idx];
    case DType::F16: return half_to_float(static_cast<const uint16_t *>(buf)[idx]);
    case DType::BF16: return bf16_to_float(static_cast<const uint16_t *>(buf)[idx]);
    case DType::I32: return static_cast<const int32_t *>(buf)[idx];
    }
    return 0;
}

double op_apply(Op op, double a, double b)
{
    switch (op) {
    case Op::Sum: return a + b;
    case Op::Max: return a > b ? a : b;
    case Op::Min: return a < b ? a : b;
    }
    return 0;
}

bool dtype_inexact(DType t) { return t == DType::F16 || t == DType::BF16; }

double dtype_epsilon(DType t)
{
    switch (t) {
    case DType::F16: return 1.0 / 1024;    /* 2^-10 */
    case DType::BF16: return 1.0 / 128;    /* 2^-7 */
    case DType::F32: return 1.0 / 8388608; /* 2^-23 */
    default: return 0;
    }
}
