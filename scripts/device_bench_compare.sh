#!/usr/bin/env bash
# Before/after on the same machine in one call: a baseline component built
# into /root/basebuild (e.g. cmake -S <checkout of the old commit> -B
# /root/basebuild && cmake --build /root/basebuild --target mca_coll_gpu) and
# this tree's build/, gpucoll-bench every mode at NP ranks (default 4), NCCL
# beside the new one (PATHS=mpi leaves NCCL out: it takes one GPU per rank);
# CSVs and logs into $OUT. LONG=n (below): small sizes again with n calls each.
# tools/bench_compare.py --old bench_base*.csv --new bench_new*.csv makes the table.
set -u
source .device/mpi-env.sh
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
sys=$OMPI_MCA_mca_base_component_path
nccl_lib=$(python3 -c "import nvidia.nccl, os; print(os.path.dirname(nvidia.nccl.__file__) + '/lib')" 2>/dev/null)
export LD_LIBRARY_PATH="$nccl_lib:$LD_LIBRARY_PATH"
NP=${NP:-4}
BENCH="build/tools/gpucoll_bench/gpucoll-bench -C allreduce,bcast,allgather,reduce_scatter,alltoall -b 8 -e 256M -f 16 --mode all -t ${TL:-0.15}"
# REPEAT=n runs the pair n times, alternating (CSV names get _rK from the
# second on), so that a difference can be told from one run's spread.
for r in $(seq 1 ${REPEAT:-1}); do
  sfx=""; [ $r -gt 1 ] && sfx="_r$r"
  for which in base new; do
    [ $which = base ] && path=/root/basebuild/component:$sys || path=$PWD/build/component:$sys
    paths=mpi; [ $which = new ] && paths=${PATHS:-mpi,nccl}
    t0=$SECONDS
    OMPI_MCA_mca_base_component_path=$path timeout ${BT:-280} mpirun -n $NP --bind-to none $BENCH --paths $paths \
      --csv $OUT/bench_${which}_np$NP$sfx.csv > $OUT/bench_${which}_np$NP$sfx.log 2>&1
    echo "bench $which$sfx: rc $? $((SECONDS - t0)) s"
  done
done
# LONG=n: then each build once more on the small sizes of the host-observed
# modes with n calls a size (the 0.1 s rows above take at most 50 calls and
# cannot resolve a microsecond; session 21): CSVs bench_{base,new}_long_np$NP.
if [ "${LONG:-0}" -gt 0 ]; then
  SMALL="build/tools/gpucoll_bench/gpucoll-bench -C allreduce,bcast,allgather,reduce_scatter,alltoall -b 8 -e 32K -f 16 --mode blocking,nonblocking,persistent -n $LONG -w 100 -t 5"
  for which in base new; do
    [ $which = base ] && path=/root/basebuild/component:$sys || path=$PWD/build/component:$sys
    t0=$SECONDS
    OMPI_MCA_mca_base_component_path=$path timeout ${BT:-280} mpirun -n $NP --bind-to none $SMALL --paths mpi \
      --csv $OUT/bench_${which}_long_np$NP.csv > $OUT/bench_${which}_long_np$NP.log 2>&1
    echo "bench $which long: rc $? $((SECONDS - t0)) s"
  done
fi
