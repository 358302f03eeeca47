#!/usr/bin/env bash
# Horovod on coll/gpu, on the GPU machine, one phase per call (a device call
# runs at most 600 s; what a phase makes stays in /tmp for the next):
#
#   PHASE=build scripts/horovod_bench.sh   # Horovod built twice, in parallel:
#                                          #   HOROVOD_GPU_OPERATIONS=MPI  -> /tmp/hvd-mpi
#                                          #   HOROVOD_GPU_OPERATIONS=NCCL -> /tmp/hvd-nccl
#   PHASE=check scripts/horovod_bench.sh   # scripts/horovod_check.py on the MPI build, NPS ranks
#   PHASE=bench scripts/horovod_bench.sh   # pytorch_synthetic_benchmark.py, both builds, the table
#   PHASE=table scripts/horovod_bench.sh   # the table again, from what the bench calls measured
#
# Run in the repository root, after coll/gpu was built into build/ (its
# component in build/component), with Horovod's client folder
# (../shared/clients/horovod) copied into .hvd/ (ignored; carry it) and
# .device/ as .device/README.md says. Options (environment):
#   NP=4                      ranks of the benchmark (at most one per GPU)
#   NPS="2 4"                 rank counts of the check
#   CHECK_BUILD=mpi           the MPI build's settings for the check, as in BUILDS (e.g.
#                             mpi+order=none+max_blocks=32)
#   MODELS="resnet50 vgg16"   models of the benchmark
#   MODES="fp32 fp16"         each model plain (fp32) and with --fp16-allreduce (fp16)
#   BUILDS="nccl mpi+order=none+max_blocks=32 mpi"  which builds the bench phase runs (split it across calls if need be);
#                             mpi-tcN: the MPI build with coll_gpu_thread_calls N (mpi: THREAD_CALLS);
#                             mpi+NAME=VALUE[+...]: the MPI build with coll_gpu_NAME VALUE (e.g.
#                             mpi+stream_priority=normal), a column of its own; a HOROVOD_NAME=VALUE
#                             term sets Horovod's environment instead, in either build (e.g.
#                             nccl+HOROVOD_FUSION_THRESHOLD=16777216)
#   REPEAT=1                  runs of each (build, model, mode); the table shows their mean
#   WARMUP=5 BATCHES=10 ITERS=5  the benchmark's --num-warmup-batches, --num-batches-per-iter, --num-iters
#   BATCH=32                  --batch-size
#   RUN_TIMEOUT=170           seconds one benchmark run may take
#   THREAD_CALLS=1            coll_gpu_thread_calls of the MPI build's runs (Horovod makes every
#                             collective from one background thread; 8, the default, cuts grids to
#                             1/8 of the SMs)
#   VERBOSE=10                coll_gpu_verbose of the MPI builds' bench runs (30: a timed line per
#                             blocking call, into the run's log)
#   TIMELINE=1                each bench run writes Horovod's timeline (rank 0) to
#                             $OUT/timeline_BUILD_MODEL_MODE.json; scripts/horovod_timeline.py
#                             then says where the time went, builds side by side
#   PROFILE=1                 rank 0 of each bench run under PyTorch's profiler (scripts/gpu_profile_rank0.py):
#                             every kernel, copy and CUDA call into $OUT/prof_BUILD_MODEL_MODE.csv.gz;
#                             scripts/gpu_profile_steps.py compares them per training step
#   HVD_DIR=.hvd OUT=/tmp/out
# The NCCL build runs without coll/gpu (--mca coll ^gpu); the MPI build with
# it, and every MPI-build run must say so (coll_gpu_verbose=10: "enabled on")
# before its numbers count: that build without coll/gpu crashes.
set -u
cd "$(dirname "$0")/.."
source .device/mpi-env.sh
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
HVD_DIR=${HVD_DIR:-.hvd}
SRC=/tmp/hvd-src RES=/tmp/hvd-bench
NP=${NP:-4} NPS=${NPS:-"2 4"} CHECK_BUILD=${CHECK_BUILD:-mpi} MODELS=${MODELS:-"resnet50 vgg16"} BUILDS=${BUILDS:-"nccl mpi+order=none+max_blocks=32 mpi"}
WARMUP=${WARMUP:-5} BATCHES=${BATCHES:-10} ITERS=${ITERS:-5} BATCH=${BATCH:-32} RUN_TIMEOUT=${RUN_TIMEOUT:-170}
sys_path=$OMPI_MCA_mca_base_component_path
COMPONENT="$PWD/build/component"
nccl_lib=$(python3 -c "import nvidia.nccl, os; print(os.path.dirname(nvidia.nccl.__file__) + '/lib')" 2>/dev/null)
[ -n "$nccl_lib" ] && export LD_LIBRARY_PATH="$nccl_lib:$LD_LIBRARY_PATH"
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')

die() { echo "horovod_bench: $*" >&2; exit 1; }

built() { PYTHONPATH=$1 python3 -c 'import horovod.torch' >/dev/null 2>&1; }

# The example benchmark lives in Horovod's source, which build.sh unpacks
# into a temporary folder of its own: unpacked here once more.
source_tree() {
  [ -f "$SRC/horovod-src/examples/pytorch/pytorch_synthetic_benchmark.py" ] && return 0
  local tarball; tarball=$(ls "$HVD_DIR"/horovod-*.tar.xz 2>/dev/null | head -1)
  [ -n "$tarball" ] || die "no Horovod tarball in $HVD_DIR (copy ../shared/clients/horovod there)"
  mkdir -p "$SRC" && tar -xJf "$tarball" -C "$SRC"
}

phase_build() {
  [ -f "$HVD_DIR/build.sh" ] || die "$HVD_DIR/build.sh missing (copy ../shared/clients/horovod to $HVD_DIR and carry it)"
  [ -f "$COMPONENT/mca_coll_gpu.so" ] || echo "note: $COMPONENT/mca_coll_gpu.so missing: build coll/gpu before the check"
  source_tree
  local t0=$SECONDS pids=() v
  for v in mpi nccl; do
    if built /tmp/hvd-$v; then echo "hvd-$v: already built"; continue; fi
    ( bash "$HVD_DIR/build.sh" $v /tmp/hvd-$v > "$OUT/hvd_build_$v.log" 2>&1
      echo "hvd-$v: build rc $? after $((SECONDS - t0)) s" ) &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p"; done
  local rc=0
  for v in mpi nccl; do
    if built /tmp/hvd-$v; then tail -1 "$OUT/hvd_build_$v.log" 2>/dev/null
    else echo "hvd-$v: not importable; last lines of its log:"; tail -20 "$OUT/hvd_build_$v.log"; rc=1; fi
  done
  return $rc
}

# mpirun for the MPI build: coll/gpu on the component path (its priority
# selects it), ranks sharing a GPU allowed to form the team.
hvd_run() { # timeout, build (mpi|nccl), np, then the command
  local to=$1 build=$2 np=$3; shift 3
  local path="$COMPONENT:$sys_path" mca="" tc=${THREAD_CALLS:-1} extra="" kv
  case "$build" in
    mpi-tc*) tc=${build#mpi-tc};;
    *+*) for kv in $(echo "${build#*+}" | tr '+' ' '); do
           case "$kv" in
             HOROVOD_*) extra="$extra -x $kv";; # Horovod's own settings, either build
             *) extra="$extra --mca coll_gpu_${kv%%=*} ${kv#*=}";;
           esac
         done;;
  esac
  build=${build%%[-+]*}
  if [ "$build" = mpi ]; then
    mca="--mca coll_gpu_thread_calls $tc$extra"
    [ "$np" -gt "$gpus" ] && mca="$mca --mca coll_gpu_shared_gpu 1"
  else
    mca="--mca coll ^gpu$extra" # NCCL moves the tensors; Open MPI's own modules the rest
  fi
  timeout "$to" env OMPI_MCA_mca_base_component_path="$path" \
    PYTHONPATH="/tmp/hvd-$build${EXTRA_PYTHONPATH:+:$EXTRA_PYTHONPATH}" \
    mpirun -n "$np" --bind-to none -x PYTHONPATH -x LD_LIBRARY_PATH $mca "$@"
}

require_component() {
  OMPI_MCA_mca_base_component_path="$COMPONENT:$sys_path" ompi_info 2>/dev/null | grep -q "MCA coll: gpu" ||
    die "Open MPI does not find coll/gpu in $COMPONENT (build it first: cmake --build build)"
}

phase_check() {
  built /tmp/hvd-mpi || die "no MPI build of Horovod in /tmp/hvd-mpi (PHASE=build first)"
  require_component
  local rc=0 np
  for np in $NPS; do
    local log="$OUT/horovod_check_np$np.log" t0=$SECONDS
    hvd_run 280 "$CHECK_BUILD" "$np" --mca coll_gpu_verbose 10 python3 scripts/horovod_check.py > "$log" 2>&1
    local r=$?
    grep -q "coll:gpu: enabled on" "$log" || { echo "np $np: coll/gpu was not selected (see $log)"; r=1; }
    echo "== horovod_check np $np ($CHECK_BUILD): rc $r, $((SECONDS - t0)) s"
    sed -n '/^horovod_check:/,$p' "$log" | grep -v "pcompress" | head -40
    grep -E "MISMATCH|ERROR|Traceback|Segmentation|signal" "$log" | head -10
    [ $r -eq 0 ] || rc=1
  done
  return $rc
}

# torchvision is not part of every torch install; the benchmark takes its
# models from torchvision.models, which scripts/horovod_models stands in for
# (the same VGG-16 and ResNet-50 layers, hence the same gradients to reduce).
models_path() {
  python3 -c "import torchvision" >/dev/null 2>&1 && return 0
  echo "note: torchvision missing: the benchmark uses scripts/horovod_models' VGG-16 and ResNet-50" >&2
  EXTRA_PYTHONPATH="$PWD/scripts/horovod_models"
}

# One benchmark run; appends "build model mode img/s" to $RES/results.tsv.
bench_one() { # build model fp16(0|1)
  local build=$1 model=$2 fp16=$3 mode=fp32 flag=""
  [ "$fp16" = 1 ] && mode=fp16-allreduce && flag=--fp16-allreduce
  local log="$OUT/bench_${build}_${model}_$mode.log" t0=$SECONDS verbose=""
  [ "${build%%[-+]*}" = mpi ] && verbose="--mca coll_gpu_verbose ${VERBOSE:-10}"
  [ -n "${TIMELINE:-}" ] && verbose="$verbose -x HOROVOD_TIMELINE=$OUT/timeline_${build}_${model}_$mode.json"
  local prof=""
  [ -n "${PROFILE:-}" ] && prof="scripts/gpu_profile_rank0.py $OUT/prof_${build}_${model}_$mode.csv.gz"
  hvd_run "$RUN_TIMEOUT" "$build" "$NP" $verbose python3 $prof "$SRC/horovod-src/examples/pytorch/pytorch_synthetic_benchmark.py" \
    --model "$model" --batch-size "$BATCH" --num-warmup-batches "$WARMUP" --num-batches-per-iter "$BATCHES" \
    --num-iters "$ITERS" $flag > "$log" 2>&1
  local rc=$? total
  total=$(sed -n 's/^Total img\/sec on [0-9]* GPU(s): \([0-9.]*\).*/\1/p' "$log" | tail -1)
  if [ "${build%%[-+]*}" = mpi ] && ! grep -q "coll:gpu: enabled on" "$log"; then
    echo "$build $model $mode: coll/gpu not selected: not counted (see $log)"; total=""
  fi
  echo "$build $model $mode: rc $rc, $((SECONDS - t0)) s, ${total:-no result} img/s total"
  [ -n "$total" ] && [ $rc -eq 0 ] && printf '%s\t%s\t%s\t%s\n' "$build" "$model" "$mode" "$total" >> "$RES/results.tsv"
  [ $rc -eq 0 ] || grep -E "Error|error|Traceback|signal|Segmentation" "$log" | grep -v pcompress | head -5
}

phase_bench() {
  source_tree
  [ "$gpus" -ge "$NP" ] || die "$NP ranks need $NP GPUs (the benchmark pins rank i to GPU i); this machine has $gpus"
  require_component
  mkdir -p "$RES"
  models_path
  local build model fp16 r
  for r in $(seq "${REPEAT:-1}"); do
    for build in $BUILDS; do
      built /tmp/hvd-${build%%[-+]*} || { echo "no /tmp/hvd-${build%%[-+]*}: PHASE=build first"; continue; }
      for model in $MODELS; do
        for fp16 in 0 1; do
          case " ${MODES:-fp32 fp16} " in *" $([ $fp16 = 1 ] && echo fp16 || echo fp32) "*) ;; *) continue;; esac
          bench_one "$build" "$model" "$fp16"
        done
      done
    done
  done
  phase_table
}

# Mean of the measurements of each (build, model, mode), their count in
# parentheses; mpi-tcN and mpi+NAME=VALUE builds in a column of their own.
phase_table() {
  [ -f "$RES/results.tsv" ] || die "nothing measured yet (PHASE=bench)"
  echo "Horovod pytorch_synthetic_benchmark, $NP x $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)," \
       "batch $BATCH, $ITERS x $BATCHES batches after $WARMUP (total img/s)"
  awk -F'\t' '
    function cell(k, b) { return c[k, b] ? sprintf("%.1f (%d)", s[k, b] / c[k, b], c[k, b]) : "-" }
    { s[$2 " " $3, $1] += $4; c[$2 " " $3, $1]++
      if (!(($2 " " $3) in seen)) { seen[$2 " " $3] = 1; order[n++] = $2 " " $3 }
      if ($1 ~ /^(mpi|nccl)[-+]/ && !($1 in xseen)) { xseen[$1] = 1; extra[nx++] = $1 } }
    END {
      printf "| %-26s | %22s | %32s | %8s |", "model", "Horovod on NCCL img/s", "Horovod on MPI + coll/gpu img/s", "MPI/NCCL"
      for (j = 0; j < nx; j++) printf " %s img/s |", extra[j]
      printf "\n|---|---|---|---|"; for (j = 0; j < nx; j++) printf "---|"; printf "\n"
      for (i = 0; i < n; i++) {
        k = order[i]; a = c[k, "nccl"] ? s[k, "nccl"] / c[k, "nccl"] : 0; b = c[k, "mpi"] ? s[k, "mpi"] / c[k, "mpi"] : 0
        r = (a > 0 && b > 0) ? sprintf("%.2f", b / a) : "-"
        printf "| %-26s | %22s | %32s | %8s |", k, cell(k, "nccl"), cell(k, "mpi"), r
        for (j = 0; j < nx; j++) printf " %s |", cell(k, extra[j])
        printf "\n"
      }
    }' "$RES/results.tsv"
}

case "${PHASE:-}" in
  build) phase_build ;;
  check) phase_check ;;
  bench) phase_bench ;;
  table) phase_table ;;
  *) die "PHASE=build|check|bench|table (see the top of this script)" ;;
esac
