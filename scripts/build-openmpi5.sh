#!/usr/bin/env bash
# Builds Open MPI 5.0.x into a private prefix, for building and testing coll/gpu
# against 5.0 (README: "Building against Open MPI 5.0"). Prints the prefix on
# the last line of stdout.
#
#   scripts/build-openmpi5.sh            # 5.0.7 from Debian 13's source package
#   OMPI5_TARBALL=/path/openmpi-5.0.10.tar.bz2 scripts/build-openmpi5.sh
#
# Prefix: ${COLL_GPU_CACHE:-$HOME/.cache/coll_gpu}/openmpi-<version>-min (the
# "-min" names this trimmed configuration; the untrimmed prefixes of earlier
# versions of this script, openmpi-<version>, are left alone), reused as is
# when it holds a finished build made with the same configure line (its stamp,
# .coll_gpu_build_done, records it): a second run takes a second, a prefix
# built with another configure line (e.g. other OMPI5_CONFIGURE_ARGS) is
# rebuilt. Set OMPI5_PREFIX to choose the prefix yourself.
#
# The source: Debian 13 (trixie) ships Open MPI 5.0.7 as a source package; it
# is fetched with apt-get through a private apt configuration (a deb-src line
# for trixie in a temporary folder: nothing under /etc is changed, no root
# needed, apt checks the archive's signatures as usual). Only the upstream
# ("orig") tarball is used, without Debian's patches.
#
# The build is trimmed to what coll/gpu's tests need: no Fortran, no OSHMEM, no
# MPI-IO (no ROMIO, no OMPIO with its fcoll/fbtl/fs/sharedfp), no CUDA/ROCm
# inside Open MPI (coll/gpu does its own CUDA), no UCX/OFI/PSM2/portals (no
# mtl, pml cm, osc rdma: MPI traffic is pml ob1 over btl self/sm/tcp, what the
# tests select), no monitoring/vprotocol components, no topo treematch (topo
# basic stays), no man pages. Kept: every coll component (basic, tuned,
# libnbc, han, adapt, sm, self, inter, sync, ftagree), osc sm, part persist,
# ompi_info, mpirun (PRRTE) with PMIx. PMIx and PRRTE are the bundled ones
# (bookworm's PMIx 4.2.2 is older than PRRTE 3.0 needs); hwloc and libevent are
# the system's. --with-devel-headers installs the internal headers the component
# compiles against; the few that 5.0's install leaves out (ompi/op/op.h needs fint_2_int.h, the thread and
# timer headers are included by opal's) are copied from the source tree.
#
# Long builds: runs `nice -n 19 make -j${OMPI5_JOBS:-2}`; the build folder is
# removed afterwards unless OMPI5_KEEP_BUILD=1 (sites without devel headers can
# point coll/gpu at a configured build tree instead: COLL_GPU_OMPI_BUILD_TREE).
set -eu
here="$(cd "$(dirname "$0")/.." && pwd)"
cache="${COLL_GPU_CACHE:-$HOME/.cache/coll_gpu}"
version="${OMPI5_VERSION:-5.0.7}"
tarball="${OMPI5_TARBALL:-}"
if [ -n "$tarball" ]; then
  tarball="$(cd "$(dirname "$tarball")" && pwd)/$(basename "$tarball")"
  version="$(basename "$tarball" | sed -E 's/^openmpi[-_]([0-9][0-9.]*[0-9])[.].*/\1/')"
fi
case "$version" in 5.0.*) ;; *) echo "build-openmpi5: version '$version' is not a 5.0.x release" >&2; exit 1 ;; esac
# What is configured; a prefix is reused only when its stamp records the same.
configure_args=(--with-devel-headers
  --with-pmix=internal --with-prrte=internal
  --with-hwloc=external --with-libevent=external
  --disable-mpi-fortran --disable-oshmem --disable-io-romio
  --without-cuda --without-rocm --without-ofi --without-psm2 --without-ucx --without-ucc --without-hcoll
  --without-portals4 --without-ugni --without-usnic --without-xpmem --without-knem
  --enable-mca-no-build=io,fcoll,fbtl,fs,sharedfp,common-ompio,mtl,pml-cm,pml-v,vprotocol,pml-monitoring,coll-monitoring,osc-monitoring,common-monitoring,osc-rdma,topo-treematch
  --disable-static --enable-shared --disable-debug
  --disable-sphinx --disable-man-pages --disable-dependency-tracking
  ${OMPI5_CONFIGURE_ARGS:-})
config_id="configure ${configure_args[*]}"
prefix="${OMPI5_PREFIX:-$cache/openmpi-$version-min}"
stamp="$prefix/.coll_gpu_build_done"

reuse() {  # reuse PREFIX CONFIG_ID: prints PREFIX and exits when its stamp records CONFIG_ID
  local st="$1/.coll_gpu_build_done"
  if [ -f "$st" ] && [ -x "$1/bin/mpicc" ]; then
    if grep -qxF "$2" "$st"; then
      echo "build-openmpi5: reusing $1 (built $(head -1 "$st"))" >&2
      echo "$1"
      exit 0
    fi
    echo "build-openmpi5: $1 was built with another configure line; not reusing it" >&2
  fi
}
reuse "$prefix" "$config_id"

t0=$(date +%s)
# Build dependencies from bookworm: the system hwloc/libevent the build uses,
# and what configure and the source fetch need.
need=()
for p in libhwloc-dev libevent-dev zlib1g-dev xz-utils bzip2 make gcc g++ perl; do
  dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
  echo "build-openmpi5: installing ${need[*]}" >&2
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/ompi5-build.XXXXXX")"
cleanup() { [ "${OMPI5_KEEP_BUILD:-0}" = 1 ] || rm -rf "$work"; }
trap cleanup EXIT

if [ -z "$tarball" ]; then
  # A deb-src line for trixie, through an apt configuration of our own in $work.
  source "$here/scripts/private_apt.sh"
  echo "build-openmpi5: fetching Debian's openmpi $version source package" >&2
  aptopts=()
  private_apt "$work/apt" "deb-src ${OMPI5_DEBIAN_MIRROR:-http://deb.debian.org/debian} ${OMPI5_DEBIAN_SUITE:-trixie} main" aptopts
  debver="$(apt-cache "${aptopts[@]}" showsrc openmpi 2>/dev/null | sed -n "s/^Version: \($version-.*\)/\1/p" | head -1)"
  (cd "$work" && [ -n "$debver" ] && apt-get "${aptopts[@]}" source --download-only "openmpi=$debver" >"$work/apt-source.log" 2>&1 ||
   { cat "$work/apt-source.log" >&2; echo "build-openmpi5: openmpi $version not found in ${OMPI5_DEBIAN_SUITE:-trixie}; set OMPI5_TARBALL to a release tarball" >&2; exit 1; })
  tarball="$(ls "$work"/openmpi_"$version".orig.tar.* | head -1)"
fi

echo "build-openmpi5: unpacking $(basename "$tarball")" >&2
tar -C "$work" -xf "$tarball"
src="$(ls -d "$work"/openmpi-"$version" | head -1)"
mkdir -p "$work/build"
cd "$work/build"
echo "build-openmpi5: configuring into $prefix (log: $work/build/config.log)" >&2
nice -n 19 "$src/configure" --prefix="$prefix" "${configure_args[@]}" \
  >"$work/configure.out" 2>&1 ||
  { tail -40 "$work/configure.out" >&2; tail -60 config.log >&2; exit 1; }
t1=$(date +%s)
echo "build-openmpi5: configure took $((t1 - t0)) s; building (nice -n 19 make -j${OMPI5_JOBS:-2})" >&2
nice -n 19 make -j"${OMPI5_JOBS:-2}" >"$work/make.out" 2>&1 || { tail -60 "$work/make.out" >&2; exit 1; }
rm -rf "$prefix"
nice -n 19 make install >"$work/install.out" 2>&1 || { tail -60 "$work/install.out" >&2; exit 1; }

# Headers 5.0's devel install leaves out although installed headers include them.
copy_header() {  # $1: path relative to the source (or build) tree
  local from="$src/$1"; [ -f "$from" ] || from="$work/build/$1"
  [ -f "$from" ] || { echo "build-openmpi5: $1 not found in the source tree" >&2; exit 1; }
  install -D -m 644 "$from" "$prefix/include/openmpi/$1"
}
for h in opal/mca/threads/pthreads/threads_pthreads.h \
         opal/mca/threads/pthreads/threads_pthreads_mutex.h \
         opal/mca/threads/pthreads/threads_pthreads_threads.h \
         opal/mca/threads/pthreads/threads_pthreads_tsd.h \
         opal/mca/timer/linux/timer_linux.h \
         ompi/mpi/fortran/base/fint_2_int.h; do
  copy_header "$h"
done

# Keep the prefix small (it travels to the GPU machine with the project):
# no documentation, no libtool archives, stripped libraries and programs.
rm -rf "$prefix/share/doc" "$prefix/share/man" "$prefix/share/openmpi/doc"
find "$prefix/lib" -name '*.la' -delete
find "$prefix/lib" -name '*.so*' -type f -exec strip --strip-unneeded {} + 2>/dev/null || true
find "$prefix/bin" -type f -exec strip {} + 2>/dev/null || true

t2=$(date +%s)
{ echo "$(date -u +%Y-%m-%dT%H:%M:%SZ) from $(basename "$tarball") in $((t2 - t0)) s"; echo "$config_id"; } >"$stamp"
echo "build-openmpi5: Open MPI $version in $prefix ($(du -sh "$prefix" | cut -f1)), $((t2 - t0)) s" >&2
echo "$prefix"
