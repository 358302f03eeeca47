#!/usr/bin/env bash
# Several ranks on one GPU under MPS, with a private MPS daemon (its own pipe
# and log folders, stopped at the end):
#  1. coll_check at 2, 3, 4 and 8 ranks on one GPU with the defaults: the
#     ranks must form a peer-to-peer team (shared_gpu=auto sees MPS) and
#     every result must be right;
#  2. the stress sweep: every collective from 16 B to 256 MiB back to back
#     (gpucoll-bench, results checked), with a short timeout_ms, at the same
#     rank counts: a kernel that waited for blocks that cannot be scheduled
#     would fail it with a timeout;
#  3. virtual nodes of 2 over 4 ranks (the hierarchical path): coll_check and
#     a sweep of large messages;
#  4. a forced timeout (peer_give_up: one rank held past the other's timeout),
#     after which the next job on the GPU must still run: a process killed
#     with a kernel still spinning takes the MPS server down;
#  5. where the machine has two GPUs or more: coll_check at 4 and 8 ranks
#     spread over them (rank i on GPU i % GPUs: teams with peers on their own
#     GPU and on the other). The sweeps above spread the same way already
#     (gpucoll-bench takes GPU local rank % GPUs).
# Exits 77 where there is no GPU or no MPS control program, or where the
# daemon cannot start (another one owns the GPU).
# Usage: mps_check.sh MPIEXEC COLL_CHECK GPUCOLL_BENCH PEER_GIVE_UP [RANKS...]
set -u
mpiexec=$1 coll_check=$2 bench=$3 give_up=$4
shift 4
ranks=${*:-2 3 4 8}

command -v nvidia-cuda-mps-control >/dev/null || { echo "mps_check: no nvidia-cuda-mps-control: skipped"; exit 77; }
nvidia-smi -L >/dev/null 2>&1 || { echo "mps_check: no GPU: skipped"; exit 77; }

dir=$(mktemp -d /tmp/coll-gpu-mps.XXXXXX)
export CUDA_MPS_PIPE_DIRECTORY=$dir/pipe CUDA_MPS_LOG_DIRECTORY=$dir/log
mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
stop_mps() {
  echo quit | nvidia-cuda-mps-control >/dev/null 2>&1
  for _ in $(seq 50); do pgrep -f "nvidia-cuda-mps-control -d" >/dev/null || break; sleep 0.1; done
  rm -rf "$dir"
}
if ! nvidia-cuda-mps-control -d; then
  echo "mps_check: the MPS daemon did not start: skipped"
  rm -rf "$dir"
  exit 77
fi
trap stop_mps EXIT

failed=0
fail() { echo "mps_check: FAILED: $*"; failed=1; }
run() { # name, then the command; its output goes to $dir/name.log
  local name=$1
  shift
  local t0=$SECONDS
  "$@" >"$dir/$name.log" 2>&1
  local rc=$?
  grep -vE "pcompress|Perhaps a missing symbol" "$dir/$name.log" | tail -n 40 >"$dir/$name.tail"
  echo "mps_check: $name: rc=$rc in $((SECONDS - t0)) s"
  return $rc
}
mpi=("$mpiexec" --oversubscribe --bind-to none)

for np in $ranks; do
  if run "coll_check_np$np" "${mpi[@]}" -n "$np" --mca coll_gpu_verbose 10 "$coll_check" --mem device --one-gpu; then
    grep -h "coll_check (" "$dir/coll_check_np$np.log"
    grep -q "under MPS" "$dir/coll_check_np$np.log" || fail "np$np: no peer-to-peer team under MPS"
  else
    cat "$dir/coll_check_np$np.tail"
    fail "coll_check at $np ranks"
  fi
done

for np in $ranks; do
  if run "sweep_np$np" "${mpi[@]}" -n "$np" --mca coll_gpu_timeout_ms 5000 "$bench" \
      -C allreduce,reduce_scatter,allgather,bcast,reduce,alltoall -b 16 -e 256M -f 4 -n 3 -w 1 -t 0.05 \
      --paths mpi; then
    grep -cE " ok " "$dir/sweep_np$np.log" | sed "s/^/mps_check: sweep_np$np: rows checked: /"
    grep -q "WRONG\|FAIL" "$dir/sweep_np$np.log" && fail "sweep at $np ranks: wrong results"
  else
    cat "$dir/sweep_np$np.tail"
    fail "sweep at $np ranks"
  fi
done

# Virtual nodes of 2 over 4 ranks on the GPU: two node-local teams run their
# kernels at once, so their grids must fit the GPU together (gpu_ranks).
if run vn_np4 "${mpi[@]}" -n 4 --mca coll_gpu_virtual_node_size 2 --mca coll_gpu_hier_min_bytes 1 \
    --mca coll_gpu_verbose 10 --mca coll_gpu_timeout_ms 5000 "$coll_check" --mem device --one-gpu; then
  grep -h "coll_check (" "$dir/vn_np4.log"
  grep -q "hierarchical:" "$dir/vn_np4.log" || fail "virtual nodes: no hierarchical path"
  grep -q "up to 4 ranks on one GPU" "$dir/vn_np4.log" || fail "virtual nodes: grids not cut for 4 ranks"
else
  cat "$dir/vn_np4.tail"
  fail "coll_check over virtual nodes"
fi
if ! run vn_sweep_np4 "${mpi[@]}" -n 4 --mca coll_gpu_virtual_node_size 2 --mca coll_gpu_hier_min_bytes 1 \
    --mca coll_gpu_timeout_ms 5000 "$bench" -C allreduce,allgather,bcast -b 1M -e 256M -f 16 -n 3 -w 1 -t 0.05 \
    --paths mpi; then
  cat "$dir/vn_sweep_np4.tail"
  fail "sweep over virtual nodes"
fi

ngpus=$(nvidia-smi -L 2>/dev/null | grep -c "^GPU")
if [ "$ngpus" -ge 2 ]; then
  for np in 4 8; do
    if run "spread_np$np" "${mpi[@]}" -n "$np" --mca coll_gpu_verbose 10 --mca coll_gpu_timeout_ms 5000 \
        "$coll_check" --mem device; then
      grep -h "coll_check (" "$dir/spread_np$np.log"
      # Every rank in one peer-to-peer team; "under MPS" is said only where
      # ranks share a GPU (more ranks than GPUs).
      ready=$(grep -oE "rank [0-9]+: peer-to-peer team on GPU [^ ]+ ready" "$dir/spread_np$np.log" | sort -u | wc -l)
      [ "$ready" -ge "$np" ] || fail "spread np$np: $ready of $np ranks in a peer-to-peer team"
      ! grep -q "peer-to-peer team on GPU .* unavailable" "$dir/spread_np$np.log" ||
        fail "spread np$np: a team without peer-to-peer"
      if [ "$np" -gt "$ngpus" ]; then
        grep -q "under MPS" "$dir/spread_np$np.log" || fail "spread np$np: no peer-to-peer team under MPS"
      fi
    else
      cat "$dir/spread_np$np.tail"
      fail "coll_check at $np ranks over $ngpus GPUs"
    fi
  done
else
  echo "mps_check: one GPU: the placement over several GPUs not run"
fi

if run give_up "$give_up"; then
  grep -h "rank\|peer_give_up" "$dir/give_up.log"
else
  cat "$dir/give_up.tail"
  fail "forced timeout (peer_give_up)"
fi
# The next job on the GPU: the server must still take clients.
if run after_timeout "${mpi[@]}" -n 2 "$coll_check" --mem device --one-gpu --quick; then
  grep -h "coll_check (" "$dir/after_timeout.log"
else
  cat "$dir/after_timeout.tail"
  fail "the job after the forced timeout"
fi

[ $failed = 0 ] && echo "mps_check: passed"
exit $failed
