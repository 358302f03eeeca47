// The NCCL reference path. Built only when NCCL was found at configure time
// (GPUCOLL_BENCH_HAVE_NCCL); otherwise nccl_compiled() is false and the rest
// is never called.
#pragma once

#include <cuda_runtime.h>
#include <mpi.h>

#include <string>

#include "collectives.hpp"

struct NcclPath;

bool nccl_compiled();
std::string nccl_version();                      // of the library loaded at run time
bool nccl_supports(const Case &c);               // in-place alltoall is not
NcclPath *nccl_create(MPI_Comm comm);            // collective over comm
void nccl_destroy(NcclPath *p);
void nccl_enqueue(NcclPath *p, const Case &c, void *send, void *recv);
void nccl_sync(NcclPath *p);
cudaStream_t nccl_stream(NcclPath *p);           // where nccl_enqueue queues its calls
