/* MPI datatypes and ops onto the core's table (common/gpucoll_types.h).
 * Anything that maps to GPUCOLL_*_NONE is reduced by Open MPI on the host
 * (staged path), so an unmapped type is slower, never wrong. */
#include "coll_gpu.h"


typedef struct {
    MPI_Datatype mpi;
    gpucoll_dtype_t dtype;
} dtype_entry_t;

/* Sizes of C types differ between platforms: map those by their size. */
static gpucoll_dtype_t int_by_size(size_t bytes, bool is_signed)
{
    switch (bytes) {
    case 1: return is_signed ? GPUCOLL_INT8 : GPUCOLL_UINT8;
    case 2: return is_signed ? GPUCOLL_INT16 : GPUCOLL_UINT16;
    case 4: return is_signed ? GPUCOLL_INT32 : GPUCOLL_UINT32;
    case 8: return is_signed ? GPUCOLL_INT64 : GPUCOLL_UINT64;
    default: return GPUCOLL_DTYPE_NONE;
    }
}

gpucoll_dtype_t coll_gpu_map_dtype(ompi_datatype_t *dt)
{
    if (dt == MPI_FLOAT) return GPUCOLL_FLOAT32;
    if (dt == MPI_DOUBLE) return GPUCOLL_FLOAT64;
    if (dt == MPI_INT8_T || dt == MPI_SIGNED_CHAR) return GPUCOLL_INT8;
    if (dt == MPI_UINT8_T || dt == MPI_UNSIGNED_CHAR || dt == MPI_BYTE) return GPUCOLL_UINT8;
    if (dt == MPI_INT16_T) return GPUCOLL_INT16;
    if (dt == MPI_UINT16_T) return GPUCOLL_UINT16;
    if (dt == MPI_INT32_T) return GPUCOLL_INT32;
    if (dt == MPI_UINT32_T) return GPUCOLL_UINT32;
    if (dt == MPI_INT64_T) return GPUCOLL_INT64;
    if (dt == MPI_UINT64_T) return GPUCOLL_UINT64;
    if (dt == MPI_SHORT) return int_by_size(sizeof(short), true);
    if (dt == MPI_UNSIGNED_SHORT) return int_by_size(sizeof(short), false);
    if (dt == MPI_INT) return int_by_size(sizeof(int), true);
    if (dt == MPI_UNSIGNED) return int_by_size(sizeof(int), false);
    if (dt == MPI_LONG) return int_by_size(sizeof(long), true);
    if (dt == MPI_UNSIGNED_LONG) return int_by_size(sizeof(long), false);
    if (dt == MPI_LONG_LONG_INT || dt == MPI_LONG_LONG) return int_by_size(sizeof(long long), true);
    if (dt == MPI_UNSIGNED_LONG_LONG) return int_by_size(sizeof(long long), false);
    if (dt == MPI_AINT) return int_by_size(sizeof(MPI_Aint), true);
    if (dt == MPI_OFFSET) return int_by_size(sizeof(MPI_Offset), true);
    if (dt == MPI_COUNT) return int_by_size(sizeof(MPI_Count), true);
    if (dt == COLL_GPU_MPIX_FLOAT16) return GPUCOLL_FLOAT16;
    /* Our public fp16/bf16 types (coll_gpu_ext.h) are found by name. */
    if (!ompi_datatype_is_predefined(dt) && dt->super.size == 2) return (gpucoll_dtype_t)coll_gpu_ext_dtype_kind(dt->name);
    return GPUCOLL_DTYPE_NONE;
}

gpucoll_op_t coll_gpu_map_op(ompi_op_t *op, gpucoll_dtype_t dtype)
{
    gpucoll_op_t o = GPUCOLL_OP_NONE;
    if (op == MPI_SUM) o = GPUCOLL_OP_SUM;
    else if (op == MPI_PROD) o = GPUCOLL_OP_PROD;
    else if (op == MPI_MAX) o = GPUCOLL_OP_MAX;
    else if (op == MPI_MIN) o = GPUCOLL_OP_MIN;
    else if (op == MPI_LAND) o = GPUCOLL_OP_LAND;
    else if (op == MPI_LOR) o = GPUCOLL_OP_LOR;
    else if (op == MPI_LXOR) o = GPUCOLL_OP_LXOR;
    else if (op == MPI_BAND) o = GPUCOLL_OP_BAND;
    else if (op == MPI_BOR) o = GPUCOLL_OP_BOR;
    else if (op == MPI_BXOR) o = GPUCOLL_OP_BXOR;
    else if ((dtype == GPUCOLL_FLOAT16 || dtype == GPUCOLL_BFLOAT16) && !ompi_op_is_intrinsic(op)) {
        /* The ops of coll_gpu_ext.h carry their meaning in their host function. */
        o = (gpucoll_op_t)coll_gpu_ext_op_kind((void *)op->o_func.c_fn, dtype == GPUCOLL_BFLOAT16);
    }
    if (o == GPUCOLL_OP_NONE || !gpucoll_op_valid(o, dtype)) return GPUCOLL_OP_NONE;
    return o;
}

bool coll_gpu_layout(ompi_datatype_t *dtype, size_t count, size_t blocks, ompi_op_t *op, gpucoll_coll_args_t *a,
                     ptrdiff_t *first)
{
    *first = 0;
    if (op != NULL) { /* reduction: predefined types only, whose data starts at buf */
        a->dtype = coll_gpu_map_dtype(dtype);
        a->op = a->dtype == GPUCOLL_DTYPE_NONE ? GPUCOLL_OP_NONE : coll_gpu_map_op(op, a->dtype);
        a->count = count;
        return a->op != GPUCOLL_OP_NONE;
    }
    /* A contiguous layout is not necessarily at buf: a subarray with a start
     * offset, a struct with a displacement or a resized type puts its first
     * byte at true_lb (which may be negative). Every later element follows
     * at extent == size. */
    if (!ompi_datatype_is_contiguous_memory_layout(dtype, count * blocks)) return false;
    ptrdiff_t true_lb, true_extent;
    ompi_datatype_get_true_extent(dtype, &true_lb, &true_extent);
    *first = true_lb;
    a->dtype = GPUCOLL_UINT8;
    a->op = GPUCOLL_OP_NONE;
    a->count = count * dtype->super.size;
    return true;
}
