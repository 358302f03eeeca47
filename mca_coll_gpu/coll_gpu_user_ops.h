/* User reduction ops that compute what a kernel computes: the tables behind
 * coll_gpu_op_declare (include/coll_gpu_ext.h) and the recognition of ops by
 * the symbol of their function (coll_gpu_user_op_symbols), e.g. Horovod's
 * float16_sum on MPI_Type_contiguous(2, MPI_BYTE).
 *
 * No Open MPI header here, so that a cpu unit test covers all of it
 * (tests/glue/test_user_ops.cpp); coll_gpu_dtype.c puts it to use.
 *
 * Both tables are keyed by the op's C function, never by its MPI_Op handle:
 * a handle freed and reused by MPI_Op_create for another function meets no
 * stale entry. Entries are never changed or removed once published, so the
 * per-call lookups read them without a lock (each collective with a user op
 * asks, from any thread under MPI_THREAD_MULTIPLE). */
#ifndef COLL_GPU_USER_OPS_H
#define COLL_GPU_USER_OPS_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include "gpucoll_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Horovod's four fp16 ops (horovod/common/half.cc), as Open MPI's mpi.h
 * makes their C++ names (MPI_Datatype is struct ompi_datatype_t *). */
#define COLL_GPU_USER_OP_SYMBOLS_DEFAULT                                   \
    "_ZN7horovod6common11float16_sumEPvS1_PiPP15ompi_datatype_t=float16:sum,"  \
    "_ZN7horovod6common11float16_minEPvS1_PiPP15ompi_datatype_t=float16:min,"  \
    "_ZN7horovod6common11float16_maxEPvS1_PiPP15ompi_datatype_t=float16:max,"  \
    "_ZN7horovod6common12float16_prodEPvS1_PiPP15ompi_datatype_t=float16:prod"

/* What a user op computes, in the kernels' terms (dtype NONE: nothing known). */
typedef struct coll_gpu_meaning {
    gpucoll_dtype_t dtype;
    gpucoll_op_t op;
} coll_gpu_meaning_t;

/* "float16:sum" (names of common/gpucoll_types.h, any case) of `len` bytes;
 * false unless both are known and the kernels reduce that op on that type. */
bool coll_gpu_meaning_parse(const char *text, size_t len, coll_gpu_meaning_t *m);

/* ---- symbols --------------------------------------------------------------
 * The parameter: "SYMBOL=TYPE:OP" entries separated by commas, spaces or
 * newlines; "" or "none" for none. An entry that does not parse is reported
 * through `report` (its text, why) and left out; the others still count. */
typedef struct coll_gpu_symbol_rule {
    char *symbol;
    coll_gpu_meaning_t as;
} coll_gpu_symbol_rule_t;
typedef void (*coll_gpu_report_fn)(void *ctx, const char *entry, const char *why);

/* Returns how many rules *rules holds (malloc'ed; NULL for none). */
int coll_gpu_symbol_rules_parse(const char *spec, coll_gpu_symbol_rule_t **rules, coll_gpu_report_fn report,
                                void *ctx);
void coll_gpu_symbol_rules_free(coll_gpu_symbol_rule_t *rules, int n);
/* The rule naming `symbol` exactly, or NULL. */
const coll_gpu_symbol_rule_t *coll_gpu_symbol_rules_match(const coll_gpu_symbol_rule_t *rules, int n,
                                                          const char *symbol);

/* The rules of one parameter value and what dladdr said of each function
 * asked about (dladdr walks the link map: far too slow for every call).
 * Answers, "not recognised" too, are cached until the cache is full; past
 * that dladdr is asked every time, so that the answer never depends on
 * which functions came first (ranks must agree without talking). */
#define COLL_GPU_FN_CACHE_MAX 256
typedef struct coll_gpu_recogniser {
    pthread_mutex_t lock;
    int ready; /* rules parsed (read and written atomically) */
    coll_gpu_symbol_rule_t *rules;
    int nrules;
    int count; /* entries of cache published (atomic) */
    struct {
        void *fn;
        const coll_gpu_symbol_rule_t *rule; /* NULL: not recognised */
    } cache[COLL_GPU_FN_CACHE_MAX];
} coll_gpu_recogniser_t;
#define COLL_GPU_RECOGNISER_INIT {PTHREAD_MUTEX_INITIALIZER, 0, NULL, 0, 0, {{NULL, NULL}}}

/* The rule that names the function at exactly `fn` (dladdr's symbol must
 * start there: an address inside a function never takes its name), or
 * NULL. The first call parses `spec` (later calls ignore it). *fresh: this
 * call asked dladdr (may be NULL). */
const coll_gpu_symbol_rule_t *coll_gpu_recognise(coll_gpu_recogniser_t *r, void *fn, const char *spec,
                                                 coll_gpu_report_fn report, void *ctx, bool *fresh);

/* ---- declarations (coll_gpu_op_declare) ---------------------------------- *
 * Key: the function, the element size, and which predefined type (its id;
 * -1 for any derived type of that size). */
typedef struct coll_gpu_decl_key {
    void *fn;
    size_t size;
    int predefined;
} coll_gpu_decl_key_t;

#define COLL_GPU_DECL_MAX 64
typedef struct coll_gpu_decl_table {
    pthread_mutex_t lock;
    int count; /* entries published (atomic) */
    struct {
        coll_gpu_decl_key_t key;
        coll_gpu_meaning_t as;
    } e[COLL_GPU_DECL_MAX];
} coll_gpu_decl_table_t;
#define COLL_GPU_DECL_TABLE_INIT {PTHREAD_MUTEX_INITIALIZER, 0, {{{NULL, 0, 0}, {GPUCOLL_DTYPE_NONE, GPUCOLL_OP_NONE}}}}

typedef enum coll_gpu_decl_result {
    COLL_GPU_DECL_ADDED,
    COLL_GPU_DECL_SAME,     /* declared before with this meaning */
    COLL_GPU_DECL_CONFLICT, /* declared before with another (*prior) */
    COLL_GPU_DECL_FULL
} coll_gpu_decl_result_t;

coll_gpu_decl_result_t coll_gpu_decl_add(coll_gpu_decl_table_t *t, coll_gpu_decl_key_t key, coll_gpu_meaning_t as,
                                         coll_gpu_meaning_t *prior);
bool coll_gpu_decl_find(coll_gpu_decl_table_t *t, coll_gpu_decl_key_t key, coll_gpu_meaning_t *as);

#ifdef __cplusplus
}
#endif
#endif
