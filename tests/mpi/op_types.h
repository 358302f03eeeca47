/* Every predefined datatype MPI allows in a predefined reduction (the groups
 * of MPI-3.1 section 5.9.2), the ops each group allows, and element values
 * that tell signed from unsigned and wide from narrow. Shared by
 * op_types_check.c (every collective form against MPI_Reduce_local) and
 * op_map_check.cpp (the glue's mapping against MPI_Reduce_local). */
#ifndef COLL_GPU_OP_TYPES_H
#define COLL_GPU_OP_TYPES_H

#include <float.h>
#include <mpi.h>
#include <stdint.h>
#include <string.h>

enum {
    OT_CINT = 1,     /* C integer */
    OT_FINT = 2,     /* Fortran integer */
    OT_FLOAT = 4,    /* floating point */
    OT_LOGICAL = 8,  /* MPI_C_BOOL, MPI_CXX_BOOL, MPI_LOGICAL */
    OT_COMPLEX = 16,
    OT_BYTE = 32,
    OT_MULTI = 64,   /* MPI_AINT, MPI_OFFSET, MPI_COUNT */
    OT_PAIR = 128    /* MINLOC / MAXLOC */
};

/* How an element is filled: its value field (a component of a complex, the
 * value of a pair) and, for pairs, the index after it. */
enum { OV_INT, OV_REAL, OV_LOGICAL, OV_COMPLEX, OV_PAIR_INT, OV_PAIR_REAL };

typedef struct {
    const char *name;
    MPI_Datatype type;
    int group, value;
    int vsize;             /* bytes of the value (of each component of a complex) */
    int ioff, isize, ireal; /* pairs: the index's offset and size, real-typed (2REAL, 2DOUBLE_PRECISION) */
} op_type_t;

typedef struct {
    const char *name;
    MPI_Op op;
    int groups; /* the groups MPI allows it on */
} op_op_t;

#define OT_INTS (OT_CINT | OT_FINT | OT_MULTI)
static const op_op_t op_ops[] = {
    {"MPI_MAX", MPI_MAX, OT_INTS | OT_FLOAT},
    {"MPI_MIN", MPI_MIN, OT_INTS | OT_FLOAT},
    {"MPI_SUM", MPI_SUM, OT_INTS | OT_FLOAT | OT_COMPLEX},
    {"MPI_PROD", MPI_PROD, OT_INTS | OT_FLOAT | OT_COMPLEX},
    {"MPI_LAND", MPI_LAND, OT_CINT | OT_LOGICAL},
    {"MPI_LOR", MPI_LOR, OT_CINT | OT_LOGICAL},
    {"MPI_LXOR", MPI_LXOR, OT_CINT | OT_LOGICAL},
    {"MPI_BAND", MPI_BAND, OT_INTS | OT_BYTE},
    {"MPI_BOR", MPI_BOR, OT_INTS | OT_BYTE},
    {"MPI_BXOR", MPI_BXOR, OT_INTS | OT_BYTE},
    {"MPI_MAXLOC", MPI_MAXLOC, OT_PAIR},
    {"MPI_MINLOC", MPI_MINLOC, OT_PAIR},
};
#define OP_NOPS ((int)(sizeof op_ops / sizeof op_ops[0]))

#define OT_N(t, g, v, size) {#t, t, g, v, size, 0, 0, 0}
/* The index follows the value at its own (natural) alignment, as in struct { value; index; }. */
#define OT_P(t, v, vsize, itype, ireal) \
    {#t, t, OT_PAIR, v, (int)(vsize), (int)(((vsize) + sizeof(itype) - 1) / sizeof(itype) * sizeof(itype)), (int)sizeof(itype), ireal}
static const op_type_t op_types[] = {
    OT_N(MPI_INT, OT_CINT, OV_INT, sizeof(int)),
    OT_N(MPI_LONG, OT_CINT, OV_INT, sizeof(long)),
    OT_N(MPI_SHORT, OT_CINT, OV_INT, sizeof(short)),
    OT_N(MPI_UNSIGNED_SHORT, OT_CINT, OV_INT, sizeof(short)),
    OT_N(MPI_UNSIGNED, OT_CINT, OV_INT, sizeof(int)),
    OT_N(MPI_UNSIGNED_LONG, OT_CINT, OV_INT, sizeof(long)),
    OT_N(MPI_LONG_LONG_INT, OT_CINT, OV_INT, sizeof(long long)),
    OT_N(MPI_LONG_LONG, OT_CINT, OV_INT, sizeof(long long)),
    OT_N(MPI_UNSIGNED_LONG_LONG, OT_CINT, OV_INT, sizeof(long long)),
    OT_N(MPI_SIGNED_CHAR, OT_CINT, OV_INT, 1),
    OT_N(MPI_UNSIGNED_CHAR, OT_CINT, OV_INT, 1),
    OT_N(MPI_INT8_T, OT_CINT, OV_INT, 1),
    OT_N(MPI_INT16_T, OT_CINT, OV_INT, 2),
    OT_N(MPI_INT32_T, OT_CINT, OV_INT, 4),
    OT_N(MPI_INT64_T, OT_CINT, OV_INT, 8),
    OT_N(MPI_UINT8_T, OT_CINT, OV_INT, 1),
    OT_N(MPI_UINT16_T, OT_CINT, OV_INT, 2),
    OT_N(MPI_UINT32_T, OT_CINT, OV_INT, 4),
    OT_N(MPI_UINT64_T, OT_CINT, OV_INT, 8),
    OT_N(MPI_AINT, OT_MULTI, OV_INT, sizeof(MPI_Aint)),
    OT_N(MPI_OFFSET, OT_MULTI, OV_INT, sizeof(MPI_Offset)),
    OT_N(MPI_COUNT, OT_MULTI, OV_INT, sizeof(MPI_Count)),
    /* Fortran types: their sizes come from MPI (0: not in this library). */
    OT_N(MPI_INTEGER, OT_FINT, OV_INT, 0),
#ifdef MPI_INTEGER1 /* optional: absent from a build without Fortran (the 5.0 test prefix) */
    OT_N(MPI_INTEGER1, OT_FINT, OV_INT, 0),
#endif
#ifdef MPI_INTEGER2
    OT_N(MPI_INTEGER2, OT_FINT, OV_INT, 0),
#endif
#ifdef MPI_INTEGER4
    OT_N(MPI_INTEGER4, OT_FINT, OV_INT, 0),
#endif
#ifdef MPI_INTEGER8
    OT_N(MPI_INTEGER8, OT_FINT, OV_INT, 0),
#endif
#ifdef MPI_INTEGER16
    OT_N(MPI_INTEGER16, OT_FINT, OV_INT, 0),
#endif
    OT_N(MPI_FLOAT, OT_FLOAT, OV_REAL, sizeof(float)),
    OT_N(MPI_DOUBLE, OT_FLOAT, OV_REAL, sizeof(double)),
    OT_N(MPI_LONG_DOUBLE, OT_FLOAT, OV_REAL, sizeof(long double)),
    OT_N(MPI_REAL, OT_FLOAT, OV_REAL, 0),
    OT_N(MPI_DOUBLE_PRECISION, OT_FLOAT, OV_REAL, 0),
#ifdef MPI_REAL4
    OT_N(MPI_REAL4, OT_FLOAT, OV_REAL, 0),
#endif
#ifdef MPI_REAL8
    OT_N(MPI_REAL8, OT_FLOAT, OV_REAL, 0),
#endif
#ifdef MPI_REAL16
    OT_N(MPI_REAL16, OT_FLOAT, OV_REAL, 0),
#endif
    OT_N(MPI_C_BOOL, OT_LOGICAL, OV_LOGICAL, 0),
    OT_N(MPI_CXX_BOOL, OT_LOGICAL, OV_LOGICAL, 0),
    OT_N(MPI_LOGICAL, OT_LOGICAL, OV_LOGICAL, 0),
    OT_N(MPI_BYTE, OT_BYTE, OV_INT, 1),
    OT_N(MPI_C_COMPLEX, OT_COMPLEX, OV_COMPLEX, 0),
    OT_N(MPI_C_FLOAT_COMPLEX, OT_COMPLEX, OV_COMPLEX, 0),
    OT_N(MPI_C_DOUBLE_COMPLEX, OT_COMPLEX, OV_COMPLEX, 0),
    OT_N(MPI_C_LONG_DOUBLE_COMPLEX, OT_COMPLEX, OV_COMPLEX, 0),
    OT_N(MPI_CXX_FLOAT_COMPLEX, OT_COMPLEX, OV_COMPLEX, 0),
    OT_N(MPI_CXX_DOUBLE_COMPLEX, OT_COMPLEX, OV_COMPLEX, 0),
    OT_N(MPI_CXX_LONG_DOUBLE_COMPLEX, OT_COMPLEX, OV_COMPLEX, 0),
    OT_N(MPI_COMPLEX, OT_COMPLEX, OV_COMPLEX, 0),
    OT_N(MPI_DOUBLE_COMPLEX, OT_COMPLEX, OV_COMPLEX, 0),
#ifdef MPI_COMPLEX8
    OT_N(MPI_COMPLEX8, OT_COMPLEX, OV_COMPLEX, 0),
#endif
#ifdef MPI_COMPLEX16
    OT_N(MPI_COMPLEX16, OT_COMPLEX, OV_COMPLEX, 0),
#endif
#ifdef MPI_COMPLEX32
    OT_N(MPI_COMPLEX32, OT_COMPLEX, OV_COMPLEX, 0),
#endif
    OT_P(MPI_FLOAT_INT, OV_PAIR_REAL, sizeof(float), int, 0),
    OT_P(MPI_DOUBLE_INT, OV_PAIR_REAL, sizeof(double), int, 0),
    OT_P(MPI_LONG_INT, OV_PAIR_INT, sizeof(long), int, 0),
    OT_P(MPI_2INT, OV_PAIR_INT, sizeof(int), int, 0),
    OT_P(MPI_SHORT_INT, OV_PAIR_INT, sizeof(short), int, 0),
    OT_P(MPI_LONG_DOUBLE_INT, OV_PAIR_REAL, sizeof(long double), int, 0),
    OT_P(MPI_2REAL, OV_PAIR_REAL, sizeof(float), float, 1),
    OT_P(MPI_2DOUBLE_PRECISION, OV_PAIR_REAL, sizeof(double), double, 1),
    OT_P(MPI_2INTEGER, OV_PAIR_INT, sizeof(int), int, 0),
};
#undef OT_N
#undef OT_P
#define OP_NTYPES ((int)(sizeof op_types / sizeof op_types[0]))

/* The size of one value field of `t` in this library (a Fortran type's
 * from MPI_Type_size), 0 where the library lacks the type. */
static inline int op_type_vsize(const op_type_t *t)
{
    int size = 0;
    if (t->vsize) return t->vsize;
    if (MPI_Type_size(t->type, &size) != MPI_SUCCESS) return 0;
    return t->value == OV_COMPLEX ? size / 2 : size;
}

/* 64-bit patterns: negative and not at every width (the top bit of the low
 * 1, 2, 4 and 8 bytes set in some, clear in others), above 2^31 and 2^32. */
static const uint64_t op_int_patterns[8] = {
    0x0000000000000005ull, 0xffffffffffffffffull, 0x0000000180000000ull, 0x8000000000000000ull,
    0x00000000fffffff0ull, 0x7ffffffffffffff0ull, 0xffffffff7fffffffull, 0x0000000100000083ull};
/* Reals whose sums and products over four ranks are exact in any order
 * (odd parts of at most 5, exponents within 2^-1..2^13), the ones marked big
 * scaled by 2^30 where wider than float (above 2^32). Complex parts are small
 * Gaussian integers and halves, so that their products stay exact too. */
static const double op_reals[8] = {1.5, -2.0, 5120.0, -0.5, 3.0, -1280.0, 2.5, -96.0};
static const double op_small[8] = {1.0, -2.0, 3.0, -1.0, 2.0, 0.5, -1.5, 1.5};

static inline void op_put_int(unsigned char *p, int size, uint64_t v)
{
    for (int k = 0; k < size; k++) /* little-endian; sign-extended past 8 bytes */
        p[k] = k < 8 ? (unsigned char)(v >> (8 * k)) : (v >> 63 ? 0xff : 0);
}

static inline void op_put_real(unsigned char *p, int size, double v, int big)
{
    if (size == (int)sizeof(float)) {
        float f = (float)v;
        memcpy(p, &f, sizeof f);
    } else if (size == (int)sizeof(double)) {
        double d = big ? v * 1073741824.0 : v;
        memcpy(p, &d, sizeof d);
    } else if (size == (int)sizeof(long double)) {
        long double l = big ? (long double)v * 1073741824.0L : (long double)v;
        memcpy(p, &l, sizeof l);
    }
}

/* Element j of generation g of rank r's input, into `el` (zeroed by the caller). */
static inline void op_type_value(const op_type_t *t, int vsize, int r, size_t j, int g, unsigned char *el)
{
    const size_t k = (j + 3 * (size_t)r + 5 * (size_t)g) % 8;
    const size_t tie = (j + (size_t)r / 2 + (size_t)g) % 8; /* ranks 2i and 2i + 1 tie */
    const int index = 1000 - 10 * r - (int)(j % 3);         /* lower on higher ranks */
    switch (t->value) {
    case OV_INT: op_put_int(el, vsize, op_int_patterns[k] + (uint64_t)r); break;
    case OV_REAL: op_put_real(el, vsize, op_reals[k], k == 2 || k == 5); break;
    case OV_LOGICAL: op_put_int(el, vsize, (j + r + g) % 3 != 0); break;
    case OV_COMPLEX:
        op_put_real(el, vsize, op_small[k], 0);
        op_put_real(el + vsize, vsize, op_small[(k + 3) % 8], 0);
        break;
    case OV_PAIR_INT: op_put_int(el, vsize, op_int_patterns[tie]); break;
    case OV_PAIR_REAL: op_put_real(el, vsize, op_reals[tie], tie == 2 || tie == 5); break;
    }
    if (t->isize == 0) return;
    if (t->ireal) op_put_real(el + t->ioff, t->isize, index, 0);
    else op_put_int(el + t->ioff, t->isize, (uint64_t)(int64_t)index);
}

/* Bytes of a value field that carry it: an x87 long double leaves 6 of its 16 unused. */
static inline int op_significant(const op_type_t *t, int vsize)
{
    int is_real = t->value == OV_REAL || t->value == OV_COMPLEX || t->value == OV_PAIR_REAL;
    return is_real && vsize == (int)sizeof(long double) && LDBL_MANT_DIG == 64 ? 10 : vsize;
}

/* Whether elements a and b hold the same values. */
static inline int op_type_same(const op_type_t *t, int vsize, const unsigned char *a, const unsigned char *b)
{
    const int sig = op_significant(t, vsize);
    if (memcmp(a, b, sig) != 0) return 0;
    if (t->value == OV_COMPLEX && memcmp(a + vsize, b + vsize, sig) != 0) return 0;
    return t->isize == 0 || memcmp(a + t->ioff, b + t->ioff, t->ireal ? op_significant(t, t->isize) : t->isize) == 0;
}

#endif
