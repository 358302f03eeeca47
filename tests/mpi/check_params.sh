#!/bin/sh
# ompi_info must list every coll/gpu parameter, each with its help text, and
# the forcing parameters with the algorithm table's rows as their values.
out=$("$1" --param coll gpu --level 9 2>&1) || { echo "$out"; exit 1; }
echo "$out"
for p in priority verbose enable select_without_gpu stage_host_buffers path allreduce_algorithm oneshot_max_bytes scratch_bytes \
         staging_cache_bytes staging_pinned_max_bytes max_peers max_blocks busy_max_blocks thread_calls threads_per_block timeout_ms direct_min_bytes window_move_min_bytes auto_windows ipc_cache_entries ipc_cache_bytes \
         block_bytes shared_gpu hier_min_bytes direct_style resident_us resident_max_bytes resident_blocks resident_early ll_max_bytes \
         virtual_node_size inter_path ucx_device_path ucx_chunk_bytes ucx_pipeline_depth ucx_net_devices order kernel_launch stream_priority \
         reduce_algorithm bcast_algorithm allgather_algorithm reduce_scatter_block_algorithm alltoall_algorithm \
         user_op_symbols; do
  echo "$out" | grep -q "coll_gpu_$p" || { echo "missing parameter coll_gpu_$p"; exit 1; }
done
echo "$out" | grep -q "MCA coll: gpu" || { echo "component not listed"; exit 1; }

# The forcing parameters, parsable: "auto" is 0 and the default, every row
# of the kind is a value (one number each), the help text is there. The
# allreduce aliases set through the environment read back as their rows.
parsable=$(OMPI_MCA_coll_gpu_allreduce_algorithm=writes "$1" --param coll gpu --level 9 --parsable 2>&1) ||
  { echo "$parsable"; exit 1; }
check_values() { # parameter, then its rows' names
  p=coll_gpu_$1
  shift
  pre="mca:coll:gpu:param:$p"
  echo "$parsable" | grep -q "^$pre:help:..........." || { echo "$p: no help text"; exit 1; }
  echo "$parsable" | grep -qx "$pre:enumerator:value:0:auto" || { echo "$p: no value 0:auto"; exit 1; }
  for row in "$@"; do
    n=$(echo "$parsable" | grep -c "^$pre:enumerator:value:[1-9][0-9]*:$row\$")
    [ "$n" = 1 ] || { echo "$p: value $row listed $n times"; exit 1; }
  done
  # No other values than auto, the rows and (allreduce) the aliases; one number per row.
  listed=$(echo "$parsable" | grep -c "^$pre:enumerator:value:")
  numbers=$(echo "$parsable" | grep "^$pre:enumerator:value:" | cut -d: -f8 | sort -u | wc -l)
  [ "$numbers" = $(($# + 1)) ] || { echo "$p: $numbers distinct values for $# rows and auto"; exit 1; }
  [ "$p" = coll_gpu_allreduce_algorithm ] || [ "$listed" = $(($# + 1)) ] ||
    { echo "$p: $listed values listed"; exit 1; }
}
value_of() { echo "$parsable" | grep "^mca:coll:gpu:param:coll_gpu_$1:enumerator:value:[0-9]*:$2\$" | cut -d: -f8; }
check_values allreduce_algorithm allreduce_ll allreduce_oneshot allreduce_push allreduce_writes allreduce_direct \
  allreduce_twoshot
check_values reduce_algorithm reduce_ll reduce reduce_push reduce_twoshot reduce_stores
check_values bcast_algorithm bcast_spread bcast_push bcast_direct bcast_ll bcast bcast_forward
check_values allgather_algorithm allgather_push allgather_direct allgather_ll allgather
check_values reduce_scatter_block_algorithm reduce_scatter_direct reduce_scatter_block_ll reduce_scatter_block
check_values alltoall_algorithm alltoall_push alltoall_ll alltoall
for alias in oneshot twoshot direct writes; do
  a=$(value_of allreduce_algorithm "$alias")
  r=$(value_of allreduce_algorithm "allreduce_$alias")
  [ -n "$a" ] && [ "$a" = "$r" ] || { echo "alias $alias is value '$a', allreduce_$alias '$r'"; exit 1; }
done
echo "$parsable" | grep -qx "mca:coll:gpu:param:coll_gpu_allreduce_algorithm:value:allreduce_writes" ||
  { echo "coll_gpu_allreduce_algorithm=writes does not read back as allreduce_writes"; exit 1; }
echo "$parsable" | grep -qx "mca:coll:gpu:param:coll_gpu_bcast_algorithm:value:auto" ||
  { echo "coll_gpu_bcast_algorithm is not auto by default"; exit 1; }
echo "forcing parameters: ok"
# The user-op symbols: Horovod's four fp16 ops by default.
echo "$parsable" | grep -q "^mca:coll:gpu:param:coll_gpu_user_op_symbols:value:.*_ZN7horovod6common11float16_sumEPvS1_PiPP15ompi_datatype_t=float16:sum" ||
  { echo "coll_gpu_user_op_symbols does not default to Horovod's ops"; exit 1; }
echo "user-op symbols: ok"
# What calls start after: default_stream by default; the former name
# (queued_order) still sets it.
echo "$parsable" | grep -qx "mca:coll:gpu:param:coll_gpu_order:value:default_stream" ||
  { echo "coll_gpu_order is not default_stream by default"; exit 1; }
syn=$(OMPI_MCA_coll_gpu_queued_order=none "$1" --param coll gpu --level 9 --parsable 2>&1) || { echo "$syn"; exit 1; }
echo "$syn" | grep -qx "mca:coll:gpu:param:coll_gpu_order:value:none" ||
  { echo "coll_gpu_queued_order=none does not set coll_gpu_order"; exit 1; }
echo "order: ok"
