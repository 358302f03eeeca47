#!/usr/bin/env bash
# Builds coll/gpu on the GPU machine and runs the gpu-labelled tests there.
#   scripts/device_gpu_tests.sh [ctest -R regex]
# Expects .device/mpi-env.sh (a copy of ../shared/device) and writes logs to $OUT.
set -u
source .device/mpi-env.sh
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
nvidia-smi -L | tee "$OUT/gpus.txt"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >"$OUT/cmake.log" 2>&1 || { tail -30 "$OUT/cmake.log"; exit 1; }
cmake --build build -j"$(nproc)" --target ${BUILD_TARGETS:-all} >"$OUT/build.log" 2>&1 || { grep -E "error" "$OUT/build.log" | head -30; exit 1; }
echo "build ok"
ctest --test-dir build -L gpu ${1:+-R "$1"} --output-on-failure 2>&1 | tee "$OUT/ctest_gpu.log" | grep -vE "^\[|pcompress" | tail -60
