#!/usr/bin/env bash
# On the GPU machine after a build: one collective kind with each algorithm
# row of the core's table forced in turn (coll_gpu_<KIND>_algorithm; "auto"
# is the automatic choice), every mode, NCCL beside the first, so that a new
# row is measured against the one it may replace before it becomes a
# default. CSVs and logs into $OUT.
# ITERS=n times n iterations of every size (with a time limit of 10 s a size
# instead of TL), so that a slow size is not one or two iterations' luck.
#   KIND=bcast ROWS="auto bcast bcast_forward" NP=4 scripts/device_bench_rows.sh
set -u
source .device/mpi-env.sh
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export OMPI_MCA_mca_base_component_path=$PWD/build/component:$OMPI_MCA_mca_base_component_path
nccl_lib=$(python3 -c "import nvidia.nccl, os; print(os.path.dirname(nvidia.nccl.__file__) + '/lib')" 2>/dev/null)
export LD_LIBRARY_PATH="$nccl_lib:$LD_LIBRARY_PATH"
KIND=${KIND:-bcast}; NP=${NP:-4}; paths=mpi,nccl
tl=${TL:-0.1}; [ -n "${ITERS:-}" ] && tl=10
for row in ${ROWS:-auto}; do
  t0=$SECONDS
  env "OMPI_MCA_coll_gpu_${KIND}_algorithm=$row" timeout ${BT:-200} mpirun -n $NP --bind-to none \
    build/tools/gpucoll_bench/gpucoll-bench -C $KIND -b ${MIN:-64K} -e ${MAX:-256M} -f 4 --mode ${MODES:-all} ${ITERS:+-n $ITERS} -t $tl \
    --paths $paths --csv "$OUT/rows_${KIND}_${row}_np$NP.csv" > "$OUT/rows_${KIND}_${row}_np$NP.log" 2>&1
  echo "$KIND $row: rc $? $((SECONDS - t0)) s"
  paths=mpi
done
