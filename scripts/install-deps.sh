#!/usr/bin/env bash
# Installs what coll/gpu builds against, from Debian 12 / Ubuntu packages:
# Open MPI with devel headers, UCX, hwloc, CMake, Ninja. The CUDA toolkit is
# expected at /usr/local/cuda. Does nothing for packages already present.
set -eu
need=()
for p in libopenmpi-dev openmpi-bin libucx-dev ucx-utils libhwloc-dev hwloc cmake ninja-build pkg-config \
         python3 iproute2; do
  dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
  echo "install-deps: installing ${need[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
[ -x /usr/local/cuda/bin/nvcc ] || command -v nvcc >/dev/null || { echo "install-deps: no CUDA toolkit (nvcc) found" >&2; exit 1; }
