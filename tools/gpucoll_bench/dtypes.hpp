// Datatypes and reduction operations of the benchmark, with host-side
// conversions (fp16/bf16 have no native C++ type we can rely on here).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

enum class DType { F32, F64, F16, BF16, I32 };
enum class Op { Sum, Max, Min };

size_t dtype_size(DType t);
const char *dtype_name(DType t);
const char *op_name(Op op);
bool parse_dtype(const std::string &s, DType *out);
bool parse_op(const std::string &s, Op *out);

// IEEE binary16 and bfloat16 <-> float, round to nearest even.
float half_to_float(uint16_t h);
uint16_t float_to_half(float f);
float bf16_to_float(uint16_t b);
uint16_t float_to_bf16(float f);

// Element access in a buffer of type t (values go through double, which holds
// every value of every type here exactly).
void dtype_store(DType t, void *buf, size_t idx, double v);
double dtype_load(DType t, const void *buf, size_t idx);

// Reduction of two values as the collective would do it.
double op_apply(Op op, double a, double b);

// True when results of this type are compared with a tolerance (fp16/bf16);
// the others hold our small integer inputs and their sums exactly.
bool dtype_inexact(DType t);
double dtype_epsilon(DType t);
