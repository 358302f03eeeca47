#!/usr/bin/env bash
# Builds UCX with CUDA support (cuda_copy, cuda_ipc, GPU memory detection)
# from Debian's source package into a private prefix; prints the prefix on the
# last line of stdout. Debian's own libucx0 is built without CUDA, so neither
# Open MPI's pml/ucx nor coll/gpu's inter-node transport (ucx_transport/) can
# move device memory through it (coll_gpu_ucx_device_path=auto then stages).
#
#   scripts/build-ucx-cuda.sh
#   UCX_SUITE=trixie scripts/build-ucx-cuda.sh     # a newer UCX (other ABI: see below)
#
# Default: bookworm's UCX (1.13.1), the release Debian 12's Open MPI 4.1.4 is
# built against, so the same libucp.so.0 ABI: putting the prefix first on
# LD_LIBRARY_PATH switches Open MPI's pml/ucx and coll/gpu to it together.
# Prefix: ${COLL_GPU_CACHE:-$HOME/.cache/coll_gpu}/ucx-<version>-cuda (reused
# when finished; UCX_PREFIX chooses another). CUDA from ${CUDA_HOME:-/usr/local/cuda}.
#
# Debian's orig tarball is built with Debian's debian/ folder and patches; where
# the CUDA toolkit has no NVML (nvml.h, libnvidia-ml.so), they come from
# bookworm non-free (libnvidia-ml-dev, libnvidia-ml1) for the build only.
# Measured: 174 CPU seconds on 2 cores; the stripped prefix is 4 MiB.
#
# Then (docs/ompi_versions.md, "UCX with CUDA"):
#   cmake -S . -B build -DCMAKE_PREFIX_PATH=<prefix> ...   # coll/gpu's UCX transport
#   export LD_LIBRARY_PATH=<prefix>/lib:$LD_LIBRARY_PATH   # at run time, for Open MPI too
#   <prefix>/bin/ucx_info -d | grep -i cuda                 # cuda_copy / cuda_ipc listed
set -eu
cache="${COLL_GPU_CACHE:-$HOME/.cache/coll_gpu}"
suite="${UCX_SUITE:-bookworm}"
cuda="${CUDA_HOME:-/usr/local/cuda}"
[ -x "$cuda/bin/nvcc" ] || { echo "build-ucx-cuda: no CUDA toolkit at $cuda (set CUDA_HOME)" >&2; exit 1; }

work="$(mktemp -d "${TMPDIR:-/tmp}/ucx-build.XXXXXX")"
trap 'rm -rf "$work"' EXIT

# The source package through an apt configuration of our own (scripts/private_apt.sh).
source "$(cd "$(dirname "$0")" && pwd)/private_apt.sh"
mirror="${UCX_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
aptopts=()
private_apt "$work/apt" "deb-src $mirror $suite main" aptopts
debver="$(apt-cache "${aptopts[@]}" showsrc ucx 2>/dev/null | sed -n 's/^Version: //p' | head -1)"
[ -n "$debver" ] || { echo "build-ucx-cuda: no ucx source package in $suite" >&2; exit 1; }
version="${debver%%-*}"
prefix="${UCX_PREFIX:-$cache/ucx-$version-cuda}"
if [ -f "$prefix/.coll_gpu_build_done" ] && [ -x "$prefix/bin/ucx_info" ]; then
  echo "build-ucx-cuda: reusing $prefix" >&2
  echo "$prefix"
  exit 0
fi

need=()
# verbs and rdmacm as in Debian's own build (InfiniBand/RoCE transports next to CUDA).
for p in make gcc g++ autoconf automake libtool pkg-config libnuma-dev libibverbs-dev librdmacm-dev; do
  dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

t0=$(date +%s)
(cd "$work" && apt-get "${aptopts[@]}" source --download-only "ucx=$debver" >"$work/apt-source.log" 2>&1) ||
  { cat "$work/apt-source.log" >&2; exit 1; }
tar -C "$work" -xf "$(ls "$work"/ucx_"$version".orig.tar.* | head -1)"
src="$(ls -d "$work"/ucx-"$version"* | head -1)"
# Debian's orig tarball has no configure, and upstream's debian/ (which
# configure.ac names) is renamed debian.upstream/: build it the way Debian does,
# with its debian/ folder and its patches (undo-upstream.patch drops those
# names; gcc-11.patch, ptr-fix.patch).
debtar="$(ls "$work"/ucx_"$debver".debian.tar.* 2>/dev/null | head -1)"
if [ -n "$debtar" ] && [ ! -d "$src/debian" ]; then
  tar -C "$src" -xf "$debtar"
  if [ -f "$src/debian/patches/series" ]; then
    for p in $(grep -v '^[[:space:]]*#' "$src/debian/patches/series"); do
      patch -d "$src" -p1 -N -s <"$src/debian/patches/$p" >&2 ||
        { echo "build-ucx-cuda: Debian's patch $p does not apply" >&2; exit 1; }
    done
  fi
fi
# CUDA 13 changed cuCtxCreate (now cuCtxCreate_v4, with a parameters argument);
# UCX 1.13's libraries do not call it, its test program test_cuda_hook.c (built
# by `make all`) does: call it the new way there where CUDA is 13 or later.
hook="$src/test/apps/test_cuda_hook.c"
if [ -f "$hook" ] && grep -q '^    res = cuCtxCreate(&context, 0, device);' "$hook"; then
  sed -i 's|^    res = cuCtxCreate(&context, 0, device);|#if CUDA_VERSION >= 13000\n    res = cuCtxCreate(\&context, NULL, 0, device);\n#else\n    res = cuCtxCreate(\&context, 0, device);\n#endif|' "$hook"
fi
[ -x "$src/configure" ] || (cd "$src" && ./autogen.sh >"$work/autogen.out" 2>&1) ||
  { tail -30 "$work/autogen.out" >&2; exit 1; }
# UCX's CUDA support needs NVML (nvml.h, libnvidia-ml.so), which a CUDA toolkit
# installed without cuda-nvml-dev (this machine's CUDA 13.0) lacks. Then they
# come from bookworm's non-free section (a private binary apt configuration as
# above, dpkg -x into $work/nvml; nothing is installed): nvml.h of
# libnvidia-ml-dev (CUDA 11.8's) and libnvidia-ml.so of libnvidia-ml1 (driver
# 535), used only to compile and link: the UCX libraries need libnvidia-ml.so.1,
# which the GPU machine's driver provides.
nvml_flags=()
if [ ! -f "$cuda/include/nvml.h" ] && [ ! -f /usr/include/nvml.h ] && [ ! -f "$cuda/targets/x86_64-linux/include/nvml.h" ]; then
  echo "build-ucx-cuda: no nvml.h in $cuda: nvml.h and libnvidia-ml.so from bookworm non-free" >&2
  mkdir -p "$work/nvml"
  naptopts=()
  private_apt "$work/napt" "deb $mirror bookworm non-free" naptopts
  (cd "$work/nvml" && apt-get "${naptopts[@]}" download libnvidia-ml-dev libnvidia-ml1 >"$work/nvml.log" 2>&1) ||
    { cat "$work/nvml.log" >&2; exit 1; }
  for d in "$work"/nvml/*.deb; do dpkg -x "$d" "$work/nvml/root"; done
  nvml_lib="$(dirname "$(find "$work/nvml/root" -name 'libnvidia-ml.so.1' | head -1)")"
  [ -f "$work/nvml/root/usr/include/nvml.h" ] && [ -e "$nvml_lib/libnvidia-ml.so" ] ||
    { echo "build-ucx-cuda: nvml.h or libnvidia-ml.so missing from the non-free packages" >&2; exit 1; }
  nvml_flags=(CPPFLAGS="-I$work/nvml/root/usr/include" LDFLAGS="-L$nvml_lib")
fi

mkdir -p "$work/build"
cd "$work/build"
echo "build-ucx-cuda: configuring UCX $version with CUDA ($cuda) into $prefix" >&2
nice -n 19 "$src/contrib/configure-release" --prefix="$prefix" --with-cuda="$cuda" "${nvml_flags[@]}" \
  --without-rocm --without-java --without-go --disable-doxygen-doc --enable-mt \
  ${UCX_CONFIGURE_ARGS:-} >"$work/configure.out" 2>&1 || { tail -40 "$work/configure.out" >&2; exit 1; }
grep -qi "UCT modules:.*cuda" "$work/configure.out" ||
  { echo "build-ucx-cuda: configure did not enable CUDA" >&2; tail -40 "$work/configure.out" >&2; exit 1; }
nice -n 19 make -j"${UCX_JOBS:-2}" >"$work/make.out" 2>&1 || { tail -60 "$work/make.out" >&2; exit 1; }
rm -rf "$prefix"
make install >"$work/install.out" 2>&1 || { tail -40 "$work/install.out" >&2; exit 1; }
# Keep the prefix small (it travels to the GPU machine): no docs, libtool
# archives or static libraries, stripped libraries and programs (21 MiB -> 4).
rm -rf "$prefix/share/doc"
find "$prefix/lib" -name '*.la' -delete
find "$prefix/lib" -name '*.a' -delete
find "$prefix/lib" -name '*.so*' -type f -exec strip --strip-unneeded {} + 2>/dev/null || true
find "$prefix/bin" -type f -exec strip {} + 2>/dev/null || true
echo "$(date -u +%Y-%m-%dT%H:%M:%SZ) ucx $debver ($suite) in $(( $(date +%s) - t0 )) s" >"$prefix/.coll_gpu_build_done"
"$prefix/bin/ucx_info" -v >&2 || true
echo "build-ucx-cuda: UCX $version with CUDA in $prefix ($(du -sh "$prefix" | cut -f1))" >&2
echo "$prefix"
