#!/usr/bin/env bash
# The whole test suite: builds, then runs every ctest. Without a GPU the `gpu`
# tests report "skipped" (exit 77); everything else must pass.
set -eu
cd "$(dirname "$0")/.."
scripts/build.sh
ctest --test-dir build --output-on-failure ${CTEST_ARGS:-}
