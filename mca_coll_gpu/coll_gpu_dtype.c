/* MPI datatypes and ops onto the core's table (common/gpucoll_types.h).
 * Anything that maps to GPUCOLL_*_NONE is reduced by Open MPI on the host
 * (staged path), so an unmapped type is slower, never wrong. */
#include "coll_gpu.h"


/* The integer types the kernels reduce: C's, MPI's fixed-width ones,
 * MPI_AINT, MPI_OFFSET, MPI_COUNT, and MPI_BYTE (Open MPI takes more than
 * the bitwise ops on it). */
static bool is_integer_type(ompi_datatype_t *dt)
{
    static ompi_datatype_t *const integers[] = {
        MPI_INT8_T, MPI_UINT8_T, MPI_INT16_T, MPI_UINT16_T, MPI_INT32_T, MPI_UINT32_T, MPI_INT64_T, MPI_UINT64_T,
        MPI_SIGNED_CHAR, MPI_UNSIGNED_CHAR, MPI_SHORT, MPI_UNSIGNED_SHORT, MPI_INT, MPI_UNSIGNED, MPI_LONG,
        MPI_UNSIGNED_LONG, MPI_LONG_LONG_INT, MPI_UNSIGNED_LONG_LONG, MPI_AINT, MPI_OFFSET, MPI_COUNT, MPI_BYTE};
    for (size_t i = 0; i < sizeof integers / sizeof integers[0]; i++)
        if (dt == integers[i]) return true;
    return false;
}

/* Whether Open MPI's host MIN and MAX read `dt` as signed. That is not
 * always what its C type says: Open MPI 4.1 reduces MPI_OFFSET (a long long)
 * as uint64_t (ompi/op/op.c maps it so), and 4.1.4 compares MPI_UNSIGNED_LONG
 * as a signed long (open-mpi/ompi#10525). A reduction on the GPU must give
 * what the same call gives on host buffers or staged, so the host op is
 * asked, once per type: the minimum of all-ones and zero is all-ones only
 * where all-ones reads as -1. (SUM, PROD and the bitwise and logical ops
 * give the same bits either way.) */
static bool host_compares_signed(ompi_datatype_t *dt)
{
    static signed char known[OMPI_DATATYPE_MAX_PREDEFINED]; /* 1 signed, -1 unsigned, 0 not asked yet */
    const bool cached = dt->id >= 0 && dt->id < OMPI_DATATYPE_MAX_PREDEFINED;
    signed char s = cached ? __atomic_load_n(&known[dt->id], __ATOMIC_RELAXED) : 0;
    if (s != 0) return s > 0;
    char *msg = NULL;
    if (!ompi_op_is_valid(MPI_MIN, dt, &msg, "coll/gpu")) {
        free(msg); /* MPI rejects MIN and MAX on it before they reach us */
        return true;
    }
    uint64_t ones = UINT64_MAX, zero = 0; /* no integer type is wider */
    ompi_op_reduce(MPI_MIN, &ones, &zero, 1, dt);
    s = zero != 0 ? 1 : -1;
    if (cached) __atomic_store_n(&known[dt->id], s, __ATOMIC_RELAXED);
    return s > 0;
}

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
    if (is_integer_type(dt)) return int_by_size(dt->super.size, host_compares_signed(dt));
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
