#!/usr/bin/env bash
# Ranks whose coll/gpu parameters that choose kernels, grids or the scratch
# layout differ (MPI lets each process have its own MCA values): the ranks
# must not form a peer-to-peer team, say why (verbose 10), and stage every
# device-buffer collective instead, with every result right and no hang.
# Each case sets one parameter on rank 1 only; a last case sets a local
# parameter (timeout_ms) there, which must not keep the team from forming.
# Usage: param_mismatch.sh MPIEXEC COLL_CHECK [coll_check args...]
set -u
mpiexec=$1 coll_check=$2
shift 2
nvidia-smi -L >/dev/null 2>&1 || { echo "param_mismatch: no GPU: skipped"; exit 77; }
failed=0
run_case() { # NAME=VALUE, whether the team must form (1) or not (0)
  local setting=$1 team=$2 log rc
  log=$(mktemp)
  timeout 300 "$mpiexec" -n 2 --bind-to none --mca coll_gpu_verbose 10 --mca coll_gpu_shared_gpu 1 \
    sh -c 'if [ "${OMPI_COMM_WORLD_RANK:-0}" = 1 ]; then export "OMPI_MCA_coll_gpu_$0"; fi; exec "$@"' \
    "$setting" "$coll_check" --mem device --quick "$@" > "$log" 2>&1
  rc=$?
  if [ $rc -eq 77 ]; then echo "param_mismatch: coll_check skipped"; rm -f "$log"; exit 77; fi
  local said=0 ready=0
  grep -q "parameters that choose kernels and grids differ" "$log" && said=1
  grep -q "peer-to-peer team on GPU .* ready" "$log" && ready=1
  echo "param_mismatch: $setting on rank 1: rc $rc, team ready $ready, mismatch said $said; $(grep -h "coll_check (" "$log" | head -1)"
  if [ $rc -ne 0 ] || grep -qE "FAIL|[1-9][0-9]* failed" "$log"; then echo "FAIL: $setting: wrong results or rc $rc"; failed=1; fi
  if [ "$team" = 0 ] && { [ $ready = 1 ] || [ $said = 0 ]; }; then echo "FAIL: $setting: a team formed or nothing said"; failed=1; fi
  if [ "$team" = 1 ] && [ $ready = 0 ]; then echo "FAIL: $setting (local) kept the team from forming"; failed=1; fi
  [ $failed = 0 ] || grep -vE "pcompress|Perhaps a missing|dlopen" "$log" | tail -20
  rm -f "$log"
}
run_case scratch_bytes=16777216 0
run_case max_blocks=8 0
run_case ll_max_bytes=0 0
run_case timeout_ms=600000 1
[ $failed = 0 ] && echo "param_mismatch: passed"
exit $failed
