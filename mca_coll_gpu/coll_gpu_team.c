/* Hand a collective to the core's peer-to-peer path when this rank can take
 * it; the core agrees with the other ranks (see gpucoll_team_run). */
#include "coll_gpu.h"

static bool elementwise(ompi_datatype_t *dtype, size_t count, gpucoll_dtype_t *out_dtype, size_t *out_count,
                        ompi_op_t *op, gpucoll_op_t *out_op)
{
    if (op != NULL) { /* reduction: needs a type and op the kernels know */
        *out_dtype = coll_gpu_map_dtype(dtype);
        *out_op = *out_dtype == GPUCOLL_DTYPE_NONE ? GPUCOLL_OP_NONE : coll_gpu_map_op(op, *out_dtype);
        *out_count = count;
        return *out_op != GPUCOLL_OP_NONE;
    }
    /* data movement: any contiguous layout moves as bytes */
    if (!ompi_datatype_is_contiguous_memory_layout(dtype, count)) return false;
    *out_dtype = GPUCOLL_UINT8;
    *out_op = GPUCOLL_OP_NONE;
    *out_count = count * dtype->super.size;
    return true;
}

bool coll_gpu_team_try(mca_coll_gpu_module_t *m, gpucoll_coll_kind_t kind, const void *sbuf, void *rbuf,
                       size_t count, ompi_datatype_t *dtype, ompi_op_t *op, int root, bool device_ok, int *rc)
{
    /* Every rank passes the same count, so skipping empty calls is a shared decision. */
    if (count == 0 || !coll_gpu_team_ensure(m)) return false;
    gpucoll_coll_args_t a = {kind, sbuf == MPI_IN_PLACE ? NULL : sbuf, rbuf, 0, GPUCOLL_UINT8, GPUCOLL_OP_NONE,
                             root, 0};
    a.local_ok = device_ok && !m->force_staged && elementwise(dtype, count, &a.dtype, &a.count, op, &a.op);
    gpucoll_status_t st = gpucoll_team_run(m->team, &a);
    if (st == GPUCOLL_ERR_UNSUPPORTED) return false;
    if (st != GPUCOLL_SUCCESS) {
        *rc = coll_gpu_error(st, "peer-to-peer collective");
        return true;
    }
    COLL_GPU_VERBOSE(50, "%s: collective %d on %zu elements ran peer-to-peer", m->comm->c_name, (int)kind, a.count);
    *rc = OMPI_SUCCESS;
    return true;
}
