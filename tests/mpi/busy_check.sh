#!/usr/bin/env bash
# busy_check.sh MPIEXEC ORDER_CHECK: order_check at 4 ranks with only the even
# ranks' legacy default stream busy, under coll_gpu_order none and
# busy_max_blocks 8 (Horovod's settings, README). Passes when every check
# holds and the per-call trace (coll_gpu_verbose 30) shows both grids: calls
# cut because some rank was busy, and calls at the full grid while no rank
# was. Without the second, the test would not be testing the agreement.
# Exit 77 where order_check skips.
set -u
mpiexec=$1 prog=$2
out=$("$mpiexec" -n 4 --oversubscribe --bind-to none --mca coll_gpu_order none --mca coll_gpu_thread_calls 1 \
    --mca coll_gpu_busy_max_blocks 8 --mca coll_gpu_verbose 30 "$prog" --threads --spin-even 2>&1)
rc=$?
grep -v "coll:gpu: rank [0-9]*: call " <<<"$out"
grep -q "skipped" <<<"$out" && exit 77
busy=$(grep -c "blocks (busy):" <<<"$out")
idle=$(grep -oE ", [0-9]+ blocks: " <<<"$out" | awk '$2 > 8' | wc -l)
echo "busy_check.sh: $busy calls at the busy grid, $idle calls at a larger one (rc $rc)"
grep -qE "order_check [(][^)]*[)]: [1-9][0-9]* checks, 0 failed" <<<"$out" && [ "$rc" -eq 0 ] &&
  [ "$busy" -gt 0 ] && [ "$idle" -gt 0 ] || { echo "busy_check.sh: FAILED"; exit 1; }
