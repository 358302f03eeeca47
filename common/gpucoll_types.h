/* The datatypes and reduction operations coll/gpu can run on the GPU.
 *
 * This is the one table of "datatype x op": the glue maps MPI handles onto
 * these enums, the kernels instantiate a reduction for every valid pair, and
 * the tests walk the same table. Anything not representable here (derived
 * types, MAXLOC/MINLOC, user ops other than our fp16/bf16 ones) takes the
 * staged path, where Open MPI's own host code reduces. */
#ifndef GPUCOLL_TYPES_H
#define GPUCOLL_TYPES_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* X(name, element bytes, is_float) */
#define GPUCOLL_DTYPE_TABLE(X) \
    X(INT8, 1, 0)              \
    X(UINT8, 1, 0)             \
    X(INT16, 2, 0)             \
    X(UINT16, 2, 0)            \
    X(INT32, 4, 0)             \
    X(UINT32, 4, 0)            \
    X(INT64, 8, 0)             \
    X(UINT64, 8, 0)            \
    X(FLOAT16, 2, 1)           \
    X(BFLOAT16, 2, 1)          \
    X(FLOAT32, 4, 1)           \
    X(FLOAT64, 8, 1)

/* X(name, allowed on floats, allowed on integers) -- MPI-3.1 section 5.9.2 */
#define GPUCOLL_OP_TABLE(X) \
    X(SUM, 1, 1)            \
    X(PROD, 1, 1)           \
    X(MAX, 1, 1)            \
    X(MIN, 1, 1)            \
    X(LAND, 0, 1)           \
    X(LOR, 0, 1)            \
    X(LXOR, 0, 1)           \
    X(BAND, 0, 1)           \
    X(BOR, 0, 1)            \
    X(BXOR, 0, 1)

typedef enum gpucoll_dtype {
#define GPUCOLL_X(name, bytes, is_float) GPUCOLL_##name,
    GPUCOLL_DTYPE_TABLE(GPUCOLL_X)
#undef GPUCOLL_X
    GPUCOLL_DTYPE_COUNT,
    GPUCOLL_DTYPE_NONE = -1
} gpucoll_dtype_t;

typedef enum gpucoll_op {
#define GPUCOLL_X(name, on_float, on_int) GPUCOLL_OP_##name,
    GPUCOLL_OP_TABLE(GPUCOLL_X)
#undef GPUCOLL_X
    GPUCOLL_OP_COUNT,
    GPUCOLL_OP_NONE = -1 /* no reduction (bcast, allgather, ...) */
} gpucoll_op_t;

size_t gpucoll_dtype_size(gpucoll_dtype_t dtype);
int gpucoll_dtype_is_float(gpucoll_dtype_t dtype);
const char *gpucoll_dtype_name(gpucoll_dtype_t dtype);
const char *gpucoll_op_name(gpucoll_op_t op);
/* 1 if MPI allows `op` on `dtype` and the GPU kernels implement it. */
int gpucoll_op_valid(gpucoll_op_t op, gpucoll_dtype_t dtype);

#ifdef __cplusplus
}
#endif
#endif
