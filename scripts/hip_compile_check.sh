#!/usr/bin/env bash
# HIP compile-and-link check (CI, no AMD GPU needed; nothing runs).
#
# Builds the kernels (kernels/*.cu), the core and common for AMD gfx90a with
# -DCOLL_GPU_PLATFORM=HIP (cmake/CollGpuHip.cmake: the core's and common's
# C++ are compiled as HIP too), and links them all into one shared library
# with --no-undefined (gpucoll_hip_link). The Open MPI glue is not built.
# hipcc itself also compiles one kernel file, so the hipcc driver users would
# call is checked as well as the clang that CMake drives.
#
#   scripts/hip_compile_check.sh [BUILD_DIR]     (default: build-hip)
#   HIP_CHECK_ARCH=gfx942 HIP_CHECK_OPT=-O3 scripts/hip_compile_check.sh
#
# HIP_CHECK_OPT is the device and HIP optimisation level, -O0 by default:
# the AMDGPU back end still selects and emits every instruction (builtins,
# atomics, inline asm are checked), in ~1/4 of the time of hipcc's -O3,
# where the unrolled 8-peer reductions take minutes on 2 cores.
#
# Installs Debian's hipcc (and the HIP runtime headers, device libraries)
# when missing. Exit status: 0 all compiled and linked; 1 a compile, link or
# configure error (summary below the log tail); 77 hipcc is missing and could
# not be installed (no apt, no root, no network), which ctest reports as skip.
set -u
cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD=${1:-build-hip}
ARCH=${HIP_CHECK_ARCH:-gfx90a}
OPT=${HIP_CHECK_OPT:--O0}
# hipcc/hipconfig pick the NVIDIA platform when nvcc is on PATH.
export HIP_PLATFORM=amd
START=$(date +%s)
LOGS=$BUILD/hip-check-logs
mkdir -p "$LOGS"

say() { echo "hip_compile_check: $*"; }
elapsed() { echo "$(( $(date +%s) - START ))s"; }

# ---- 1. hipcc and what it needs --------------------------------------------
hip_ready() {
  command -v hipcc >/dev/null && command -v hipconfig >/dev/null && command -v roc-obj-ls >/dev/null &&
    { [ -f /usr/include/hip/hip_runtime.h ] || [ -f /opt/rocm/include/hip/hip_runtime.h ]; }
}
install_hip() {
  command -v apt-get >/dev/null || { say "no hipcc and no apt-get to install it"; return 1; }
  local sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    sudo -n true 2>/dev/null || { say "no hipcc, and installing it needs root"; return 1; }
    sudo="sudo -n"
  fi
  # hipcc pulls clang-15, lld-15, rocm-device-libs and libamdhip64-dev.
  local pkgs=(hipcc libamdhip64-dev rocm-device-libs)
  say "installing ${pkgs[*]} (apt)"
  if ! DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${pkgs[@]}" \
       >"$LOGS/apt.log" 2>&1; then
    $sudo apt-get update -qq >>"$LOGS/apt.log" 2>&1
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${pkgs[@]}" \
      >>"$LOGS/apt.log" 2>&1 || { tail -n 5 "$LOGS/apt.log"; say "apt-get could not install hipcc"; return 1; }
  fi
}
if ! hip_ready; then
  install_hip && hip_ready || { say "SKIP: hipcc is not available ($(elapsed))"; exit 77; }
fi
say "$(hipcc --version 2>/dev/null | head -n 1), target $ARCH, $OPT"

failed=()
fail_log() { # name, log file
  failed+=("$1")
  echo "---- $1 failed; last lines of $2:"
  grep -E -B2 -A8 'error|FAILED' "$2" | tail -n 60
}

# ---- 2. hipcc on one kernel file -----------------------------------------------
if ! hipcc -x hip --offload-arch="$ARCH" "$OPT" -std=c++17 -fPIC -DCOLL_GPU_HIP=1 -Icommon -Ikernels \
     -c kernels/peer_kernels.cu -o "$LOGS/peer_kernels.hipcc.o" >"$LOGS/hipcc.log" 2>&1; then
  fail_log "hipcc kernels/peer_kernels.cu" "$LOGS/hipcc.log"
fi

# ---- 3. configure and build through CMake ----------------------------------------
if ! cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCOLL_GPU_PLATFORM=HIP -DCMAKE_HIP_ARCHITECTURES="$ARCH" \
     -DCMAKE_BUILD_TYPE=Release -DCMAKE_HIP_FLAGS_RELEASE="$OPT -DNDEBUG" \
     -DCOLL_GPU_BUILD_TESTS=OFF -DCOLL_GPU_BUILD_EXAMPLES=OFF \
     >"$LOGS/configure.log" 2>&1; then
  fail_log "cmake configure (COLL_GPU_PLATFORM=HIP)" "$LOGS/configure.log"
else
  # -k 0: report every file that fails, not only the first.
  cmake --build "$BUILD" --target gpucoll_hip_link -j"$(nproc)" -- -k 0 >"$LOGS/build.log" 2>&1
  rc=$?
  for f in $(sed -n 's/^FAILED: //p' "$LOGS/build.log"); do failed+=("$f"); done
  if [ $rc -ne 0 ]; then
    [ ${#failed[@]} -gt 0 ] || failed+=("build (see $LOGS/build.log)")
    echo "---- build errors:"
    grep -E -A6 "error:|undefined" "$LOGS/build.log" | head -n 120
  else
    # The device code must really be in the library: one gfx90a code object
    # per kernel source, each in an offload bundle whose header names the
    # target. Counted in the bytes: roc-obj-ls 5.2 misses the last bundle of
    # a .hip_fatbin section (it listed 4 of 5 here).
    want=$(grep -c '^build kernels/CMakeFiles/gpucoll_kernels.dir/.*\.o: HIP_COMPILER' "$BUILD/build.ninja")
    have=$(grep -a -o -- "hipv4-amdgcn-amd-amdhsa--$ARCH" "$BUILD/libgpucoll_hip_link.so" | wc -l)
    if [ "$have" -lt "$want" ] || [ "$want" -eq 0 ]; then
      failed+=("libgpucoll_hip_link.so holds $have $ARCH code objects, expected $want")
    fi
    # What went into the library, by language: the proof that core and
    # common were compiled as HIP, not as plain C++.
    link=$(ninja -C "$BUILD" -t commands gpucoll_hip_link | tail -n 1)
    nhip=0; nother=0
    for o in $(grep -oE '[^ ]+\.(cu|cpp|c)\.o' <<<"$link" | sort -u); do
      if grep -qE "^build $o: HIP_COMPILER" "$BUILD/build.ninja"; then nhip=$((nhip + 1)); else nother=$((nother + 1)); fi
    done
  fi
fi

# ---- 4. summary ------------------------------------------------------------------
if [ ${#failed[@]} -gt 0 ]; then
  say "FAILED for $ARCH ($(elapsed)); logs in $LOGS:"
  for f in "${failed[@]}"; do echo "  - $f"; done
  exit 1
fi
say "OK: ${want} kernel sources with $ARCH device code; $nhip objects compiled as HIP" \
    "and $nother host-only (C, C++) linked into gpucoll_hip_link.so (--no-undefined) in $(elapsed)"
