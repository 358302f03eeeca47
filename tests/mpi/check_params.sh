#!/bin/sh
# ompi_info must list every coll/gpu parameter, each with its help text.
out=$("$1" --param coll gpu --level 9 2>&1) || { echo "$out"; exit 1; }
echo "$out"
for p in priority verbose enable select_without_gpu path allreduce_algorithm oneshot_max_bytes scratch_bytes \
         staging_cache_bytes staging_pinned_max_bytes max_peers max_blocks threads_per_block timeout_ms direct_min_bytes ipc_cache_entries \
         block_bytes shared_gpu hier_min_bytes direct_style resident_us resident_max_bytes resident_blocks ll_max_bytes \
         virtual_node_size inter_path ucx_device_path ucx_chunk_bytes ucx_pipeline_depth; do
  echo "$out" | grep -q "coll_gpu_$p" || { echo "missing parameter coll_gpu_$p"; exit 1; }
done
echo "$out" | grep -q "MCA coll: gpu" || { echo "component not listed"; exit 1; }
