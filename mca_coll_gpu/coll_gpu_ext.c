/* coll/gpu's own copy of the fp16/bf16 op functions of include/coll_gpu_ext.h,
 * exported so that the header's ops resolve to them and we can recognise
 * them by address (MPI gives user ops no names). */
#define COLL_GPU_EXT_IMPLEMENTATION
#include "coll_gpu_ext.h"

#include "gpucoll_types.h"

int coll_gpu_ext_op_kind(void *fn, int bf16);
int coll_gpu_ext_dtype_kind(const char *name);

int coll_gpu_ext_dtype_kind(const char *name)
{
    if (strcmp(name, COLL_GPU_EXT_FLOAT16_NAME) == 0) return GPUCOLL_FLOAT16;
    if (strcmp(name, COLL_GPU_EXT_BFLOAT16_NAME) == 0) return GPUCOLL_BFLOAT16;
    return GPUCOLL_DTYPE_NONE;
}

int coll_gpu_ext_op_kind(void *fn, int bf16)
{
    if (fn == (void *)(bf16 ? coll_gpu_ext_bfloat16_sum : coll_gpu_ext_float16_sum)) return GPUCOLL_OP_SUM;
    if (fn == (void *)(bf16 ? coll_gpu_ext_bfloat16_prod : coll_gpu_ext_float16_prod)) return GPUCOLL_OP_PROD;
    if (fn == (void *)(bf16 ? coll_gpu_ext_bfloat16_min : coll_gpu_ext_float16_min)) return GPUCOLL_OP_MIN;
    if (fn == (void *)(bf16 ? coll_gpu_ext_bfloat16_max : coll_gpu_ext_float16_max)) return GPUCOLL_OP_MAX;
    return GPUCOLL_OP_NONE;
}
