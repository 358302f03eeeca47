// What a gpucoll-bench run is on: coll/gpu loaded or not, each rank's GPU,
// whether all ranks share one GPU, and the sizes of the sweep.
#pragma once

#include <mpi.h>

#include <string>
#include <vector>

#include "options.hpp"

// Returns "loaded (coll_gpu_path = auto)" or why not: coll/gpu registers its
// MCA parameters, visible as MPI_T control variables, when Open MPI loads it.
std::string coll_gpu_status();

// The message sizes from --minbytes to --maxbytes, each --stepfactor times the last.
std::vector<size_t> sweep_sizes(const Options &o);

// Which GPU each rank uses ("host memory" with host buffers), gathered on
// rank 0 for the header (empty on the other ranks). Collective over comm.
std::vector<std::string> describe_ranks(bool device, int dev, MPI_Comm comm, int rank, int nranks);

// True on every rank when all ranks run on one GPU (one node, one PCI
// address; several ranks under MPS). Collective over MPI_COMM_WORLD.
bool all_on_one_gpu(int dev, int local_size, int nranks);

// Whether the MPI library takes device pointers itself (Open MPI built with
// CUDA). Without that and without coll/gpu, collectives on device buffers
// read them on the host and crash.
bool mpi_cuda_aware();
