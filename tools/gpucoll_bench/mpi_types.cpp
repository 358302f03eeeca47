#include "mpi_types.hpp"

#include <cstdint>

#include "check.hpp"

namespace {

MPI_Datatype g_two_bytes = MPI_DATATYPE_NULL;
// [0] fp16, [1] bf16; then sum, max, min
MPI_Op g_user_ops[2][3];

// The user functions see host memory only: the staged path copies device data
// to the host before running Open MPI's algorithms, which call these.
template <float (*Load)(uint16_t), uint16_t (*Store)(float), int Kind>
void reduce16(void *in, void *inout, int *len, MPI_Datatype *)
{
    const uint16_t *a = static_cast<const uint16_t *>(in);
    uint16_t *b = static_cast<uint16_t *>(inout);
    for (int i = 0; i < *len; i++) {
        float x = Load(a[i]), y = Load(b[i]);
        float r = Kind == 0 ? x + y : Kind == 1 ? (x > y ? x : y) : (x < y ? x : y);
        b[i] = Store(r);
    }
}

int op_index(Op op) { return op == Op::Sum ? 0 : op == Op::Max ? 1 : 2; }

} // namespace

void bench_mpi_types_init()
{
    MPI_CHECK(MPI_Type_contiguous(2, MPI_BYTE, &g_two_bytes));
    MPI_CHECK(MPI_Type_commit(&g_two_bytes));
    MPI_User_function *fns[2][3] = {
        {reduce16<half_to_float, float_to_half, 0>, reduce16<half_to_float, float_to_half, 1>,
         reduce16<half_to_float, float_to_half, 2>},
        {reduce16<bf16_to_float, float_to_bf16, 0>, reduce16<bf16_to_float, float_to_bf16, 1>,
         reduce16<bf16_to_float, float_to_bf16, 2>}};
    for (int t = 0; t < 2; t++)
        for (int o = 0; o < 3; o++)
            MPI_CHECK(MPI_Op_create(fns[t][o], /*commute=*/1, &g_user_ops[t][o]));
}

void bench_mpi_types_free()
{
    for (auto &row : g_user_ops)
        for (auto &op : row)
            MPI_Op_free(&op);
    MPI_Type_free(&g_two_bytes);
}

MPI_Datatype bench_mpi_datatype(DType t)
{
    switch (t) {
    case DType::F32: return MPI_FLOAT;
    case DType::F64: return MPI_DOUBLE;
    case DType::I32: return MPI_INT32_T;
    case DType::F16:
    case DType::BF16: return g_two_bytes;
    }
    return MPI_DATATYPE_NULL;
}

MPI_Op bench_mpi_op(DType t, Op op)
{
    if (t == DType::F16) return g_user_ops[0][op_index(op)];
    if (t == DType::BF16) return g_user_ops[1][op_index(op)];
    return op == Op::Sum ? MPI_SUM : op == Op::Max ? MPI_MAX : MPI_MIN;
}
