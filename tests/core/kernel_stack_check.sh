#!/usr/bin/env bash
# The stream-ordered and resident kernels read their call through the
# parameter's address (kernels/resident.cuh, serve): unless the parameter is
# a grid constant (GPU_GRID_CONSTANT) read with plain loads, nvcc copies the
# whole call into every thread's stack first, which cost 2.4-3.9 us a call
# on 512-thread blocks (docs/performance_history.md, session 31). And where
# ptxas compiles a part of a kernel as a call of its own, it may spill: with
# run_stream_call so compiled (one body more in the resident kernel of sums)
# that took 4.8-5.4 KB of stack a thread (sessions 32 and 33), slower and
# reserving local memory for every thread the GPU can hold. This compiles the move kernels and the largest reduce
# kernels with ptxas' resource report and fails when a kernel's stack frame
# grows past what its own locals need.
#   kernel_stack_check.sh NVCC SOURCE_DIR [ARCH]      (77: no nvcc)
set -u
NVCC=$1 SRC=$2 ARCH=${3:-90}
[ -x "$NVCC" ] || { echo "no nvcc at $NVCC"; exit 77; }
rc=0
# check SOURCE PATTERN LIMIT: every kernel matching PATTERN (at least two) within LIMIT bytes
check() {
  local source=$1 pattern=$2 limit=$3 out seen=0 fn="" bytes line
  out=$("$NVCC" -I"$SRC/kernels" -I"$SRC/common" -O3 -DNDEBUG -std=c++17 \
        --generate-code=arch=compute_$ARCH,code=sm_$ARCH -Xptxas -v -x cu -c "$source" -o /dev/null 2>&1) ||
    { echo "$out" | tail -20; echo "compile of $source failed"; rc=1; return; }
  while IFS= read -r line; do
    case "$line" in
      *"Function properties for "*) fn=${line##*Function properties for };;
      *"bytes stack frame"*)
        bytes=$(echo "$line" | sed -E 's/^[^0-9]*([0-9]+) bytes stack frame.*/\1/')
        if echo "$fn" | grep -Eq "$pattern"; then
          seen=$((seen + 1))
          echo "$fn: $bytes bytes of stack a thread (limit $limit)"
          [ "$bytes" -le "$limit" ] || { echo "  more than $limit: a copied call, or spills?"; rc=1; }
        fi;;
    esac
  done <<< "$out"
  [ $seen -ge 2 ] || { echo "ptxas reported no stack frame of $pattern in $source"; echo "$out" | tail -20; rc=1; }
}
# The limits leave room for the array of destination (and source) pointers
# that the unaligned copies and reductions, calls of their own
# (copy_unaligned_bytes, reduce_unaligned in kernels/peer_sync.cuh), take by
# address: move kernels 192-208 bytes with it (session 37; 128 at most
# before), reduce kernels 160-288 (144-208 before). Passing the pointers by value instead kept the
# move kernels at 64 bytes but made ptxas spill the resident reduce kernels'
# serve() (688 bytes of frame, 3.3 KB of spill stores). What this guards
# against costs kilobytes.
check "$SRC/kernels/peer_kernels.cu" 'resident_move_kernel|peer_move_kernel' 224
# 4.8-5.5 KB with run_stream_call not inlined (kernels/resident.cuh).
check "$SRC/tests/core/kernel_stack_reduce.cu" 'resident_reduce_kernel|peer_reduce_kernel' 320
exit $rc
