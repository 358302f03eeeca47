#!/usr/bin/env bash
# On the GPU machine after a build (scripts/device_gpu_tests.sh builds): the
# gpu ctests one at a time, the FIRST regex's tests first, each one's result
# in /root/gpu_done.txt (kept while the machine stays warm), so that a later
# call resumes where this one stopped; at most BUDGET seconds (default 540,
# under the device tool's 600 s a call; none starts with less than MIN_LEFT,
# default 60, left). Logs of failures go to $OUT.
# DONE_BEFORE names a gpu_done.txt brought back from an earlier machine: its
# tests are not run again on this one.
# MPS=1 starts an MPS daemon first (default pipe folder, left running), so
# that the suite runs with every rank on one GPU under MPS.
#   FIRST='lifetime|late_rank' BUDGET=500 scripts/device_gpu_suite.sh
set -u
source .device/mpi-env.sh
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
B=build; ALL=/root/gpu_all.txt; LIST=/root/gpu_list.txt; DONE=/root/gpu_done.txt
FIRST=${FIRST:-lifetime|late_rank|gone_rank|outstanding|info_staged|ipc_release|op_types|stream_args|reduce_local_devices|gpu_args}
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
n=0
while read -r t; do
  grep -q "^$t " $DONE && continue
  # A test cut at the call's limit leaves its ranks (and under MPS the
  # server) in a state that fails the next tests: start none too late.
  left=$((deadline - SECONDS)); [ $left -le ${MIN_LEFT:-60} ] && break
  t0=$SECONDS
  timeout $left ctest --test-dir $B -R "^$t\$" --output-on-failure > /tmp/t.log 2>&1 < /dev/null
  rc=$?
  st=$(grep -oE "Passed|\*\*\*Failed|\*\*\*Skipped|\*\*\*Timeout|\*\*\*Exception[^ ]*|Not Run" /tmp/t.log | head -1)
  if [ $rc -eq 124 ]; then st="CUT(call limit)"; pkill -9 -f "$PWD/$B/" ; fi
  echo "$t ${st:-?} $((SECONDS - t0))s" | tee -a $DONE
  case "$st" in Passed|"***Skipped") ;; *) cp /tmp/t.log "$OUT/fail_$t.log";; esac
  n=$((n+1))
done < $LIST
echo "ran $n this call; done $(wc -l < $DONE) of $(wc -l < $LIST)"
cp $DONE "$OUT/gpu_done.txt"
awk '{print $2}' $DONE | sort | uniq -c
