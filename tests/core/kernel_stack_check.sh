#!/usr/bin/env bash
# The stream-ordered and resident kernels read their call through the
# parameter's address (kernels/resident.cuh, serve): unless the parameter is
# a grid constant (GPU_GRID_CONSTANT) read with plain loads, nvcc copies the
# whole call into every thread's stack first, which cost 2.4-3.9 us a call
# on 512-thread blocks (docs/performance_history.md, session 31). This
# compiles the move kernels with ptxas' resource report and fails when a
# kernel's stack frame grows past what its own locals need.
#   kernel_stack_check.sh NVCC SOURCE_DIR [ARCH]      (77: no nvcc)
set -u
NVCC=$1 SRC=$2 ARCH=${3:-90}
LIMIT=128
[ -x "$NVCC" ] || { echo "no nvcc at $NVCC"; exit 77; }
out=$("$NVCC" -I"$SRC/kernels" -I"$SRC/common" -O2 -DNDEBUG -std=c++17 \
      --generate-code=arch=compute_$ARCH,code=sm_$ARCH -Xptxas -v -x cu -c "$SRC/kernels/peer_kernels.cu" \
      -o /dev/null 2>&1) || { echo "$out" | tail -20; echo "compile failed"; exit 1; }
rc=0 seen=0 kernel=""
while IFS= read -r line; do
  case "$line" in
    *"Compiling entry function"*) kernel=$(echo "$line" | sed -E "s/.*function '([^']*)'.*/\1/");;
    *"bytes stack frame"*)
      bytes=$(echo "$line" | sed -E 's/^[^0-9]*([0-9]+) bytes stack frame.*/\1/')
      case "$kernel" in *resident_move_kernel*|*peer_move_kernel*)
        seen=$((seen + 1))
        echo "$kernel: $bytes bytes of stack a thread"
        [ "$bytes" -le $LIMIT ] || { echo "  more than $LIMIT: is the call copied into every thread?"; rc=1; };;
      esac;;
  esac
done <<< "$out"
[ $seen -ge 2 ] || { echo "ptxas reported no stack frame of the move kernels"; echo "$out" | tail -20; exit 1; }
exit $rc
