#!/usr/bin/env bash
# Configures and builds coll/gpu into build/ (sm_90 by default: H100/H200).
# BUILD_DIR names another build folder (scripts/test-openmpi5.sh: build-ompi5).
set -eu
cd "$(dirname "$0")/.."
scripts/install-deps.sh
b="${BUILD_DIR:-build}"
cmake -S . -B "$b" -G Ninja ${CMAKE_ARGS:-} >"$b-configure.log" 2>&1 || { cat "$b-configure.log"; exit 1; }
cmake --build "$b" -j"$(nproc)"
