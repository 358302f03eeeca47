#!/usr/bin/env bash
# On the GPU machine after a build: an MPS daemon on GPU 0 only, every rank
# of the chosen tests there (R, a ctest regex; default: the tests of a
# communicator's end while a collective is in flight, which hung at 2 ranks
# under MPS in session 18), the MPS free probe first; then the daemon quits.
# Logs into $OUT, with the stacks of a rank that hangs (stack_watch). On a
# machine of several GPUs the other GPUs stay free of MPS.
set -u
source .device/mpi-env.sh
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
pkill -9 -f "$PWD/build/"; sleep 1
export CUDA_VISIBLE_DEVICES=0
setsid nvidia-cuda-mps-control -d && echo "MPS daemon started on GPU 0"
timeout 30 build/tools/mps_probe/mps-free-probe > "$OUT/probe_mps.txt" 2>&1; echo "probe rc $?"
tail -1 "$OUT/probe_mps.txt"
R=${R:-'^gpu_lifetime|^gpu_cross_order|^gpu_gone_rank|^gpu_outstanding_np2|^gpu_collectives_(nonblocking|persistent)_np2|^gpu_queued.*np2|^gpu_ipc_release|^gpu_sanitizer_racecheck_push_np2'}
# The host stacks of every test rank (not mpiexec: stopping it under a
# debugger breaks the ranks' output pipes) older than AGE seconds, once each,
# into $OUT/stacks.txt; gdb where present (a few seconds), else cuda-gdb.
stack_watch() {
  local dbg; dbg=$(command -v gdb || command -v cuda-gdb)
  while true; do
    for p in $(pgrep -f "^$PWD/build/tests/"); do
      [ -e /tmp/stacked_$p ] && continue
      local et; et=$(ps -o etimes= -p $p 2>/dev/null | tr -d ' ')
      [ -n "$et" ] && [ "$et" -gt "${AGE:-25}" ] || continue
      touch /tmp/stacked_$p
      { echo "== pid $p age $et: $(ps -o stat=,args= -p $p | cut -c1-160)"
        timeout 60 $dbg -batch -p $p -ex "thread apply all bt 24" 2>&1 | grep -E "^#|^Thread" | head -200; } >> "$OUT/stacks.txt"
    done
    sleep 3
  done
}
stack_watch & watch_pid=$!
timeout ${TT:-400} ctest --test-dir build -R "$R" --timeout 150 --output-on-failure > "$OUT/mps_subset.log" 2>&1
echo "subset rc $?"
kill $watch_pid 2>/dev/null
grep -E "Test +#|tests passed" "$OUT/mps_subset.log" | tail -40
pkill -9 -f "$PWD/build/"; echo quit | nvidia-cuda-mps-control; sleep 2
