#!/usr/bin/env bash
# The test suite against Open MPI 5.0: builds Open MPI 5.0.x into its cached
# prefix (scripts/build-openmpi5.sh; seconds when already built), builds
# coll/gpu against it in build-ompi5/ (component, core, tests, tools: every
# MPI part follows COLL_GPU_OMPI_PREFIX), then runs ctest there under that
# Open MPI's mpirun. Without a GPU the `gpu` tests report "skipped".
#   CTEST_ARGS="-L cpu" scripts/test-openmpi5.sh    # only the tests that need no GPU
#   OMPI5_PREFIX=/opt/openmpi-5.0.7 scripts/test-openmpi5.sh   # an existing 5.0 prefix
# The CUDA kernels (no Open MPI in them) are not compiled a second time: where
# build/ (scripts/build.sh, the 4.1 build) is configured, its
# kernels/libgpucoll_kernels.a is brought up to date there and linked
# (COLL_GPU_PREBUILT_KERNELS, kernels/CMakeLists.txt); COLL_GPU_SHARE_KERNELS=0
# compiles them in build-ompi5/ instead.
set -eu
cd "$(dirname "$0")/.."
if [ -n "${OMPI5_PREFIX:-}" ] && [ -x "$OMPI5_PREFIX/bin/mpicc" ]; then
  prefix="$OMPI5_PREFIX"
else
  prefix="$(scripts/build-openmpi5.sh | tail -1)"
fi
echo "test-openmpi5: coll/gpu against $prefix ($("$prefix/bin/ompi_info" --version | head -1))"
b="${BUILD_DIR:-build-ompi5}"
kernels_from="${COLL_GPU_KERNELS_FROM:-build}"
extra="-DCOLL_GPU_PREBUILT_KERNELS="
if [ "${COLL_GPU_SHARE_KERNELS:-1}" = 1 ] && [ "$kernels_from" != "$b" ] && [ -f "$kernels_from/build.ninja" ]; then
  echo "test-openmpi5: the kernels from $kernels_from/ (cmake --build $kernels_from --target gpucoll_kernels)"
  cmake --build "$kernels_from" --target gpucoll_kernels
  extra="-DCOLL_GPU_PREBUILT_KERNELS=$(cd "$kernels_from" && pwd)/kernels/libgpucoll_kernels.a"
fi
BUILD_DIR="$b" CMAKE_ARGS="${CMAKE_ARGS:-} -DCOLL_GPU_OMPI_PREFIX=$prefix $extra" scripts/build.sh
ctest --test-dir "$b" --output-on-failure ${CTEST_ARGS:-}
