/* MPI datatypes and ops onto the core's table (common/gpucoll_types.h).
 * Anything that maps to GPUCOLL_*_NONE is reduced by Open MPI on the host
 * (staged path), so an unmapped type is slower, never wrong. */
#include "coll_gpu.h"
#include "coll_gpu_user_ops.h"


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

/* ---- user ops known to compute what a kernel computes ---------------------
 * Declared (coll_gpu_op_declare) or recognised by their function's symbol
 * (coll_gpu_user_op_symbols). Both answers depend only on the function, the
 * type and the parameter, never on earlier calls: the nonblocking paths
 * decide without asking the other ranks, which must answer alike. */

char *coll_gpu_user_op_symbols = COLL_GPU_USER_OP_SYMBOLS_DEFAULT;

/* The cpu tests link this file without the component (coll_gpu_component.c);
 * there nothing is printed. */
#pragma weak mca_coll_gpu_component
#define USER_OP_VERBOSE(level, ...)                                                    \
    do {                                                                               \
        if (&mca_coll_gpu_component != NULL) COLL_GPU_VERBOSE(level, __VA_ARGS__);     \
    } while (0)

static coll_gpu_recogniser_t recogniser = COLL_GPU_RECOGNISER_INIT;
static coll_gpu_decl_table_t declared = COLL_GPU_DECL_TABLE_INIT;

/* The function of an op made by MPI_Op_create in C; NULL for predefined ops
 * and for Fortran, C++ and Java ops, whose slot holds other things (the C++
 * and Java ones one intercept function for all). */
static void *user_c_fn(ompi_op_t *op)
{
    int foreign = OMPI_OP_FLAGS_INTRINSIC | OMPI_OP_FLAGS_FORTRAN_FUNC | OMPI_OP_FLAGS_JAVA_FUNC;
#ifdef OMPI_OP_FLAGS_CXX_FUNC
    foreign |= OMPI_OP_FLAGS_CXX_FUNC;
#endif
    if (op == NULL || op == MPI_OP_NULL || (op->o_flags & foreign)) return NULL;
    return (void *)op->o_func.c_fn;
}

/* Elements from the buffer's first byte on, back to back: what a kernel reads. */
static bool packed_elements(ompi_datatype_t *dt)
{
    ptrdiff_t true_lb, true_extent, lb, extent;
    if (dt->super.size == 0 || !ompi_datatype_is_contiguous_memory_layout(dt, 2)) return false;
    ompi_datatype_get_true_extent(dt, &true_lb, &true_extent);
    ompi_datatype_get_extent(dt, &lb, &extent);
    return true_lb == 0 && (size_t)extent == dt->super.size;
}

static coll_gpu_decl_key_t decl_key(void *fn, ompi_datatype_t *dt)
{
    return (coll_gpu_decl_key_t){fn, dt->super.size, ompi_datatype_is_predefined(dt) ? dt->id : -1};
}

static void report_symbol_entry(void *ctx, const char *entry, const char *why)
{
    (void)ctx;
    opal_output(0, "coll:gpu: coll_gpu_user_op_symbols: \"%s\" left out: %s", entry, why);
}

static coll_gpu_meaning_t recognised(void *fn, ompi_datatype_t *dt)
{
    coll_gpu_meaning_t m = {GPUCOLL_DTYPE_NONE, GPUCOLL_OP_NONE};
    bool fresh;
    const coll_gpu_symbol_rule_t *rule =
        coll_gpu_recognise(&recogniser, fn, coll_gpu_user_op_symbols, report_symbol_entry, NULL, &fresh);
    if (fresh && rule)
        USER_OP_VERBOSE(10, "user op %s recognised (coll_gpu_user_op_symbols): reduced on the GPU as %s %s on "
                         "%zu-byte types", rule->symbol, gpucoll_dtype_name(rule->as.dtype),
                         gpucoll_op_name(rule->as.op), gpucoll_dtype_size(rule->as.dtype));
    else if (fresh)
        USER_OP_VERBOSE(20, "user op function %p not named by coll_gpu_user_op_symbols: reduced by Open MPI", fn);
    if (rule && gpucoll_dtype_size(rule->as.dtype) == dt->super.size) m = rule->as;
    return m;
}

/* What the user op `op` computes on `dt`, if known; recognition by symbol
 * covers derived types only (Horovod's fp16 is one). */
static coll_gpu_meaning_t user_op_meaning(ompi_datatype_t *dt, ompi_op_t *op)
{
    coll_gpu_meaning_t m = {GPUCOLL_DTYPE_NONE, GPUCOLL_OP_NONE};
    void *fn = user_c_fn(op);
    if (fn == NULL || !packed_elements(dt)) return m;
    coll_gpu_decl_key_t key = decl_key(fn, dt);
    if (coll_gpu_decl_find(&declared, key, &m) || key.predefined >= 0) return m;
    return recognised(fn, dt);
}

bool coll_gpu_map_reduction(ompi_datatype_t *dtype, ompi_op_t *op, gpucoll_dtype_t *d, gpucoll_op_t *o)
{
    *d = coll_gpu_map_dtype(dtype);
    *o = *d == GPUCOLL_DTYPE_NONE ? GPUCOLL_OP_NONE : coll_gpu_map_op(op, *d);
    if (*o == GPUCOLL_OP_NONE && !ompi_op_is_intrinsic(op)) {
        coll_gpu_meaning_t m = user_op_meaning(dtype, op);
        if (m.op != GPUCOLL_OP_NONE && gpucoll_op_valid(m.op, m.dtype)) {
            *d = m.dtype;
            *o = m.op;
        }
    }
    return *o != GPUCOLL_OP_NONE;
}

/* coll_gpu_op_declare (include/coll_gpu_ext.h): found by name, like the
 * stream-ordered calls, and returning MPI error classes itself. */
#define COLL_GPU_EXPORT __attribute__((visibility("default")))

static int declare_refused(int rc, const char *why)
{
    opal_output(0, "coll:gpu: coll_gpu_op_declare: %s", why);
    return rc;
}

/* MPI_SUCCESS with *key and *as, or the error class and why. */
static int declare_check(MPI_Op user_op, MPI_Datatype user_type, MPI_Datatype as_type, MPI_Op as_op,
                         coll_gpu_decl_key_t *key, coll_gpu_meaning_t *as)
{
    void *fn = user_c_fn(user_op);
    if (fn == NULL) return declare_refused(MPI_ERR_OP, "user_op is not an op made by MPI_Op_create in C");
    if (user_type == NULL || user_type == MPI_DATATYPE_NULL || !ompi_datatype_is_committed(user_type))
        return declare_refused(MPI_ERR_TYPE, "user_type is MPI_DATATYPE_NULL or not committed");
    if (!packed_elements(user_type))
        return declare_refused(MPI_ERR_TYPE, "user_type is not contiguous from its lower bound 0, with extent "
                                             "equal to its size");
    as->dtype = as_type == NULL || as_type == MPI_DATATYPE_NULL ? GPUCOLL_DTYPE_NONE : coll_gpu_map_dtype(as_type);
    if (as->dtype == GPUCOLL_DTYPE_NONE)
        return declare_refused(MPI_ERR_TYPE, "as_type has no GPU reduction (a predefined integer or floating "
                                             "type, or coll_gpu_ext.h's float16/bfloat16)");
    if (gpucoll_dtype_size(as->dtype) != user_type->super.size)
        return declare_refused(MPI_ERR_TYPE, "user_type and as_type differ in size");
    as->op = as_op == NULL || as_op == MPI_OP_NULL ? GPUCOLL_OP_NONE : coll_gpu_map_op(as_op, as->dtype);
    if (as->op == GPUCOLL_OP_NONE)
        return declare_refused(MPI_ERR_OP, "as_op is not a predefined op (or one of coll_gpu_ext.h's) that the "
                                           "GPU reduces on as_type");
    *key = decl_key(fn, user_type);
    return MPI_SUCCESS;
}

COLL_GPU_EXPORT int coll_gpu_impl_op_declare(MPI_Op user_op, MPI_Datatype user_type, MPI_Datatype as_type,
                                             MPI_Op as_op);
COLL_GPU_EXPORT int coll_gpu_impl_op_declare(MPI_Op user_op, MPI_Datatype user_type, MPI_Datatype as_type,
                                             MPI_Op as_op)
{
    coll_gpu_decl_key_t key;
    coll_gpu_meaning_t as, prior;
    int rc = declare_check(user_op, user_type, as_type, as_op, &key, &as);
    if (rc != MPI_SUCCESS) return rc;
    switch (coll_gpu_decl_add(&declared, key, as, &prior)) {
    case COLL_GPU_DECL_CONFLICT:
        opal_output(0, "coll:gpu: coll_gpu_op_declare: the function of user_op was declared as %s %s on this type "
                    "before; a declaration cannot be changed", gpucoll_dtype_name(prior.dtype), gpucoll_op_name(prior.op));
        return MPI_ERR_ARG;
    case COLL_GPU_DECL_FULL:
        opal_output(0, "coll:gpu: coll_gpu_op_declare: all %d declarations are taken", COLL_GPU_DECL_MAX);
        return MPI_ERR_NO_MEM;
    case COLL_GPU_DECL_ADDED:
        USER_OP_VERBOSE(10, "user op function %p declared: reduced on the GPU as %s %s on %zu-byte %s types", key.fn,
                         gpucoll_dtype_name(as.dtype), gpucoll_op_name(as.op), key.size,
                         key.predefined >= 0 ? user_type->name : "derived");
        return MPI_SUCCESS;
    default: return MPI_SUCCESS;
    }
}

bool coll_gpu_layout(ompi_datatype_t *dtype, size_t count, size_t blocks, ompi_op_t *op, gpucoll_coll_args_t *a,
                     ptrdiff_t *first)
{
    *first = 0;
    if (op != NULL) { /* reduction: types whose elements start at buf and follow each other */
        a->count = count;
        return coll_gpu_map_reduction(dtype, op, &a->dtype, &a->op);
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
