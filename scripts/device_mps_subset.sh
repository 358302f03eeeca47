#!/usr/bin/env bash
# On the GPU machine after a build: an MPS daemon on GPU 0 only, every rank
# of the chosen tests there (R, a ctest regex; default: the tests of a
# communicator's end while a collective is in flight, which hung at 2 ranks
# under MPS in session 18), the MPS free probe first; then the daemon quits.
# Logs into $OUT. On a machine of several GPUs the other GPUs stay free of MPS.
set -u
source .device/mpi-env.sh
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
pkill -9 -f "$PWD/build/"; sleep 1
export CUDA_VISIBLE_DEVICES=0
setsid nvidia-cuda-mps-control -d && echo "MPS daemon started on GPU 0"
timeout 30 build/tools/mps_probe/mps-free-probe > "$OUT/probe_mps.txt" 2>&1; echo "probe rc $?"
tail -1 "$OUT/probe_mps.txt"
R=${R:-'^gpu_lifetime|^gpu_gone_rank|^gpu_outstanding_np2|^gpu_collectives_(nonblocking|persistent)_np2|^gpu_queued.*np2|^gpu_ipc_release|^gpu_sanitizer_racecheck_push_np2'}
timeout ${TT:-400} ctest --test-dir build -R "$R" --timeout 150 --output-on-failure > "$OUT/mps_subset.log" 2>&1
echo "subset rc $?"
grep -E "Test +#|tests passed" "$OUT/mps_subset.log" | tail -40
pkill -9 -f "$PWD/build/"; echo quit | nvidia-cuda-mps-control; sleep 2
