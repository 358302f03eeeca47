#!/usr/bin/env bash
# Configures and builds coll/gpu into build/ (sm_90 by default: H100/H200).
set -eu
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake -S . -B build -G Ninja ${CMAKE_ARGS:-} >build-configure.log 2>&1 || { cat build-configure.log; exit 1; }
cmake --build build -j"$(nproc)"
