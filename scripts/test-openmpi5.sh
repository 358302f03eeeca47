#!/usr/bin/env bash
# The test suite against Open MPI 5.0: builds Open MPI 5.0.x into its cached
# prefix (scripts/build-openmpi5.sh; seconds when already built), builds
# coll/gpu against it in build-ompi5/ (component, core, tests, tools: every
# MPI part follows COLL_GPU_OMPI_PREFIX), then runs ctest there under that
# Open MPI's mpirun. Without a GPU the `gpu` tests report "skipped".
#   CTEST_ARGS="-L cpu" scripts/test-openmpi5.sh    # only the tests that need no GPU
#   OMPI5_PREFIX=/opt/openmpi-5.0.7 scripts/test-openmpi5.sh   # an existing 5.0 prefix
set -eu
cd "$(dirname "$0")/.."
if [ -n "${OMPI5_PREFIX:-}" ] && [ -x "$OMPI5_PREFIX/bin/mpicc" ]; then
  prefix="$OMPI5_PREFIX"
else
  prefix="$(scripts/build-openmpi5.sh | tail -1)"
fi
echo "test-openmpi5: coll/gpu against $prefix ($("$prefix/bin/ompi_info" --version | head -1))"
BUILD_DIR="${BUILD_DIR:-build-ompi5}" CMAKE_ARGS="${CMAKE_ARGS:-} -DCOLL_GPU_OMPI_PREFIX=$prefix" scripts/build.sh
ctest --test-dir "${BUILD_DIR:-build-ompi5}" --output-on-failure ${CTEST_ARGS:-}
