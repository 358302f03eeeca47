#!/usr/bin/env bash
# Runs gpucoll-bench on the GPU machine: allreduce, reduce_scatter, allgather
# and bcast at 2 and 4 ranks, each on the coll/gpu, staged and NCCL paths,
# and writes one CSV and log per run plus PNG charts into OUTDIR.
#
#   source .device/mpi-env.sh            # Open MPI 4.1.4 of the project
#   cmake -S . -B build -G Ninja && cmake --build build -j
#   tools/run_gpu_bench.sh OUTDIR [BUILD_DIR=build]
#
# Sized to finish in about 5 minutes (an estimate: each run's time is printed). Knobs:
#   NPS="2 4"  COLLS="allreduce reduce_scatter allgather bcast"  DTYPE=fp32
#   MAX_BYTES=256M  FACTOR=2  ITERS=50  WARMUP=5  TIME_LIMIT=0.25 (s per size and path)
#   BENCH_FLAGS="..." extra gpucoll-bench flags (e.g. --host to try it without a GPU)
# Exit status: 0, or 1 when a run failed or a result was wrong.
set -u -o pipefail

out=${1:?usage: tools/run_gpu_bench.sh OUTDIR [BUILD_DIR]}
build=${2:-build}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
bench=$build/tools/gpucoll_bench/gpucoll-bench
NPS=${NPS:-"2 4"}
COLLS=${COLLS:-"allreduce reduce_scatter allgather bcast"}
DTYPE=${DTYPE:-fp32}
MAX_BYTES=${MAX_BYTES:-256M}
FACTOR=${FACTOR:-2}
ITERS=${ITERS:-50}
WARMUP=${WARMUP:-5}
TIME_LIMIT=${TIME_LIMIT:-0.25}
BENCH_FLAGS=${BENCH_FLAGS:-}

[ -x "$bench" ] || { echo "run_gpu_bench: no $bench (build first)" >&2; exit 1; }
mkdir -p "$out" || exit 1

# Our freshly built component first on Open MPI's search path.
if [ -f "$build/component/mca_coll_gpu.so" ]; then
  comp=$(cd "$build/component" && pwd)
  export OMPI_MCA_mca_base_component_path="${OMPI_MCA_mca_base_component_path:-}${OMPI_MCA_mca_base_component_path:+:}$comp"
else
  echo "run_gpu_bench: warning: no $build/component/mca_coll_gpu.so; the 'mpi' path is whatever Open MPI loads" >&2
fi
# NCCL's runtime comes from the python package nvidia-nccl on the GPU machine.
nccl_lib=$(python3 -c "import nvidia.nccl, os; print(os.path.dirname(nvidia.nccl.__file__) + '/lib')" 2>/dev/null)
[ -n "$nccl_lib" ] && export LD_LIBRARY_PATH="$nccl_lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export NCCL_NVLS_ENABLE=0   # never NVLink multicast on these machines
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

{
  echo "date: $(date -u +%FT%TZ)"
  echo "host: $(hostname)"
  echo "mpirun: $(command -v mpirun) ($(mpirun --version 2>/dev/null | head -1))"
  echo "component path: ${OMPI_MCA_mca_base_component_path:-default}"
  echo "nccl lib: ${nccl_lib:-toolkit / system}"
  echo "settings: NPS=$NPS DTYPE=$DTYPE MAX_BYTES=$MAX_BYTES FACTOR=$FACTOR ITERS=$ITERS WARMUP=$WARMUP TIME_LIMIT=$TIME_LIMIT $BENCH_FLAGS"
  command -v nvidia-smi >/dev/null && nvidia-smi -L && nvidia-smi topo -m
} > "$out/env.txt" 2>&1

status=0
start=$SECONDS
for np in $NPS; do
  for coll in $COLLS; do
    name=${coll}_${DTYPE}_np${np}
    t0=$SECONDS
    # shellcheck disable=SC2086  # BENCH_FLAGS is a list of flags
    timeout 300 mpirun -n "$np" --oversubscribe --bind-to none \
      "$bench" -C "$coll" -d "$DTYPE" -b 8 -e "$MAX_BYTES" -f "$FACTOR" \
      -n "$ITERS" -w "$WARMUP" -t "$TIME_LIMIT" --nccl-nosync $BENCH_FLAGS \
      --csv "$out/$name.csv" --json "$out/$name.json" > "$out/$name.txt" 2> "$out/$name.err"
    rc=$?
    case $rc in
      0) verdict=ok ;;
      77) verdict="skipped (no GPU)" ;;
      1) verdict="WRONG RESULTS (see $out/$name.err)"; status=1 ;;
      *) verdict="failed, exit $rc (see $out/$name.err)"; status=1 ;;
    esac
    printf '%-32s %4ds  %s\n' "$name" $((SECONDS - t0)) "$verdict"
  done
done

if ls "$out"/*.csv >/dev/null 2>&1; then
  python3 "$here/plot_bench.py" "$out"/*.csv -o "$out" > "$out/plots.txt" \
    && echo "charts: $(wc -l < "$out/plots.txt") PNG files in $out" \
    || echo "run_gpu_bench: no charts (matplotlib missing?)" >&2
fi
echo "total $((SECONDS - start)) s; tables in $out/*.txt"
exit $status
