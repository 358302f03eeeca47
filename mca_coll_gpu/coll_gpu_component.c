/* The component: its parameters, and the bits of the coll API that differ
 * between Open MPI versions (kept here and in coll_gpu_module.c only). */
#include "coll_gpu.h"

#include "opal/mca/base/mca_base_var.h"

static int gpu_register(void);
static int gpu_open(void);
static int gpu_close(void);

mca_coll_gpu_component_t mca_coll_gpu_component = {
    .super = {
#if OMPI_MAJOR_VERSION >= 5
        .collm_version = {MCA_COLL_BASE_VERSION_2_4_0,
#else
        .collm_version = {MCA_COLL_BASE_VERSION_2_0_0,
#endif
                          .mca_component_name = "gpu",
                          MCA_BASE_MAKE_VERSION(component, 0, 1, 0),
                          .mca_open_component = gpu_open,
                          .mca_close_component = gpu_close,
                          .mca_register_component_params = gpu_register},
        .collm_data = {MCA_BASE_METADATA_PARAM_CHECKPOINT},
        .collm_init_query = mca_coll_gpu_init_query,
        .collm_comm_query = mca_coll_gpu_comm_query,
    },
    .priority = 80, /* above tuned (30), self (75) and coll/cuda (78) */
    .verbose = 0,
    .enable = true,
    .output = -1,
};

/* Storage for parameters the config struct holds in other types. */
static int param_path = GPUCOLL_PATH_AUTO;
static int param_allreduce_algorithm = GPUCOLL_ALLREDUCE_AUTO;
static size_t param_oneshot_max_bytes = GPUCOLL_DEFAULT_ONESHOT_MAX_BYTES;
static size_t param_scratch_bytes = GPUCOLL_DEFAULT_SCRATCH_BYTES;
static size_t param_staging_cache_bytes = GPUCOLL_DEFAULT_STAGING_CACHE_BYTES;
static int param_max_peers = GPUCOLL_DEFAULT_MAX_PEERS;
static int param_max_blocks = GPUCOLL_DEFAULT_MAX_BLOCKS;
static int param_threads = GPUCOLL_DEFAULT_THREADS;
static int param_timeout_ms = GPUCOLL_DEFAULT_TIMEOUT_MS;
static size_t param_direct_min_bytes = GPUCOLL_DEFAULT_DIRECT_MIN_BYTES;
static int param_direct_style = GPUCOLL_DIRECT_AUTO;
static int param_ipc_cache_entries = GPUCOLL_DEFAULT_IPC_CACHE_ENTRIES;
static int param_shared_gpu = GPUCOLL_SHARED_GPU_AUTO;
static size_t param_block_bytes = 0;
static size_t param_hier_min_bytes = GPUCOLL_DEFAULT_HIER_MIN_BYTES;
static int param_resident_us = GPUCOLL_DEFAULT_RESIDENT_US;
static size_t param_resident_max_bytes = GPUCOLL_DEFAULT_RESIDENT_MAX_BYTES;
static size_t param_ll_max_bytes = GPUCOLL_DEFAULT_LL_MAX_BYTES;
static int param_resident_blocks = GPUCOLL_DEFAULT_RESIDENT_BLOCKS;
/* Across nodes (coll_gpu_hier.c, docs/multinode.md). */
static int param_virtual_node_size = 0;
static int param_inter_path = GPUCOLL_INTER_AUTO;
static int param_ucx_device_path = 0; /* gpucoll_ucx_device_path_t: 0 auto, 1 direct, 2 staged */
static size_t param_ucx_chunk_bytes = 1024u * 1024u; /* GPUCOLL_UCX_DEFAULT_CHUNK_BYTES */
static int param_ucx_pipeline_depth = 4;             /* GPUCOLL_UCX_DEFAULT_PIPELINE_DEPTH */

static const mca_base_var_enum_value_t path_values[] = {
    {GPUCOLL_PATH_AUTO, "auto"}, {GPUCOLL_PATH_STAGED, "staged"}, {GPUCOLL_PATH_IPC, "ipc"}, {0, NULL}};
static const mca_base_var_enum_value_t allreduce_values[] = {
    {GPUCOLL_ALLREDUCE_AUTO, "auto"}, {GPUCOLL_ALLREDUCE_ONESHOT, "oneshot"},
    {GPUCOLL_ALLREDUCE_TWOSHOT, "twoshot"}, {GPUCOLL_ALLREDUCE_DIRECT, "direct"},
    {GPUCOLL_ALLREDUCE_WRITES, "writes"}, {0, NULL}};
static const mca_base_var_enum_value_t direct_style_values[] = {
    {GPUCOLL_DIRECT_AUTO, "auto"}, {GPUCOLL_DIRECT_PULL, "pull"}, {GPUCOLL_DIRECT_PUSH, "push"}, {0, NULL}};
static const mca_base_var_enum_value_t inter_path_values[] = {
    {GPUCOLL_INTER_AUTO, "auto"}, {GPUCOLL_INTER_HIER, "hier"}, {GPUCOLL_INTER_STAGED, "staged"}, {0, NULL}};
/* "true"/"false" as well: the parameter was a bool before MPS was detected. */
static const mca_base_var_enum_value_t shared_gpu_values[] = {
    {GPUCOLL_SHARED_GPU_AUTO, "auto"}, {GPUCOLL_SHARED_GPU_ON, "on"}, {GPUCOLL_SHARED_GPU_OFF, "off"},
    {GPUCOLL_SHARED_GPU_ON, "true"}, {GPUCOLL_SHARED_GPU_OFF, "false"}, {0, NULL}};
static const mca_base_var_enum_value_t ucx_device_path_values[] = {
    {0, "auto"}, {1, "direct"}, {2, "staged"}, {0, NULL}};

static void reg_int(const char *name, const char *help, int level, int *storage)
{
    (void)mca_base_component_var_register(&mca_coll_gpu_component.super.collm_version, name, help,
                                          MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, level,
                                          MCA_BASE_VAR_SCOPE_READONLY, storage);
}
static void reg_size(const char *name, const char *help, int level, size_t *storage)
{
    (void)mca_base_component_var_register(&mca_coll_gpu_component.super.collm_version, name, help,
                                          MCA_BASE_VAR_TYPE_SIZE_T, NULL, 0, 0, level,
                                          MCA_BASE_VAR_SCOPE_READONLY, storage);
}
static void reg_enum(const char *name, const char *help, const mca_base_var_enum_value_t *values, int *storage)
{
    mca_base_var_enum_t *e = NULL;
    char enum_name[64];
    snprintf(enum_name, sizeof enum_name, "coll_gpu_%s", name);
    mca_base_var_enum_create(enum_name, values, &e);
    (void)mca_base_component_var_register(&mca_coll_gpu_component.super.collm_version, name, help,
                                          MCA_BASE_VAR_TYPE_INT, e, 0, 0, OPAL_INFO_LVL_5,
                                          MCA_BASE_VAR_SCOPE_READONLY, storage);
    OBJ_RELEASE(e);
}

static int gpu_register(void)
{
    mca_coll_gpu_component_t *c = &mca_coll_gpu_component;
    reg_int("priority", "Priority of coll/gpu; above tuned (30), self (75) and cuda (78) by default",
            OPAL_INFO_LVL_6, &c->priority);
    reg_int("verbose", "Verbosity: 0 silent, 10 selection and why coll/gpu stepped aside, 20 path per call, "
                       "50 everything", OPAL_INFO_LVL_9, &c->verbose);
    (void)mca_base_component_var_register(&c->super.collm_version, "enable",
                                          "Enable coll/gpu (false: it never selects itself)",
                                          MCA_BASE_VAR_TYPE_BOOL, NULL, 0, 0, OPAL_INFO_LVL_2,
                                          MCA_BASE_VAR_SCOPE_READONLY, &c->enable);
    (void)mca_base_component_var_register(&c->super.collm_version, "select_without_gpu",
                                          "Stay selected on machines with no GPU driver, passing every call "
                                          "through (for testing selection and host behaviour without a GPU)",
                                          MCA_BASE_VAR_TYPE_BOOL, NULL, 0, 0, OPAL_INFO_LVL_9,
                                          MCA_BASE_VAR_SCOPE_READONLY, &c->select_without_gpu);
    reg_enum("path", "How device-buffer collectives run: auto (peer-to-peer GPU kernels where every rank of "
                     "the communicator shares a node and has device buffers, else staged), staged (always copy "
                     "through host memory and run the displaced host algorithm), ipc (same as auto). A "
                     "communicator's info key coll_gpu_path=staged forces staged on that communicator.",
             path_values, &param_path);
    reg_enum("allreduce_algorithm", "Allreduce over peer memory: auto (one-shot up to oneshot_max_bytes, "
                                    "zero-copy two-shot above where all buffers can be mapped, else two-shot "
                                    "through scratch), oneshot, twoshot (through scratch), direct (zero-copy, "
                                    "loads or stores as direct_style says), writes (zero-copy by stores only, "
                                    "the reduce-scatter through the owners' scratch)",
             allreduce_values, &param_allreduce_algorithm);
    reg_size("oneshot_max_bytes", "Largest allreduce (bytes) that the auto choice runs one-shot",
             OPAL_INFO_LVL_5, &param_oneshot_max_bytes);
    reg_size("ll_max_bytes", "Allreduce, reduce, reduce_scatter_block, allgather, alltoall (not in place) and bcast "
                             "of up to this many bytes per rank (a block for reduce_scatter_block, allgather and "
                             "alltoall) run the flag-in-data "
                             "kernels: each rank stores its data with a flag per 8 bytes straight into its peers' "
                             "scratch, no barrier (the lowest latency; twice the bytes over the links). 0: never. "
                             "At most 512 KiB; the scratch of every communicator grows by 32 x this. A forced "
                             "allreduce_algorithm other than auto takes precedence for allreduce",
             OPAL_INFO_LVL_5, &param_ll_max_bytes);
    reg_size("direct_min_bytes", "Smallest message (bytes, all ranks' blocks for allgather/reduce_scatter_block) "
                                 "that runs zero-copy: peers read each other's buffers through CUDA IPC instead "
                                 "of copying through scratch. Allreduce also needs to exceed oneshot_max_bytes",
             OPAL_INFO_LVL_5, &param_direct_min_bytes);
    reg_enum("direct_style", "How zero-copy allreduce, allgather and bcast move data between the mapped buffers: "
                             "auto (the one measured faster for the collective and rank count), pull (every "
                             "rank loads what it needs from its peers' buffers), push (the rank that holds or "
                             "reduces a piece stores it into every peer's buffer)",
             direct_style_values, &param_direct_style);
    reg_int("ipc_cache_entries", "Peer buffers each rank keeps mapped per communicator (least recently used ones "
                                 "are unmapped first); bounds the memory held for freed peer buffers",
            OPAL_INFO_LVL_6, &param_ipc_cache_entries);
    reg_enum("shared_gpu", "Ranks whose buffers are on the same GPU: auto (run the peer-to-peer kernels together "
                           "where MPS runs, whose clients' kernels share the GPU at once; stage without MPS, where "
                           "the GPU takes turns between processes and each wait on a peer costs a time slice), "
                           "on (peer kernels with or without MPS: correct, slow without it; how tests run the "
                           "peer path on one GPU), off (always staged). 1/0 and true/false mean on/off",
             shared_gpu_values, &param_shared_gpu);
    reg_size("scratch_bytes", "Bytes of peer-visible GPU scratch per rank and communicator (larger messages are "
                              "pipelined through it)", OPAL_INFO_LVL_5, &param_scratch_bytes);
    reg_size("staging_cache_bytes", "Pinned host memory kept cached for the staged path", OPAL_INFO_LVL_6,
             &param_staging_cache_bytes);
    reg_size("staging_pinned_max_bytes", "Largest host copy of the staged path that is page-locked (pinned); "
                                         "larger ones, and any whose pinning fails, use pageable memory "
                                         "(slower copies, same results). 0: no limit",
             OPAL_INFO_LVL_7, &c->staging_pinned_max_bytes);
    reg_int("max_peers", "Largest node-local communicator the peer-to-peer path serves", OPAL_INFO_LVL_6,
            &param_max_peers);
    reg_int("max_blocks", "Most thread blocks a peer-to-peer kernel launches", OPAL_INFO_LVL_7, &param_max_blocks);
    reg_size("block_bytes", "Bytes of the message each thread block of a peer-to-peer kernel handles, before "
                            "max_blocks caps the grid (0: each algorithm's own choice)",
             OPAL_INFO_LVL_7, &param_block_bytes);
    reg_int("threads_per_block", "Threads per block of the peer-to-peer kernels (a multiple of 32 from 32 to "
                                 "512, the most the kernels are compiled for; other values are brought into it)", OPAL_INFO_LVL_7,
            &param_threads);
    reg_int("resident_us", "Microseconds a peer-to-peer kernel stays on the GPU after a call of up to "
                           "resident_max_bytes, serving the next such calls (same datatype and op) without a "
                           "launch. It holds resident_blocks SMs meanwhile and a cudaDeviceSynchronize of the "
                           "application waits for it to leave; 0 (default): launch a kernel for every call",
            OPAL_INFO_LVL_5, &param_resident_us);
    reg_size("resident_max_bytes", "Largest call (bytes each rank moves) that resident kernels serve; larger calls "
                                   "launch their own kernel", OPAL_INFO_LVL_6, &param_resident_max_bytes);
    reg_int("resident_blocks", "Thread blocks of resident kernels, and of every call up to resident_max_bytes "
                               "(the same for all sizes, so that one kernel serves them; equal on all ranks)",
            OPAL_INFO_LVL_7, &param_resident_blocks);
    reg_int("timeout_ms", "Longest wait (ms) for another rank before a collective fails with an error",
            OPAL_INFO_LVL_5, &param_timeout_ms);
    reg_enum("inter_path", "Device-buffer collectives on communicators that span nodes: auto (hierarchical where "
                           "every node has the same number of ranks: node-local peer-to-peer kernels plus UCX "
                           "between nodes, one UCX group per local rank index; else staged), hier (like auto, and "
                           "say why at verbose 0 when it cannot be set up), staged (always copy through host "
                           "memory). Allreduce, bcast, allgather, reduce_scatter_block and reduce take it.",
             inter_path_values, &param_inter_path);
    reg_int("virtual_node_size", "Split every host into virtual nodes of this many consecutive ranks (0: off), so "
                                 "that one machine runs the inter-node (hierarchical, UCX) path, e.g. 2 on a "
                                 "4-GPU host gives 2 nodes x 2 GPUs. Every host's rank count must be a multiple.",
            OPAL_INFO_LVL_5, &param_virtual_node_size);
    reg_enum("ucx_device_path", "How the inter-node UCX transport moves device buffers: auto (GPUDirect if UCX "
                                "supports GPU memory, else staged), direct (require GPUDirect; the hierarchical "
                                "path is off if UCX cannot), staged (through pinned host bounce buffers). The "
                                "choice is printed at coll_gpu_verbose >= 10.",
             ucx_device_path_values, &param_ucx_device_path);
    reg_size("ucx_chunk_bytes", "Pipelining unit of the inter-node UCX transport (bytes; multiple of 8, at least "
                                "64; equal on all ranks): wire chunks, reduction segments, bounce buffers",
             OPAL_INFO_LVL_6, &param_ucx_chunk_bytes);
    reg_size("hier_min_bytes", "Smallest message (count x datatype size; a rank's block for allgather and "
                               "reduce_scatter_block) that takes the hierarchical path; smaller device-buffer "
                               "calls are staged, which has the lower latency for them (0: every size)",
             OPAL_INFO_LVL_5, &param_hier_min_bytes);
    reg_int("ucx_pipeline_depth", "Chunks in flight per inter-node UCX message (at least 2)", OPAL_INFO_LVL_6,
            &param_ucx_pipeline_depth);
    return OMPI_SUCCESS;
}

static int gpu_open(void)
{
    mca_coll_gpu_component_t *c = &mca_coll_gpu_component;
    c->output = opal_output_open(NULL);
    opal_output_set_verbosity(c->output, c->verbose);

    gpucoll_config_t *cfg = &c->config;
    cfg->verbose = c->verbose;
    cfg->path = (gpucoll_path_t)param_path;
    cfg->allreduce_algorithm = (gpucoll_allreduce_algo_t)param_allreduce_algorithm;
    cfg->oneshot_max_bytes = param_oneshot_max_bytes;
    cfg->scratch_bytes = param_scratch_bytes;
    cfg->staging_cache_bytes = param_staging_cache_bytes;
    cfg->max_peers = param_max_peers;
    cfg->max_blocks = param_max_blocks;
    cfg->threads_per_block = param_threads;
    cfg->timeout_ms = param_timeout_ms;
    cfg->direct_min_bytes = param_direct_min_bytes;
    cfg->direct_style = (gpucoll_direct_style_t)param_direct_style;
    cfg->ipc_cache_entries = param_ipc_cache_entries;
    cfg->shared_gpu = param_shared_gpu;
    cfg->block_bytes = param_block_bytes;
    cfg->hier_min_bytes = param_hier_min_bytes;
    cfg->resident_us = param_resident_us;
    cfg->resident_max_bytes = param_resident_max_bytes;
    cfg->resident_blocks = param_resident_blocks;
    cfg->ll_max_bytes = param_ll_max_bytes;
    cfg->virtual_node_size = param_virtual_node_size > 0 ? param_virtual_node_size : 0;
    cfg->inter_path = param_inter_path;
    cfg->ucx_device_path = param_ucx_device_path;
    cfg->ucx_chunk_bytes = param_ucx_chunk_bytes;
    cfg->ucx_pipeline_depth = param_ucx_pipeline_depth;
    gpucoll_core_configure(cfg);
    *cfg = *gpucoll_core_config();
    return OMPI_SUCCESS;
}

static int gpu_close(void)
{
    coll_gpu_request_fini();
    gpucoll_core_release_caches();
    if (mca_coll_gpu_component.output >= 0) opal_output_close(mca_coll_gpu_component.output);
    mca_coll_gpu_component.output = -1;
    return OMPI_SUCCESS;
}

int coll_gpu_error(gpucoll_status_t status, const char *what)
{
    opal_output(0, "coll:gpu: %s failed: %s (%s)", what, gpucoll_last_error(), gpucoll_status_name(status));
    switch (status) {
    case GPUCOLL_SUCCESS: return OMPI_SUCCESS;
    case GPUCOLL_ERR_NO_MEMORY: return OMPI_ERR_OUT_OF_RESOURCE;
    case GPUCOLL_ERR_INVALID: return OMPI_ERR_BAD_PARAM;
    case GPUCOLL_ERR_UNSUPPORTED: return OMPI_ERR_NOT_SUPPORTED;
    case GPUCOLL_ERR_TRUNCATE: return MPI_ERR_TRUNCATE;
    case GPUCOLL_ERR_MISMATCH: return MPI_ERR_ARG;
    default: return OMPI_ERROR;
    }
}
