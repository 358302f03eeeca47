#!/usr/bin/env bash
# On the GPU machine after a build (scripts/device_gpu_tests.sh builds): the
# gpu ctests one at a time, the FIRST regex's tests first, each one's result
# in /root/gpu_done.txt (kept while the machine stays warm), so that a later
# call resumes where this one stopped; at most BUDGET seconds (default 540,
# under the device tool's 600 s a call; none starts with less than MIN_LEFT,
# default 60, left). Logs of failures go to $OUT.
# DONE_BEFORE names a gpu_done.txt brought back from an earlier machine: its
# tests are not run again on this one. TIMES names a gpu_done.txt of an
# earlier run (e.g. docs/data/session19_h200x4_gpu_suite.txt): a test that
# took longer there than this call has left waits for the next call.
# MPS=1 starts an MPS daemon first (default pipe folder, left running), so
# that the suite runs with every rank on one GPU under MPS.
# LANES=2 on a machine of 4 GPUs runs tests side by side, each rank still on
# a GPU of its own where the test asks for that: the tests of at most 2
# ranks on GPUs 0,1 and 2,3; the 3-rank ones on GPUs 0-2 while GPU 3 runs
# tests that put every rank on one GPU (--one-gpu; without MPS they
# time-slice, the slowest of the suite); the rest of the spread tests one at
# a time; the rest of the one-GPU tests one per GPU.
# ONE_MPS=1 (with LANES=2) runs those one-GPU tests under MPS, as users who
# share a GPU would: a private MPS daemon per GPU (its own pipe folder, the
# GPU named by UUID, as NVIDIA advises), stopped before the ALONE test, which
# starts its own.
#   FIRST='lifetime|late_rank' BUDGET=500 scripts/device_gpu_suite.sh
set -u
source .device/mpi-env.sh
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
B=build; ALL=/root/gpu_all.txt; LIST=/root/gpu_list.txt; DONE=/root/gpu_done.txt
FIRST=${FIRST:-cross_order|mismatched_args|param_mismatch|threads_calls|lifetime|late_rank|gone_rank|outstanding|info_staged|ipc_release|op_types|stream_args|reduce_local_devices|gpu_args}
# Starts its own MPS daemon: never beside another test.
ALONE='^gpu_mps_shared_gpu$'
SMALL='np[12]([^0-9]|$)|^gpu_(pointer_query|launch_while_running|peer_give_up|one_rank_on_gpu|reduce_local_devices)$'
if [ ! -f $LIST ]; then
  ctest --test-dir $B -N -L gpu | sed -n 's/^ *Test *#[0-9]*: //p' > $ALL
  { grep -E "$FIRST" $ALL; grep -vE "$FIRST" $ALL; } > $LIST
fi
[ -n "${DONE_BEFORE:-}" ] && [ ! -s $DONE ] && cp "$DONE_BEFORE" $DONE
touch $DONE
if [ "${MPS:-0}" = 1 ] && ! pgrep -f "nvidia-cuda-mps-control -d" >/dev/null; then
  setsid nvidia-cuda-mps-control -d && echo "MPS daemon started"
fi
deadline=$((SECONDS + ${BUDGET:-540}))

# run_tests LANE_NAME < list: the tests not yet done, while time is left;
# lanes reading the same list share it, each test taken by the first lane
# that claims it.
CLAIMS=$(mktemp -d)
# A test cut at a call's limit is not done: the next call runs it again if
# it has more time left than the cut one had (CUTS).
CUTS=/root/gpu_cut.txt; touch $CUTS
took() { # the most seconds the test took in TIMES (a gpu_done.txt) or ran before a cut, 0 if unknown
  awk -v t="$1" '$1 == t { for (i = 2; i <= NF; i++) if ($i ~ /^[0-9]+s$/) { v = $i + 0; if (v > m) m = v } }
                 END { print m + 0 }' ${TIMES:-} $CUTS
}
run_tests() {
  local lane=$1 t t0 left rc st log=/tmp/t_$1.log n=0
  while read -r t; do
    [ -e "$CLAIMS/.stop" ] && break
    grep -q "^$t " $DONE && continue
    # A test cut at the call's limit leaves its ranks (and under MPS the
    # server) in a state that fails the next tests: start none too late,
    # nor one that took longer than what is left in an earlier run (TIMES).
    left=$((deadline - SECONDS)); [ $left -le ${MIN_LEFT:-60} ] && break
    [ $(( $(took "$t") + 15 )) -ge $left ] && continue
    mkdir "$CLAIMS/$t" 2>/dev/null || continue
    t0=$SECONDS
    timeout $left ctest --test-dir $B -R "^$t\$" --output-on-failure > $log 2>&1 < /dev/null
    rc=$?
    st=$(grep -oE "Passed|\*\*\*Failed|\*\*\*Skipped|\*\*\*Timeout|\*\*\*Exception[^ ]*|Not Run" $log | head -1)
    # Past the deadline another lane's cut may have killed this test's ranks.
    if [ $rc -eq 124 ] || [ $SECONDS -ge $((deadline - 2)) ]; then
      pkill -9 -f "$PWD/$B/"
      echo "$t CUT(call limit) $((SECONDS - t0))s $lane" | tee -a $CUTS
      continue
    fi
    echo "$t ${st:-?} $((SECONDS - t0))s $lane" | tee -a $DONE
    case "$st" in Passed|"***Skipped") ;; *) cp $log "$OUT/fail_$t.log";; esac
    n=$((n+1))
  done
  echo "lane $lane ran $n"
}

ngpu=$(nvidia-smi -L 2>/dev/null | wc -l)
# one_gpu_lane G NAME < list: run_tests on GPU G alone, under its own MPS
# daemon where ONE_MPS=1.
one_gpu_lane() {
  local g=$1 name=$2
  if [ "${ONE_MPS:-0}" != 1 ]; then CUDA_VISIBLE_DEVICES=$g run_tests "$name"; return; fi
  local uuid d=/tmp/coll-gpu-mps-g$g
  uuid=$(nvidia-smi --query-gpu=uuid --format=csv,noheader -i "$g")
  export CUDA_VISIBLE_DEVICES=$uuid CUDA_MPS_PIPE_DIRECTORY=$d/pipe CUDA_MPS_LOG_DIRECTORY=$d/log
  mkdir -p $d/pipe $d/log
  [ -e $d/pipe/control ] || { nvidia-cuda-mps-control -d && echo "MPS daemon on GPU $g"; }
  run_tests "$name"
}
stop_one_gpu_mps() {
  local d
  for d in /tmp/coll-gpu-mps-g*; do
    [ -d "$d" ] || continue
    echo quit | CUDA_MPS_PIPE_DIRECTORY=$d/pipe nvidia-cuda-mps-control >/dev/null 2>&1
    sleep 1; rm -rf "$d"
  done
}
if [ "${LANES:-1}" = 2 ] && [ "$ngpu" -ge 4 ]; then
  ctest --test-dir $B -N -V -L gpu |
    awk '/Test command:/{c=$0} /^ *Test *#[0-9]+: /{if (c ~ /--one-gpu/) print $3}' > /root/gpu_one.txt
  grep -xFf /root/gpu_one.txt $LIST | grep -vE "$ALONE" > /root/gpu_one_list.txt
  grep -vxFf /root/gpu_one.txt $LIST | grep -vE "$ALONE" > /root/gpu_spread.txt
  # Tests of at most 2 ranks, a GPU pair each.
  grep -E "$SMALL" /root/gpu_spread.txt > /root/gpu_pairs.txt
  CUDA_VISIBLE_DEVICES=0,1 run_tests a < /root/gpu_pairs.txt &
  CUDA_VISIBLE_DEVICES=2,3 run_tests b < /root/gpu_pairs.txt &
  wait
  # 3 ranks on GPUs 0-2 while GPU 3 serves the one-GPU tests, until the 3-rank ones are done.
  grep -E 'np3([^0-9]|$)' /root/gpu_spread.txt > /root/gpu_trios.txt
  ( CUDA_VISIBLE_DEVICES=0,1,2 run_tests trio < /root/gpu_trios.txt; touch "$CLAIMS/.stop" ) &
  one_gpu_lane 3 g3 < /root/gpu_one_list.txt &
  wait
  stop_one_gpu_mps
  rm -f "$CLAIMS/.stop"
  run_tests all < /root/gpu_spread.txt
  for g in $(seq 0 $((ngpu - 1))); do one_gpu_lane $g g$g < /root/gpu_one_list.txt & done
  wait
  stop_one_gpu_mps
fi
grep -vE "$ALONE" $LIST | run_tests all
grep -E "$ALONE" $LIST | run_tests all
rm -rf "$CLAIMS"
echo "done $(wc -l < $DONE) of $(wc -l < $LIST)"
cp $DONE "$OUT/gpu_done.txt"; cp $CUTS "$OUT/gpu_cut.txt"
awk '{print $2}' $DONE | sort | uniq -c
