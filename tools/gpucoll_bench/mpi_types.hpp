// MPI datatype and MPI_Op for each benchmark type.
//
// MPI has no fp16/bf16 types, so (as Horovod does) a 16-bit float travels as
// MPI_Type_contiguous(2, MPI_BYTE) and is reduced by a user-defined MPI_Op
// that runs on the host. coll/gpu will ship include/coll_gpu_ext.h with real
// fp16/bf16 datatypes and ops; this file is the only place to change then.
#pragma once

#include <mpi.h>

#include "dtypes.hpp"

void bench_mpi_types_init();   // after MPI_Init
void bench_mpi_types_free();   // before MPI_Finalize
MPI_Datatype bench_mpi_datatype(DType t);
MPI_Op bench_mpi_op(DType t, Op op);
