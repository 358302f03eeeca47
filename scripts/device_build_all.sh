#!/usr/bin/env bash
# On the GPU machine, one call: this tree into build/, a baseline checkout in
# .base/ (if present: e.g. `git archive <commit> | tar -x -C .base` here; its
# component into /root/basebuild, for scripts/device_bench_compare.sh) and
# Horovod both ways (if .hvd/ holds ../shared/clients/horovod:
# scripts/horovod_bench.sh PHASE=build), all at once. About 200 s on 32 cores.
# TARGETS="mca_coll_gpu" builds only those targets of the tree (Horovod's runs
# need only the component).
# Carry .device (and .base, .hvd where used).
set -u
cd "$(dirname "$0")/.."
source .device/mpi-env.sh
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
nvidia-smi -L | tee "$OUT/gpus.txt"
t0=$SECONDS
if [ -d .hvd ]; then
  ( PHASE=build bash scripts/horovod_bench.sh > "$OUT/hvd_build.log" 2>&1; echo "horovod build rc $? after $((SECONDS - t0)) s" ) &
fi
( cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release > "$OUT/cmake.log" 2>&1 &&
  cmake --build build -j"$(nproc)" ${TARGETS:+--target $TARGETS} > "$OUT/build.log" 2>&1; echo "build rc $? after $((SECONDS - t0)) s" ) &
if [ -d .base ]; then
  ( cmake -S .base -B /root/basebuild -G Ninja -DCMAKE_BUILD_TYPE=Release > "$OUT/base_cmake.log" 2>&1 &&
    cmake --build /root/basebuild -j"$(nproc)" --target mca_coll_gpu > "$OUT/base_build.log" 2>&1
    echo "baseline build rc $? after $((SECONDS - t0)) s" ) &
fi
wait
grep -E "error|FAILED" "$OUT/build.log" | head -20
