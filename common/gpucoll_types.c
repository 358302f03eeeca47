#include "gpucoll_types.h"

static const struct {
    const char *name;
    size_t bytes;
    int is_float;
} dtype_info[GPUCOLL_DTYPE_COUNT] = {
#define GPUCOLL_X(name, bytes, is_float) {#name, bytes, is_float},
    GPUCOLL_DTYPE_TABLE(GPUCOLL_X)
#undef GPUCOLL_X
};

static const struct {
    const char *name;
    int on_float, on_int;
} op_info[GPUCOLL_OP_COUNT] = {
#define GPUCOLL_X(name, on_float, on_int) {#name, on_float, on_int},
    GPUCOLL_OP_TABLE(GPUCOLL_X)
#undef GPUCOLL_X
};

static int dtype_ok(gpucoll_dtype_t d) { return d >= 0 && d < GPUCOLL_DTYPE_COUNT; }
static int op_ok(gpucoll_op_t o) { return o >= 0 && o < GPUCOLL_OP_COUNT; }

size_t gpucoll_dtype_size(gpucoll_dtype_t d) { return dtype_ok(d) ? dtype_info[d].bytes : 0; }
int gpucoll_dtype_is_float(gpucoll_dtype_t d) { return dtype_ok(d) && dtype_info[d].is_float; }
const char *gpucoll_dtype_name(gpucoll_dtype_t d) { return dtype_ok(d) ? dtype_info[d].name : "none"; }
const char *gpucoll_op_name(gpucoll_op_t o) { return op_ok(o) ? op_info[o].name : "none"; }

int gpucoll_op_valid(gpucoll_op_t o, gpucoll_dtype_t d)
{
    if (!dtype_ok(d) || !op_ok(o)) return 0;
    return dtype_info[d].is_float ? op_info[o].on_float : op_info[o].on_int;
}
