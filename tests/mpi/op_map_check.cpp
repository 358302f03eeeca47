// The glue's mapping of MPI datatypes and ops onto the kernels' (mca_coll_gpu/
// coll_gpu_dtype.c, linked here as the component links it), held to Open
// MPI's host functions without a GPU: for every predefined type and op MPI
// allows on it (op_types.h) that the glue sends to a kernel, the kernels' own
// element operation (kernels/reduce_ops.cuh through kernel_host_shim.h, as
// local_reduce applies it) must give what MPI_Reduce_local gives on the same
// inputs, for inputs that are negative, above 2^31 and above 2^32 where the
// type holds them. A type mapped with the wrong sign or width fails here
// (MPI_OFFSET under Open MPI 4.1, whose host functions read it as unsigned,
// did). Run on one rank; types and ops the glue leaves to Open MPI (staged
// on the GPU path) are counted, not checked.
#include "kernel_host_shim.h"

#include <cstdio>
#include <cstdlib>
#include <vector>

#include <mpi.h>

#include "gpucoll_types.h"
#include "op_types.h"
#include "reduce_ops.cuh"

extern "C" gpucoll_dtype_t coll_gpu_map_dtype(MPI_Datatype dtype);
extern "C" gpucoll_op_t coll_gpu_map_op(MPI_Op op, gpucoll_dtype_t dtype);

namespace {

using namespace gpucoll;

template <class T, class Op> void apply_all(const void *in, void *inout, size_t n)
{
    const T *a = static_cast<const T *>(in);
    T *b = static_cast<T *>(inout);
    for (size_t i = 0; i < n; i++) b[i] = Acc<T>::store(Op::apply(Acc<T>::load(a[i]), Acc<T>::load(b[i])));
}

template <class T> bool kernel_op(gpucoll_op_t op, const void *in, void *inout, size_t n)
{
    switch (op) {
    case GPUCOLL_OP_SUM: apply_all<T, OpSum>(in, inout, n); return true;
    case GPUCOLL_OP_PROD: apply_all<T, OpProd>(in, inout, n); return true;
    case GPUCOLL_OP_MAX: apply_all<T, OpMax>(in, inout, n); return true;
    case GPUCOLL_OP_MIN: apply_all<T, OpMin>(in, inout, n); return true;
    case GPUCOLL_OP_LAND: apply_all<T, OpLand>(in, inout, n); return true;
    case GPUCOLL_OP_LOR: apply_all<T, OpLor>(in, inout, n); return true;
    case GPUCOLL_OP_LXOR: apply_all<T, OpLxor>(in, inout, n); return true;
    case GPUCOLL_OP_BAND: apply_all<T, OpBand>(in, inout, n); return true;
    case GPUCOLL_OP_BOR: apply_all<T, OpBor>(in, inout, n); return true;
    case GPUCOLL_OP_BXOR: apply_all<T, OpBxor>(in, inout, n); return true;
    default: return false;
    }
}

// The floating-point ops only exist for the float types (bitwise ops on a
// double do not compile); gpucoll_op_valid keeps the others out.
template <class T> bool kernel_float_op(gpucoll_op_t op, const void *in, void *inout, size_t n)
{
    switch (op) {
    case GPUCOLL_OP_SUM: apply_all<T, OpSum>(in, inout, n); return true;
    case GPUCOLL_OP_PROD: apply_all<T, OpProd>(in, inout, n); return true;
    case GPUCOLL_OP_MAX: apply_all<T, OpMax>(in, inout, n); return true;
    case GPUCOLL_OP_MIN: apply_all<T, OpMin>(in, inout, n); return true;
    default: return false;
    }
}

// inout = in op inout as the kernels compute it; false for a pair they lack.
bool kernel_reduce(gpucoll_dtype_t d, gpucoll_op_t op, const void *in, void *inout, size_t n)
{
    switch (d) {
    case GPUCOLL_INT8: return kernel_op<int8_t>(op, in, inout, n);
    case GPUCOLL_UINT8: return kernel_op<uint8_t>(op, in, inout, n);
    case GPUCOLL_INT16: return kernel_op<int16_t>(op, in, inout, n);
    case GPUCOLL_UINT16: return kernel_op<uint16_t>(op, in, inout, n);
    case GPUCOLL_INT32: return kernel_op<int32_t>(op, in, inout, n);
    case GPUCOLL_UINT32: return kernel_op<uint32_t>(op, in, inout, n);
    case GPUCOLL_INT64: return kernel_op<int64_t>(op, in, inout, n);
    case GPUCOLL_UINT64: return kernel_op<uint64_t>(op, in, inout, n);
    case GPUCOLL_FLOAT32: return kernel_float_op<float>(op, in, inout, n);
    case GPUCOLL_FLOAT64: return kernel_float_op<double>(op, in, inout, n);
    default: return false; // fp16/bf16: not predefined types
    }
}

int failures, checked, staged;

// Rank r's input against rank r + 1's, both generations, as a collective's
// reduction step would see them.
void check_pair(const op_type_t &t, const op_op_t &o, gpucoll_dtype_t d, gpucoll_op_t op)
{
    const int vsize = op_type_vsize(&t);
    const size_t n = 24; // three times the patterns, so every one meets every other
    MPI_Aint lb, extent;
    MPI_Type_get_extent(t.type, &lb, &extent);
    if ((size_t)extent != gpucoll_dtype_size(d)) {
        std::printf("FAIL %s: mapped onto %s, %zu bytes, for %ld-byte elements\n", t.name, gpucoll_dtype_name(d),
                    gpucoll_dtype_size(d), (long)extent);
        failures++;
        return;
    }
    std::vector<unsigned char> in(n * extent), want(n * extent), got(n * extent);
    for (int r = 0; r < 4; r++)
        for (int g = 0; g < 2; g++) {
            for (size_t j = 0; j < n; j++) {
                op_type_value(&t, vsize, r + 1, j, g, &in[j * extent]);
                op_type_value(&t, vsize, r, j, g, &want[j * extent]);
            }
            got = want;
            MPI_Reduce_local(in.data(), want.data(), (int)n, t.type, o.op);
            if (!kernel_reduce(d, op, in.data(), got.data(), n)) {
                std::printf("FAIL %s %s: mapped onto %s/%s, which has no kernel\n", t.name, o.name,
                            gpucoll_dtype_name(d), gpucoll_op_name(op));
                failures++;
                return;
            }
            for (size_t j = 0; j < n; j++) {
                if (op_type_same(&t, vsize, &want[j * extent], &got[j * extent])) continue;
                uint64_t w = 0, k = 0;
                memcpy(&w, &want[j * extent], extent < 8 ? extent : 8);
                memcpy(&k, &got[j * extent], extent < 8 ? extent : 8);
                std::printf("FAIL %s %s (kernel %s/%s): element %zu: the kernel gives 0x%llx, Open MPI's host "
                            "functions 0x%llx\n",
                            t.name, o.name, gpucoll_dtype_name(d), gpucoll_op_name(op), j, (unsigned long long)k,
                            (unsigned long long)w);
                failures++;
                return;
            }
        }
    checked++;
}

} // namespace

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    for (int ti = 0; ti < OP_NTYPES; ti++)
        for (int oi = 0; oi < OP_NOPS; oi++) {
            const op_type_t &t = op_types[ti];
            const op_op_t &o = op_ops[oi];
            unsigned char a[64] = {0}, b[64] = {0};
            if (!(o.groups & t.group) || op_type_vsize(&t) == 0) continue;
            if (MPI_Reduce_local(a, b, 1, t.type, o.op) != MPI_SUCCESS) continue; // nothing to hold it to
            gpucoll_dtype_t d = coll_gpu_map_dtype(t.type);
            gpucoll_op_t op = d == GPUCOLL_DTYPE_NONE ? GPUCOLL_OP_NONE : coll_gpu_map_op(o.op, d);
            if (op == GPUCOLL_OP_NONE) {
                staged++;
                continue;
            }
            check_pair(t, o, d, op);
        }
    std::printf("op_map_check: %d type/op pairs reduced by kernels checked, %d left to Open MPI, %d failed\n",
                checked, staged, failures);
    MPI_Finalize();
    return failures || checked == 0 ? 1 : 0;
}
