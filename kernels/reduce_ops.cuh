// The reduction functors: one per gpucoll_op_t, for every element type of
// common/gpucoll_types.h. 16-bit floats are accumulated in fp32 and rounded
// once per output element; integer arithmetic wraps (unsigned arithmetic,
// which is what two's complement signed overflow gives in practice).
#pragma once

#include <stdint.h>

#include "gpu_port.h"

namespace gpucoll {

struct half_t { uint16_t bits; };
struct bf16_t { uint16_t bits; };

// How an element type is accumulated.
template <class T> struct Acc {
    using type = T;
    __device__ static T load(T v) { return v; }
    __device__ static T store(T v) { return v; }
};
template <> struct Acc<half_t> {
    using type = float;
    __device__ static float load(half_t v) { return gpu_half_bits_to_float(v.bits); }
    __device__ static half_t store(float f) { return half_t{gpu_float_to_half_bits(f)}; }
};
template <> struct Acc<bf16_t> {
    using type = float;
    __device__ static float load(bf16_t v) { return __uint_as_float((uint32_t)v.bits << 16); }
    __device__ static bf16_t store(float f)
    {
        uint32_t x = __float_as_uint(f);
        if ((x & 0x7fffffffu) > 0x7f800000u) return bf16_t{(uint16_t)((x >> 16) | 0x40u)};
        x += 0x7fffu + ((x >> 16) & 1u);
        return bf16_t{(uint16_t)(x >> 16)};
    }
};

struct OpSum { template <class A> __device__ static A apply(A a, A b) { return a + b; } };
struct OpProd { template <class A> __device__ static A apply(A a, A b) { return a * b; } };
struct OpMax { template <class A> __device__ static A apply(A a, A b) { return a > b ? a : b; } };
struct OpMin { template <class A> __device__ static A apply(A a, A b) { return a < b ? a : b; } };
struct OpLand { template <class A> __device__ static A apply(A a, A b) { return (A)((a != 0) && (b != 0)); } };
struct OpLor { template <class A> __device__ static A apply(A a, A b) { return (A)((a != 0) || (b != 0)); } };
struct OpLxor { template <class A> __device__ static A apply(A a, A b) { return (A)((a != 0) != (b != 0)); } };
struct OpBand { template <class A> __device__ static A apply(A a, A b) { return a & b; } };
struct OpBor { template <class A> __device__ static A apply(A a, A b) { return a | b; } };
struct OpBxor { template <class A> __device__ static A apply(A a, A b) { return a ^ b; } };

} // namespace gpucoll
