#!/usr/bin/env bash
# gone_check.sh MPIEXEC GONE_CHECK MODE NP: runs gone_check at NP ranks with
# the job kept alive when its last rank is killed (--enable-recovery), and
# passes when each of the NP-1 survivors reported the error and a working GPU.
# Exit 77 where gone_check skips.
set -u
mpiexec=$1 prog=$2 mode=$3 np=$4
# coll_gpu_shared_gpu: the ranks form a team however they are placed (3 ranks
# on 2 GPUs share one); without a team the calls are staged through Open
# MPI's own collectives, whose waits do not end when a peer dies (seen: the
# test hung on 2 x H200).
out=$("$mpiexec" -n "$np" --oversubscribe --bind-to none --enable-recovery --mca coll_gpu_shared_gpu 1 \
    "$prog" --mode "$mode" 2>&1)
echo "$out"
grep -q "skipped" <<<"$out" && exit 77
ok=$(grep -c "^survivor ok" <<<"$out")
if grep -q "FAIL" <<<"$out" || [ "$ok" -ne $((np - 1)) ]; then
  echo "gone_check.sh: $ok of $((np - 1)) survivors ok"
  exit 1
fi
echo "gone_check.sh: all $ok survivors got an error and kept a working GPU"
