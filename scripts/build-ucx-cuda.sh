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

# Private apt configuration (as in build-openmpi5.sh): a deb-src line, lists in $work.
apt="$work/apt"
mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$apt/etc/sources.list.d" "$apt/etc/preferences.d"
echo "deb-src ${UCX_DEBIAN_MIRROR:-http://deb.debian.org/debian} $suite main" >"$apt/etc/sources.list"
aptopts=(-o "Dir::Etc::SourceList=$apt/etc/sources.list" -o "Dir::Etc::SourceParts=$apt/etc/sources.list.d"
         -o "Dir::Etc::Preferences=$apt/etc/preferences" -o "Dir::Etc::PreferencesParts=$apt/etc/preferences.d"
         -o "Dir::State::Lists=$apt/lists" -o "Dir::Cache=$apt/cache" -o "Debug::NoLocking=1"
         -o "APT::Sandbox::User=$(id -un)")
apt-get "${aptopts[@]}" update -qq >&2
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
[ -x "$src/configure" ] || (cd "$src" && ./autogen.sh >/dev/null)
mkdir -p "$work/build"
cd "$work/build"
echo "build-ucx-cuda: configuring UCX $version with CUDA ($cuda) into $prefix" >&2
nice -n 19 "$src/contrib/configure-release" --prefix="$prefix" --with-cuda="$cuda" \
  --without-rocm --without-java --without-go --disable-doxygen-doc --enable-mt \
  ${UCX_CONFIGURE_ARGS:-} >"$work/configure.out" 2>&1 || { tail -40 "$work/configure.out" >&2; exit 1; }
grep -qi "UCT modules:.*cuda" "$work/configure.out" ||
  { echo "build-ucx-cuda: configure did not enable CUDA" >&2; tail -40 "$work/configure.out" >&2; exit 1; }
nice -n 19 make -j"${UCX_JOBS:-2}" >"$work/make.out" 2>&1 || { tail -60 "$work/make.out" >&2; exit 1; }
rm -rf "$prefix"
make install >"$work/install.out" 2>&1 || { tail -40 "$work/install.out" >&2; exit 1; }
rm -rf "$prefix/share/doc"
find "$prefix/lib" -name '*.la' -delete
find "$prefix/lib" -name '*.a' -delete
echo "$(date -u +%Y-%m-%dT%H:%M:%SZ) ucx $debver ($suite) in $(( $(date +%s) - t0 )) s" >"$prefix/.coll_gpu_build_done"
"$prefix/bin/ucx_info" -v >&2 || true
echo "build-ucx-cuda: UCX $version with CUDA in $prefix ($(du -sh "$prefix" | cut -f1))" >&2
echo "$prefix"
