/* coll_gpu_ext.h: fp16 and bf16 for MPI collectives, reduced on the GPU by coll/gpu.
 *
 * Open MPI 4.1 and 5.0 have no half-precision datatypes. This header gives
 * you two (IEEE binary16 and bfloat16, each 2 bytes) and the sum, product,
 * min and max ops on them:
 *
 *     coll_gpu_ext_t ext;
 *     coll_gpu_ext_init(&ext);               // after MPI_Init
 *     MPI_Allreduce(MPI_IN_PLACE, dev_buf, n, ext.float16, ext.float16_sum, comm);
 *     coll_gpu_ext_free(&ext);               // before MPI_Finalize
 *
 * Promises:
 * - With coll/gpu loaded, collectives on device buffers with these types and
 *   ops reduce on the GPU (accumulating in fp32 within one reduction step).
 * - Without it (or on host buffers), the same calls are correct: the ops are
 *   ordinary MPI user ops with host implementations (round to nearest even).
 * - Header only: nothing to link but MPI (and libdl on glibc older than 2.34).
 */
#ifndef COLL_GPU_EXT_H
#define COLL_GPU_EXT_H

#include <mpi.h>
#include <stdint.h>
#include <string.h>
#ifndef COLL_GPU_EXT_IMPLEMENTATION
#include <dlfcn.h>
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* coll/gpu recognises the datatypes by these names. */
#define COLL_GPU_EXT_FLOAT16_NAME "COLL_GPU_FLOAT16"
#define COLL_GPU_EXT_BFLOAT16_NAME "COLL_GPU_BFLOAT16"

typedef struct coll_gpu_ext {
    MPI_Datatype float16, bfloat16;
    MPI_Op float16_sum, float16_prod, float16_min, float16_max;
    MPI_Op bfloat16_sum, bfloat16_prod, bfloat16_min, bfloat16_max;
} coll_gpu_ext_t;

/* ---- host conversions (also used by coll/gpu's tests) -------------------- */
static inline float coll_gpu_ext_half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu, bits;
    if (exp == 0x1f) {
        bits = sign | 0x7f800000u | (mant << 13); /* inf / nan */
    } else if (exp != 0) {
        bits = sign | ((exp + 112u) << 23) | (mant << 13);
    } else if (mant == 0) {
        bits = sign;
    } else { /* subnormal: normalise */
        int e = -1;
        do {
            e++;
            mant <<= 1;
        } while ((mant & 0x400u) == 0);
        bits = sign | ((uint32_t)(112 - e) << 23) | ((mant & 0x3ffu) << 13);
    }
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

static inline uint16_t coll_gpu_ext_float_to_half(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    uint32_t absx = x & 0x7fffffffu;
    if (absx >= 0x7f800000u) /* inf or nan (keep nan quiet) */
        return (uint16_t)(sign | 0x7c00u | (absx > 0x7f800000u ? 0x200u : 0));
    if (absx >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* rounds to inf */
    if (absx < 0x38800000u) { /* subnormal half or zero */
        if (absx < 0x33000000u) return sign;
        uint32_t mant = (absx & 0x7fffffu) | 0x800000u;
        int shift = 126 - (int)(absx >> 23);
        uint32_t half = mant >> shift, rem = mant & ((1u << shift) - 1u), mid = 1u << (shift - 1);
        if (rem > mid || (rem == mid && (half & 1u))) half++;
        return (uint16_t)(sign | half);
    }
    uint32_t half = ((absx - 0x38000000u) >> 13);
    uint32_t rem = absx & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (half & 1u))) half++;
    return (uint16_t)(sign | half);
}

static inline float coll_gpu_ext_bf16_to_float(uint16_t b)
{
    uint32_t bits = (uint32_t)b << 16;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

static inline uint16_t coll_gpu_ext_float_to_bf16(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u); /* quiet nan */
    x += 0x7fffu + ((x >> 16) & 1u); /* round to nearest even */
    return (uint16_t)(x >> 16);
}

/* ---- the ops' host functions --------------------------------------------- *
 * In coll/gpu itself (COLL_GPU_EXT_IMPLEMENTATION) they are exported, so that
 * it can tell its ops from any other user op by their address. */
#ifdef COLL_GPU_EXT_IMPLEMENTATION
#define COLL_GPU_EXT_FN __attribute__((visibility("default")))
#else
#define COLL_GPU_EXT_FN static inline
#endif

#define COLL_GPU_EXT_DEFINE_OP(type, name, expr)                                                            \
    COLL_GPU_EXT_FN void coll_gpu_ext_##type##_##name(void *in, void *inout, int *len, MPI_Datatype *dt)   \
    {                                                                                                       \
        (void)dt;                                                                                           \
        const uint16_t *a_ = (const uint16_t *)in;                                                          \
        uint16_t *b_ = (uint16_t *)inout;                                                                   \
        for (int i = 0; i < *len; i++) {                                                                    \
            float a = coll_gpu_ext_##type##_load(a_[i]), b = coll_gpu_ext_##type##_load(b_[i]);             \
            b_[i] = coll_gpu_ext_##type##_store(expr);                                                      \
        }                                                                                                   \
    }
#define coll_gpu_ext_float16_load coll_gpu_ext_half_to_float
#define coll_gpu_ext_float16_store coll_gpu_ext_float_to_half
#define coll_gpu_ext_bfloat16_load coll_gpu_ext_bf16_to_float
#define coll_gpu_ext_bfloat16_store coll_gpu_ext_float_to_bf16
/* MPI_MAX/MIN semantics for nan are unspecified; these propagate `b`'s. */
#define COLL_GPU_EXT_OPS(type)                            \
    COLL_GPU_EXT_DEFINE_OP(type, sum, a + b)              \
    COLL_GPU_EXT_DEFINE_OP(type, prod, a * b)             \
    COLL_GPU_EXT_DEFINE_OP(type, min, a < b ? a : b)      \
    COLL_GPU_EXT_DEFINE_OP(type, max, a > b ? a : b)
COLL_GPU_EXT_OPS(float16)
COLL_GPU_EXT_OPS(bfloat16)

#ifndef COLL_GPU_EXT_IMPLEMENTATION
/* Prefer coll/gpu's copy of a function (so it recognises the op); fall back
 * to this header's when coll/gpu is not loaded. */
static inline MPI_User_function *coll_gpu_ext_pick(const char *symbol, MPI_User_function *fallback)
{
    void *fn = dlsym(RTLD_DEFAULT, symbol);
    return fn ? (MPI_User_function *)fn : fallback;
}

static inline int coll_gpu_ext_init(coll_gpu_ext_t *ext)
{
    int rc = MPI_Type_contiguous(2, MPI_BYTE, &ext->float16);
    if (rc == MPI_SUCCESS) rc = MPI_Type_set_name(ext->float16, COLL_GPU_EXT_FLOAT16_NAME);
    if (rc == MPI_SUCCESS) rc = MPI_Type_commit(&ext->float16);
    if (rc == MPI_SUCCESS) rc = MPI_Type_contiguous(2, MPI_BYTE, &ext->bfloat16);
    if (rc == MPI_SUCCESS) rc = MPI_Type_set_name(ext->bfloat16, COLL_GPU_EXT_BFLOAT16_NAME);
    if (rc == MPI_SUCCESS) rc = MPI_Type_commit(&ext->bfloat16);
#define COLL_GPU_EXT_MAKE_OP(type, name)                                                                   \
    if (rc == MPI_SUCCESS)                                                                                 \
        rc = MPI_Op_create(coll_gpu_ext_pick("coll_gpu_ext_" #type "_" #name, coll_gpu_ext_##type##_##name), \
                           1, &ext->type##_##name);
    COLL_GPU_EXT_MAKE_OP(float16, sum)
    COLL_GPU_EXT_MAKE_OP(float16, prod)
    COLL_GPU_EXT_MAKE_OP(float16, min)
    COLL_GPU_EXT_MAKE_OP(float16, max)
    COLL_GPU_EXT_MAKE_OP(bfloat16, sum)
    COLL_GPU_EXT_MAKE_OP(bfloat16, prod)
    COLL_GPU_EXT_MAKE_OP(bfloat16, min)
    COLL_GPU_EXT_MAKE_OP(bfloat16, max)
#undef COLL_GPU_EXT_MAKE_OP
    return rc;
}

static inline void coll_gpu_ext_free(coll_gpu_ext_t *ext)
{
    MPI_Op *ops[] = {&ext->float16_sum, &ext->float16_prod, &ext->float16_min, &ext->float16_max,
                     &ext->bfloat16_sum, &ext->bfloat16_prod, &ext->bfloat16_min, &ext->bfloat16_max};
    for (unsigned i = 0; i < sizeof ops / sizeof ops[0]; i++) MPI_Op_free(ops[i]);
    MPI_Type_free(&ext->float16);
    MPI_Type_free(&ext->bfloat16);
}
#endif

#ifdef __cplusplus
}
#endif
#endif
