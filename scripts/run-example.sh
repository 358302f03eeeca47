#!/usr/bin/env bash
# The main job: build and install coll/gpu into ~/.openmpi/components, then run
# MPI_Allreduce on device buffers with one rank per GPU (on host buffers, and
# saying so, where there is no GPU).
set -eu
cd "$(dirname "$0")/.."
scripts/build.sh
cmake --install build >/dev/null
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
np=${NP:-$(( ngpu > 0 ? ngpu : 2 ))}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
echo "run-example: mpirun -n $np build/mpi_examples/allreduce_device (coll/gpu from ~/.openmpi/components)"
mpirun -n "$np" --oversubscribe --bind-to none --mca coll_gpu_verbose 10 build/mpi_examples/allreduce_device \
  2>&1 | grep -vE "pcompress|Perhaps a missing symbol"
