/* The component: its parameters. What differs between Open MPI versions is
 * in coll_gpu_compat.h. */
#include "coll_gpu.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "opal/mca/base/mca_base_var.h"

static int gpu_register(void);
static int gpu_open(void);
static int gpu_close(void);

mca_coll_gpu_component_t mca_coll_gpu_component = {
    .super = {
        .collm_version = {COLL_GPU_COLL_BASE_VERSION,
                          .mca_component_name = "gpu",
                          MCA_BASE_MAKE_VERSION(component, 0, 1, 0),
                          .mca_open_component = gpu_open,
                          .mca_close_component = gpu_close,
                          .mca_register_component_params = gpu_register},
        .collm_data = {MCA_BASE_METADATA_PARAM_CHECKPOINT},
        .collm_init_query = mca_coll_gpu_init_query,
        .collm_comm_query = mca_coll_gpu_comm_query,
    },
    /* priority, verbose, enable, select_without_gpu, stage_host_buffers and staging_pinned_max_bytes: gpu_params[] */
    .output = -1,
};

static const mca_base_var_enum_value_t path_values[] = {
    {GPUCOLL_PATH_AUTO, "auto"}, {GPUCOLL_PATH_STAGED, "staged"}, {GPUCOLL_PATH_IPC, "ipc"}, {0, NULL}};
/* The values of coll_gpu_allreduce_algorithm before its values were the
 * algorithm table's names: each stays a name of the row it meant. */
static const struct {
    gpucoll_coll_kind_t kind;
    const char *alias, *row;
} algorithm_aliases[] = {
    {GPUCOLL_COLL_ALLREDUCE, "oneshot", "allreduce_oneshot"},
    {GPUCOLL_COLL_ALLREDUCE, "twoshot", "allreduce_twoshot"},
    {GPUCOLL_COLL_ALLREDUCE, "direct", "allreduce_direct"},
    {GPUCOLL_COLL_ALLREDUCE, "writes", "allreduce_writes"},
};
/* Room for a kind's rows (the table has at most 6 per kind) and their aliases. */
#define ALGORITHM_ROWS_MAX 16
#define ALGORITHM_VALUES_MAX (1 + ALGORITHM_ROWS_MAX + sizeof algorithm_aliases / sizeof algorithm_aliases[0] + 1)
static const mca_base_var_enum_value_t direct_style_values[] = {
    {GPUCOLL_DIRECT_AUTO, "auto"}, {GPUCOLL_DIRECT_PULL, "pull"}, {GPUCOLL_DIRECT_PUSH, "push"}, {0, NULL}};
static const mca_base_var_enum_value_t inter_path_values[] = {
    {GPUCOLL_INTER_AUTO, "auto"}, {GPUCOLL_INTER_HIER, "hier"}, {GPUCOLL_INTER_STAGED, "staged"}, {0, NULL}};
/* "true"/"false" as well: the parameter was a bool before MPS was detected. */
static const mca_base_var_enum_value_t shared_gpu_values[] = {
    {GPUCOLL_SHARED_GPU_AUTO, "auto"}, {GPUCOLL_SHARED_GPU_ON, "on"}, {GPUCOLL_SHARED_GPU_OFF, "off"},
    {GPUCOLL_SHARED_GPU_ON, "true"}, {GPUCOLL_SHARED_GPU_OFF, "false"}, {0, NULL}};
static const mca_base_var_enum_value_t order_values[] = {
    {GPUCOLL_ORDER_AFTER_DEFAULT_STREAM, "default_stream"}, {GPUCOLL_ORDER_NONE, "none"}, {0, NULL}};
static const mca_base_var_enum_value_t kernel_launch_values[] = {
    {GPUCOLL_LAUNCH_GRAPH, "graph"}, {GPUCOLL_LAUNCH_PLAIN, "plain"}, {0, NULL}};
static const mca_base_var_enum_value_t stream_priority_values[] = {
    {GPUCOLL_STREAM_PRIORITY_HIGH, "high"}, {GPUCOLL_STREAM_PRIORITY_NORMAL, "normal"}, {0, NULL}};
static const mca_base_var_enum_value_t ucx_device_path_values[] = {
    {0, "auto"}, {1, "direct"}, {2, "staged"}, {0, NULL}};

/* Every MCA parameter, one row each: name, type, info level, help text, where
 * the value lives and its default. gpu_register() writes each default into its
 * destination and registers the destination itself as the MCA storage (Open MPI
 * takes the storage's initial value as the default and writes the parsed value
 * there), so gpu_open() has nothing to copy. Rows are registered in this order
 * (the order ompi_info lists them in). */
typedef enum gpu_param_type {
    GPU_PARAM_INT,  /* int */
    GPU_PARAM_SIZE, /* size_t */
    GPU_PARAM_BOOL, /* bool */
    GPU_PARAM_STRING, /* char * (Open MPI keeps its own copy of the string) */
    GPU_PARAM_ENUM, /* int, named by .values */
    GPU_PARAM_ALGORITHM /* int, named by the algorithm table's rows for .coll_kind (algorithm_values) */
} gpu_param_type_t;

typedef struct gpu_param {
    const char *name; /* without the coll_gpu_ prefix */
    gpu_param_type_t type;
    const mca_base_var_enum_value_t *values; /* GPU_PARAM_ENUM only */
    gpucoll_coll_kind_t coll_kind;           /* GPU_PARAM_ALGORITHM only */
    mca_base_var_info_lvl_t level;
    const char *help;
    const char *deprecated_synonym; /* an earlier name that still sets it, or NULL */
    size_t offset; /* of the destination within mca_coll_gpu_component_t */
    union {
        int i;    /* GPU_PARAM_INT, GPU_PARAM_ENUM */
        size_t z; /* GPU_PARAM_SIZE */
        bool b;   /* GPU_PARAM_BOOL */
        const char *s; /* GPU_PARAM_STRING */
    } def;
} gpu_param_t;

/* The destination's offset within the component, refusing to compile when the
 * field's type is not the one the row's MCA type writes. */
#define GPU_DEST(member, ctype)                                                                      \
    (offsetof(mca_coll_gpu_component_t, member) +                                                    \
     0 * sizeof(char[__builtin_types_compatible_p(__typeof__(((mca_coll_gpu_component_t *)0)->member), \
                                                  ctype) ? 1 : -1]))
/* A field of the component struct itself, or of the config struct the core reads. */
#define COMP_INT(f) .type = GPU_PARAM_INT, .offset = GPU_DEST(f, int)
#define COMP_BOOL(f) .type = GPU_PARAM_BOOL, .offset = GPU_DEST(f, bool)
#define COMP_SIZE(f) .type = GPU_PARAM_SIZE, .offset = GPU_DEST(f, size_t)
#define CFG_INT(f) .type = GPU_PARAM_INT, .offset = GPU_DEST(config.f, int)
#define CFG_SIZE(f) .type = GPU_PARAM_SIZE, .offset = GPU_DEST(config.f, size_t)
#define CFG_STRING(f) .type = GPU_PARAM_STRING, .offset = GPU_DEST(config.f, char *)
#define CFG_ENUM(f, v) .type = GPU_PARAM_ENUM, .values = (v), .offset = GPU_DEST(config.f, int)
#define CFG_ALGORITHM(k) .type = GPU_PARAM_ALGORITHM, .coll_kind = (k), .offset = GPU_DEST(config.algorithm[k], int)
/* What every coll_gpu_<kind>_algorithm's help says after its kind's own part. */
#define ALGORITHM_HELP_TAIL                                                                                  \
    " A forced algorithm serves every call it can (a zero-copy one makes calls of every size zero-copy "   \
    "where all buffers can be mapped); a call it cannot serve (zero-copy without mapped buffers, "         \
    "flag-in-data (_ll) above ll_max_bytes, zero-copy or one-way for a nonblocking or persistent call) "   \
    "takes the automatic choice, which coll_gpu_verbose >= 10 says once per communicator"

static const gpu_param_t gpu_params[] = {
    {.name = "priority", COMP_INT(priority), .level = OPAL_INFO_LVL_6, .def.i = 95,
     .help = "Priority of coll/gpu; by default above hcoll (90, HPC-X), cuda (78), self (75), han (35) "
             "and tuned (30), so that device buffers reach it wherever it is installed; host-buffer "
             "calls go on to the module it displaced (e.g. hcoll). coll/ucc (10 by default) stays "
             "below unless raised above this (docs/ompi_versions.md)"},
    {.name = "verbose", COMP_INT(verbose), .level = OPAL_INFO_LVL_9, .def.i = 0,
     .help = "Verbosity: 0 silent, 10 selection and why coll/gpu stepped aside, 20 path per call, "
             "30 a timed line per blocking peer-path call (agreement, mapping, launch, kernel), 50 everything"},
    {.name = "enable", COMP_BOOL(enable), .level = OPAL_INFO_LVL_2, .def.b = true,
     .help = "Enable coll/gpu (false: it never selects itself)"},
    {.name = "select_without_gpu", COMP_BOOL(select_without_gpu), .level = OPAL_INFO_LVL_9, .def.b = false,
     .help = "Stay selected on machines with no GPU driver, passing every call "
             "through (for testing selection and host behaviour without a GPU)"},
    {.name = "stage_host_buffers", COMP_BOOL(stage_host_buffers), .level = OPAL_INFO_LVL_9, .def.b = false,
     .help = "Take host buffers for device buffers: every call with data goes through the staged path "
             "(copies to and from host memory around the displaced collective), never the GPU kernels. "
             "For testing the staged path's extents on machines without a GPU; slower, never faster"},
    {.name = "path", CFG_ENUM(path, path_values), .level = OPAL_INFO_LVL_5, .def.i = GPUCOLL_PATH_AUTO,
     .help = "How device-buffer collectives run: auto (peer-to-peer GPU kernels where every rank of "
             "the communicator shares a node and has device buffers, else staged), staged (always copy "
             "through host memory and run the displaced host algorithm), ipc (same as auto). A "
             "communicator's info key coll_gpu_path=staged forces staged on that communicator."},
    /* Forcing an algorithm per collective kind: the values are the rows of
     * the core's algorithm table (gpucoll_algorithm_names). */
    {.name = "allreduce_algorithm", CFG_ALGORITHM(GPUCOLL_COLL_ALLREDUCE), .level = OPAL_INFO_LVL_5, .def.i = 0,
     .help = "Allreduce over peer memory: auto (allreduce_ll up to ll_max_bytes, allreduce_oneshot up to "
             "oneshot_max_bytes, zero-copy from direct_min_bytes where every buffer can be mapped: "
             "allreduce_push, allreduce_writes from 3 ranks and 16 MiB, allreduce_direct (loads) where "
             "direct_style or ranks sharing one GPU say pull; else allreduce_twoshot through scratch), or "
             "one algorithm by name. oneshot, twoshot, direct and writes are the former names of "
             "allreduce_oneshot, allreduce_twoshot, allreduce_direct and allreduce_writes." ALGORITHM_HELP_TAIL},
    {.name = "reduce_algorithm", CFG_ALGORITHM(GPUCOLL_COLL_REDUCE), .level = OPAL_INFO_LVL_5, .def.i = 0,
     .help = "Reduce over peer memory: auto (reduce_push, zero-copy by stores into the root's buffer, from "
             "direct_min_bytes with 3 ranks or more where every buffer can be mapped; else reduce_ll up to "
             "ll_max_bytes, reduce through scratch above, reduce_twoshot (through scratch, the non-roots "
             "reducing slices for the root) from 4 MiB with 4 ranks or more and from 16 MiB with 3, "
             "reduce_stores (through scratch, the other rank storing its data into the root's) from 8 MiB "
             "with 2, where each rank has a GPU of its own), or one algorithm by name." ALGORITHM_HELP_TAIL},
    {.name = "bcast_algorithm", CFG_ALGORITHM(GPUCOLL_COLL_BCAST), .level = OPAL_INFO_LVL_5, .def.i = 0,
     .help = "Bcast over peer memory: auto (zero-copy from direct_min_bytes where every buffer can be "
             "mapped: bcast_spread (the root copies a slice too) where all ranks share one GPU, "
             "bcast_push, or bcast_direct (loads) with direct_style=pull; else bcast_ll up to "
             "ll_max_bytes, bcast through scratch above, bcast_forward (through scratch, each byte "
             "leaving the root once, the receivers passing it on) from 4 MiB with 3 ranks or more and "
             "64 MiB with 2 where each rank has a GPU of its own), or one algorithm by name."
             ALGORITHM_HELP_TAIL},
    {.name = "allgather_algorithm", CFG_ALGORITHM(GPUCOLL_COLL_ALLGATHER), .level = OPAL_INFO_LVL_5, .def.i = 0,
     .help = "Allgather over peer memory: auto (zero-copy from direct_min_bytes (all blocks; 4 x that with 2 "
             "ranks on GPUs of their own) where every "
             "buffer can be mapped: allgather_push, or allgather_direct (loads) with direct_style=pull; "
             "else allgather_ll up to ll_max_bytes per block, allgather through scratch above), or one "
             "algorithm by name." ALGORITHM_HELP_TAIL},
    {.name = "reduce_scatter_block_algorithm", CFG_ALGORITHM(GPUCOLL_COLL_REDUCE_SCATTER_BLOCK),
     .level = OPAL_INFO_LVL_5, .def.i = 0,
     .help = "Reduce_scatter_block over peer memory: auto (reduce_scatter_direct, zero-copy by loads, from "
             "direct_min_bytes (all blocks; 4 x that with 2 ranks on GPUs of their own) where every buffer "
             "can be mapped; else reduce_scatter_block_ll "
             "up to ll_max_bytes per block, reduce_scatter_block through scratch above), or one algorithm "
             "by name." ALGORITHM_HELP_TAIL},
    {.name = "alltoall_algorithm", CFG_ALGORITHM(GPUCOLL_COLL_ALLTOALL), .level = OPAL_INFO_LVL_5, .def.i = 0,
     .help = "Alltoall over peer memory: auto (alltoall_push, zero-copy by stores, from direct_min_bytes (all "
             "blocks; 4 x that with 2 ranks on GPUs of their own) where every buffer can be mapped; else alltoall_ll up to ll_max_bytes per block and not "
             "in place, alltoall through scratch), or one algorithm by name." ALGORITHM_HELP_TAIL},
    {.name = "oneshot_max_bytes", CFG_SIZE(oneshot_max_bytes), .level = OPAL_INFO_LVL_5,
     .def.z = GPUCOLL_DEFAULT_ONESHOT_MAX_BYTES,
     .help = "Largest allreduce (bytes) that the auto choice runs one-shot"},
    {.name = "ll_max_bytes", CFG_SIZE(ll_max_bytes), .level = OPAL_INFO_LVL_5, .def.z = GPUCOLL_DEFAULT_LL_MAX_BYTES,
     .help = "Allreduce, reduce, reduce_scatter_block, allgather, alltoall (not in place) and bcast "
             "of up to this many bytes per rank (a block for reduce_scatter_block, allgather and "
             "alltoall) run the flag-in-data "
             "kernels: each rank stores its data with a flag per 8 bytes straight into its peers' "
             "scratch, no barrier (the lowest latency; twice the bytes over the links). 0: never. "
             "At most 512 KiB; the scratch of every communicator grows by 32 x this. A forced "
             "coll_gpu_<kind>_algorithm takes precedence for its kind"},
    {.name = "direct_min_bytes", CFG_SIZE(direct_min_bytes), .level = OPAL_INFO_LVL_5,
     .def.z = GPUCOLL_DEFAULT_DIRECT_MIN_BYTES,
     .help = "Smallest message (bytes, all ranks' blocks for allgather/reduce_scatter_block) "
             "that runs zero-copy: peers read each other's buffers through CUDA IPC instead "
             "of copying through scratch. Allreduce also needs to exceed oneshot_max_bytes, reduce 64 MiB and "
             "3 ranks; bcast "
             "between two ranks on GPUs of their own stays on scratch below 256 MiB (faster there). A forced "
             "zero-copy coll_gpu_<kind>_algorithm makes every size a candidate, any other none"},
    {.name = "window_move_min_bytes", CFG_SIZE(window_move_min_bytes), .level = OPAL_INFO_LVL_5,
     .def.z = GPUCOLL_DEFAULT_WINDOW_MOVE_MIN_BYTES,
     .help = "Nonblocking, persistent and stream-ordered bcast and allgather (all ranks' blocks) whose "
             "buffers lie in registered windows (coll_gpu_register) run zero-copy from this many bytes "
             "on (bcast between 2 ranks from 8 times as many); smaller ones keep their scratch plan, "
             "faster there than the windows' extra flag round. Allreduce in windows switches from "
             "direct_min_bytes"},
    {.name = "auto_windows", CFG_INT(auto_windows), .level = OPAL_INFO_LVL_5, .def.i = 1,
     .help = "1 (default): the buffer of a nonblocking, persistent or stream-ordered (also captured) call "
             "that could run zero-copy (allreduce from direct_min_bytes; bcast and allgather from "
             "window_move_min_bytes) is exported on its first such call, without waiting for the other "
             "ranks, and each rank maps its peers' buffers at its own next calls; from then on calls on "
             "those buffers run zero-copy where every rank has mapped every other's (the kernels vote, "
             "no host wait). Each rank keeps up to 32 such allocations per communicator; a freed one is "
             "unmapped by the peers after its owner's next such call. 0: only buffers registered "
             "with coll_gpu_register run zero-copy in these modes"},
    {.name = "direct_style", CFG_ENUM(direct_style, direct_style_values), .level = OPAL_INFO_LVL_5,
     .def.i = GPUCOLL_DIRECT_AUTO,
     .help = "How zero-copy allreduce, allgather and bcast move data between the mapped buffers, where "
             "the automatic choice picks (coll_gpu_<kind>_algorithm forces one algorithm of one kind "
             "instead): auto (the one measured faster for the collective and rank count), pull (every "
             "rank loads what it needs from its peers' buffers), push (the rank that holds or "
             "reduces a piece stores it into every peer's buffer)"},
    {.name = "ipc_cache_entries", CFG_INT(ipc_cache_entries), .level = OPAL_INFO_LVL_6,
     .def.i = GPUCOLL_DEFAULT_IPC_CACHE_ENTRIES,
     .help = "Peer buffers each process keeps mapped for zero-copy calls, over all its communicators "
             "(least recently used ones are unmapped first, never one a running call uses)"},
    {.name = "ipc_cache_bytes", CFG_SIZE(ipc_cache_bytes), .level = OPAL_INFO_LVL_6,
     .def.z = GPUCOLL_DEFAULT_IPC_CACHE_BYTES,
     .help = "Bytes of peer allocations each process keeps mapped for zero-copy calls (least recently "
             "used ones are unmapped first; a running call's mappings stay, however large). The "
             "driver keeps a freed buffer's memory allocated while a peer maps it: its owner tells "
             "the peers when it next exports a new buffer, and they unmap it after their next "
             "blocking collective on a communicator with it; this bounds what escapes that, per "
             "mapping process. Default 8 GiB: zero-copy calls of GiB messages stay mapped "
             "(mapping again costs every rank a cudaIpcOpenMemHandle and an unmap that waits for "
             "the GPU), at worst 8 GiB of freed memory per peer on a GPU"},
    {.name = "shared_gpu", CFG_ENUM(shared_gpu, shared_gpu_values), .level = OPAL_INFO_LVL_5,
     .def.i = GPUCOLL_SHARED_GPU_AUTO,
     .help = "Ranks whose buffers are on the same GPU: auto (run the peer-to-peer kernels together "
             "where MPS runs, whose clients' kernels share the GPU at once; stage without MPS, where "
             "the GPU takes turns between processes and each wait on a peer costs a time slice), "
             "on (peer kernels with or without MPS: correct, slow without it; how tests run the "
             "peer path on one GPU), off (always staged). 1/0 and true/false mean on/off"},
    {.name = "scratch_bytes", CFG_SIZE(scratch_bytes), .level = OPAL_INFO_LVL_5,
     .def.z = GPUCOLL_DEFAULT_SCRATCH_BYTES,
     .help = "Bytes of peer-visible GPU scratch per rank and communicator (larger messages are "
             "pipelined through it)"},
    {.name = "staging_cache_bytes", CFG_SIZE(staging_cache_bytes), .level = OPAL_INFO_LVL_6,
     .def.z = GPUCOLL_DEFAULT_STAGING_CACHE_BYTES,
     .help = "Pinned host memory kept cached for the staged path"},
    {.name = "staging_pinned_max_bytes", COMP_SIZE(staging_pinned_max_bytes), .level = OPAL_INFO_LVL_7,
     .def.z = 0,
     .help = "Largest host copy of the staged path that is page-locked (pinned); "
             "larger ones, and any whose pinning fails, use pageable memory "
             "(slower copies, same results). 0: no limit"},
    {.name = "max_peers", CFG_INT(max_peers), .level = OPAL_INFO_LVL_6, .def.i = GPUCOLL_DEFAULT_MAX_PEERS,
     .help = "Largest node-local communicator the peer-to-peer path serves"},
    {.name = "max_blocks", CFG_INT(max_blocks), .level = OPAL_INFO_LVL_7, .def.i = GPUCOLL_DEFAULT_MAX_BLOCKS,
     .help = "Most thread blocks a peer-to-peer kernel launches"},
    {.name = "busy_max_blocks", CFG_INT(busy_max_blocks), .level = OPAL_INFO_LVL_7, .def.i = 0,
     .help = "Most thread blocks of a blocking peer-to-peer kernel when, on some rank, the legacy "
             "default stream still has work queued at the call (a framework's computation, e.g. "
             "PyTorch's backward pass, running beside the collective): the kernel then takes fewer "
             "SMs from it, and calls made while the GPU is otherwise idle keep max_blocks. The ranks "
             "agree on it at the call, so grids stay alike. 0 (default) or >= max_blocks: max_blocks "
             "always. Horovod on 4 x H200: see docs/performance.md"},
    {.name = "thread_calls", CFG_INT(thread_calls), .level = OPAL_INFO_LVL_5,
     .def.i = GPUCOLL_DEFAULT_THREAD_CALLS,
     .help = "Under MPI_THREAD_MULTIPLE: the most collectives on device buffers (and nonblocking ones "
             "on host buffers, which run on the GPU once a communicator's GPU path is set up) that "
             "threads of one process make at the same time. Grids are cut so that, whatever all but "
             "one of that many kernels hold (a kernel that waits for its peers holds its SMs), the "
             "last finds an SM, which is all it needs to progress. 8 (default): about 18 blocks on an "
             "H100/H200, slow for large messages. A program that makes its collectives from one "
             "thread at a time (Horovod's background thread) sets 1 and gets the grids of "
             "MPI_THREAD_SERIALIZED; more threads than this at once can hang. Equal on every rank"},
    {.name = "kernels_at_once", CFG_INT(kernels_at_once), .level = OPAL_INFO_LVL_5,
     .def.i = GPUCOLL_DEFAULT_KERNELS_AT_ONCE,
     .help = "The most peer-to-peer kernels of one process that may wait for their peers at the same "
             "time: nonblocking, persistent or enqueued collectives of different communicators in "
             "flight together, which MPI lets ranks start in different orders (each rank's first "
             "kernel then waits for a peer's second, which must find an SM). Grids are cut so that "
             "all but one of that many kernels leave an SM (with thread_calls under "
             "MPI_THREAD_MULTIPLE, the larger count). 2 (default): whole-GPU grids on an H100/H200 "
             "(128 of 132 SMs); 3: 65 blocks. More at once than this can hang. Equal on every rank"},
    {.name = "block_bytes", CFG_SIZE(block_bytes), .level = OPAL_INFO_LVL_7, .def.z = 0,
     .help = "Bytes of the message each thread block of a peer-to-peer kernel handles, before "
             "max_blocks caps the grid (0: each algorithm's own choice: 2 KiB for the small-message "
             "(LL) kernels, 4 KiB through scratch, 64 KiB zero-copy)"},
    {.name = "threads_per_block", CFG_INT(threads_per_block), .level = OPAL_INFO_LVL_7,
     .def.i = GPUCOLL_DEFAULT_THREADS,
     .help = "Threads per block of the peer-to-peer kernels (a multiple of 32 from 32 to "
             "512, the most the kernels are compiled for; other values are brought into it). "
             "Small-message (LL) kernels take at most this many: a thread per 8 bytes, at least 64, "
             "except those a resident kernel serves; reduce_stores takes at most 128, which ran faster "
             "on 2 x H200 (docs/performance.md)"},
    {.name = "order", CFG_ENUM(order, order_values), .level = OPAL_INFO_LVL_5,
     .def.i = GPUCOLL_ORDER_AFTER_DEFAULT_STREAM, .deprecated_synonym = "queued_order",
     .help = "What the kernels of blocking, nonblocking and persistent collectives on device buffers "
             "start after on the GPU. default_stream (default): the work the caller queued on the "
             "legacy default stream before the call (a nonblocking call pays an event record and a "
             "stream wait: 0.9 us on an H100 under MPS). none: nothing; the caller makes sure its "
             "buffers are ready before the call (synchronises the streams that wrote them, or waits "
             "for an event recorded after the last write), as NCCL's users and Horovod do, and the "
             "collective then runs beside compute queued on the default stream instead of after it. "
             "Enqueued calls follow their stream either way. queued_order is its former name"},
    {.name = "kernel_launch", CFG_ENUM(kernel_launch, kernel_launch_values), .level = OPAL_INFO_LVL_6,
     .def.i = GPUCOLL_LAUNCH_GRAPH,
     .help = "How the peer-to-peer kernels of blocking, nonblocking and persistent calls are launched. "
             "graph (default): through a graph of one kernel node per stream, the node set for each "
             "call (cudaGraphExecKernelNodeSetParams, cudaGraphLaunch): the kernel starts about 1 us "
             "sooner than after cudaLaunchKernel on an H100. plain: cudaLaunchKernel"},
    {.name = "stream_priority", CFG_ENUM(stream_priority, stream_priority_values), .level = OPAL_INFO_LVL_5,
     .def.i = GPUCOLL_STREAM_PRIORITY_NORMAL,
     .help = "Priority of the streams coll/gpu runs its own peer-to-peer kernels on (blocking, "
             "nonblocking and persistent calls; enqueued calls run on the caller's stream). normal "
             "(default): the default priority, alike with the application's streams. high: the "
             "device's greatest, so that when the application's kernels fill the GPU, SMs they free "
             "go to the collective's blocks first, as Horovod does for NCCL's (its benchmark on 4 x "
             "H200 ran no faster with it)"},
    {.name = "resident_us", CFG_INT(resident_us), .level = OPAL_INFO_LVL_5, .def.i = GPUCOLL_DEFAULT_RESIDENT_US,
     .help = "Microseconds a peer-to-peer kernel stays on the GPU after a call of up to "
             "resident_max_bytes, serving the next such calls (same datatype and op) without a "
             "launch. It holds one SM (LL calls up to 8 KiB) or resident_blocks SMs meanwhile, and "
             "a cudaDeviceSynchronize of the application waits for it to leave; 0 (default): launch "
             "a kernel for every call (docs/small_calls.md)"},
    {.name = "resident_max_bytes", CFG_SIZE(resident_max_bytes), .level = OPAL_INFO_LVL_6,
     .def.z = GPUCOLL_DEFAULT_RESIDENT_MAX_BYTES,
     .help = "Largest call (bytes each rank moves) that resident kernels serve; larger calls "
             "launch their own kernel"},
    {.name = "resident_blocks", CFG_INT(resident_blocks), .level = OPAL_INFO_LVL_7,
     .def.i = GPUCOLL_DEFAULT_RESIDENT_BLOCKS,
     .help = "Thread blocks of resident kernels, and of every call up to resident_max_bytes "
             "(the same for all sizes, so that one kernel serves them; equal on all ranks), but for "
             "LL calls of up to 8 KiB, which take one block"},
    {.name = "resident_early", CFG_INT(resident_early), .level = OPAL_INFO_LVL_6, .def.i = 1,
     .help = "With resident_us set: 1 (default) posts a blocking LL call (up to ll_max_bytes) to "
             "the running resident kernel before the ranks agree on it, so that the agreement "
             "overlaps the call's trip to the GPU; where the agreement fails (a rank with host "
             "buffers, arguments that differ) the call is taken back and ends as it would have. "
             "0: posted after the agreement"},
    {.name = "timeout_ms", CFG_INT(timeout_ms), .level = OPAL_INFO_LVL_5, .def.i = GPUCOLL_DEFAULT_TIMEOUT_MS,
     .help = "Debugging only: longest wait (ms) for another rank before a collective fails with an error. 0 "
             "(default): no bound, as MPI requires (a rank may arrive any time later); a wait still ends, with an "
             "error, when a peer's process is gone"},
    /* Across nodes (coll_gpu_hier.c, docs/multinode.md). */
    {.name = "inter_path", CFG_ENUM(inter_path, inter_path_values), .level = OPAL_INFO_LVL_5,
     .def.i = GPUCOLL_INTER_AUTO,
     .help = "Device-buffer collectives on communicators that span nodes: auto (hierarchical where "
             "every node has the same number of ranks: node-local peer-to-peer kernels plus UCX "
             "between nodes, one UCX group per local rank index; else staged), hier (like auto, and "
             "say why at verbose 0 when it cannot be set up), staged (always copy through host "
             "memory). Allreduce, bcast, allgather, reduce_scatter_block and reduce take it."},
    {.name = "virtual_node_size", CFG_INT(virtual_node_size), .level = OPAL_INFO_LVL_5, .def.i = 0,
     .help = "Split every host into virtual nodes of this many consecutive ranks (0: off), so "
             "that one machine runs the inter-node (hierarchical, UCX) path, e.g. 2 on a "
             "4-GPU host gives 2 nodes x 2 GPUs. Every host's rank count must be a multiple."},
    {.name = "ucx_device_path", CFG_ENUM(ucx_device_path, ucx_device_path_values), .level = OPAL_INFO_LVL_5,
     .def.i = 0, /* gpucoll_ucx_device_path_t: 0 auto, 1 direct, 2 staged */
     .help = "How the inter-node UCX transport moves device buffers: auto (GPUDirect if UCX "
             "supports GPU memory, else staged), direct (require GPUDirect; the hierarchical "
             "path is off if UCX cannot), staged (through pinned host bounce buffers). The "
             "choice is printed at coll_gpu_verbose >= 10."},
    {.name = "ucx_chunk_bytes", CFG_SIZE(ucx_chunk_bytes), .level = OPAL_INFO_LVL_6,
     .def.z = 0,
     .help = "Pipelining unit of the inter-node UCX transport (bytes; multiple of 8, at least "
             "64; equal on all ranks): wire chunks, reduction segments, bounce buffers. 0 "
             "(default): 16 MiB where device buffers go to UCX directly (fewer rendezvous and "
             "kernel launches per message), 1 MiB where they are staged through host memory"},
    {.name = "hier_min_bytes", CFG_SIZE(hier_min_bytes), .level = OPAL_INFO_LVL_5,
     .def.z = GPUCOLL_DEFAULT_HIER_MIN_BYTES,
     .help = "Smallest message (count x datatype size; a rank's block for allgather and "
             "reduce_scatter_block) that takes the hierarchical path; smaller device-buffer "
             "calls are staged, which has the lower latency for them (0: every size)"},
    {.name = "ucx_pipeline_depth", CFG_INT(ucx_pipeline_depth), .level = OPAL_INFO_LVL_6,
     .def.i = 4, /* GPUCOLL_UCX_DEFAULT_PIPELINE_DEPTH (ucx_transport/gpucoll_ucx.h) */
     .help = "Chunks in flight per inter-node UCX message (at least 2)"},
    {.name = "ucx_net_devices", CFG_STRING(ucx_net_devices), .level = OPAL_INFO_LVL_5, .def.s = "auto",
     .help = "Network devices of the inter-node UCX transport: auto (the RDMA NIC nearest the rank's "
             "GPU in the machine's topology (hwloc), with its active ports, e.g. mlx5_2:1; UCX's own "
             "choice where no NIC has RDMA), all (UCX's own choice), or a list as UCX_NET_DEVICES takes "
             "it. A UCX_NET_DEVICES in the environment wins. The devices in use are printed with the "
             "UCX group at coll_gpu_verbose >= 10."},
};

#undef COMP_INT
#undef COMP_BOOL
#undef COMP_SIZE
#undef CFG_INT
#undef CFG_SIZE
#undef CFG_STRING
#undef CFG_ENUM
#undef CFG_ALGORITHM
#undef ALGORITHM_HELP_TAIL
#undef GPU_DEST

/* The values of coll_gpu_<kind>_algorithm: auto (0), then the rows that
 * may serve `kind` in the table's order (row i: i + 1, what config.algorithm[]
 * takes), then the kind's aliases. Kept for the life of the process. */
static const mca_base_var_enum_value_t *algorithm_values(gpucoll_coll_kind_t kind)
{
    static mca_base_var_enum_value_t values[GPUCOLL_FORCEABLE_KINDS][ALGORITHM_VALUES_MAX];
    const char *names[ALGORITHM_ROWS_MAX];
    mca_base_var_enum_value_t *v = values[kind];
    int rows = gpucoll_algorithm_names(kind, names, ALGORITHM_ROWS_MAX);
    if (rows > ALGORITHM_ROWS_MAX) {
        opal_output(0, "coll:gpu: collective %d has %d algorithms, room for %d: the rest cannot be forced",
                    (int)kind, rows, ALGORITHM_ROWS_MAX);
        rows = ALGORITHM_ROWS_MAX;
    }
    size_t n = 0;
    v[n++] = (mca_base_var_enum_value_t){0, "auto"};
    for (int i = 0; i < rows; i++) v[n++] = (mca_base_var_enum_value_t){i + 1, names[i]};
    for (size_t k = 0; k < sizeof algorithm_aliases / sizeof algorithm_aliases[0]; k++) {
        if (algorithm_aliases[k].kind != kind) continue;
        for (int i = 0; i < rows; i++)
            if (strcmp(names[i], algorithm_aliases[k].row) == 0)
                v[n++] = (mca_base_var_enum_value_t){i + 1, algorithm_aliases[k].alias};
    }
    v[n] = (mca_base_var_enum_value_t){0, NULL};
    return v;
}

static int gpu_register(void)
{
    mca_coll_gpu_component_t *c = &mca_coll_gpu_component;
    for (size_t k = 0; k < sizeof gpu_params / sizeof gpu_params[0]; ++k) {
        const gpu_param_t *p = &gpu_params[k];
        void *storage = (char *)c + p->offset;
        mca_base_var_type_t type = MCA_BASE_VAR_TYPE_INT;
        mca_base_var_enum_t *e = NULL;
        switch (p->type) {
        case GPU_PARAM_INT: *(int *)storage = p->def.i; break;
        case GPU_PARAM_SIZE:
            *(size_t *)storage = p->def.z;
            type = MCA_BASE_VAR_TYPE_SIZE_T;
            break;
        case GPU_PARAM_BOOL:
            *(bool *)storage = p->def.b;
            type = MCA_BASE_VAR_TYPE_BOOL;
            break;
        case GPU_PARAM_STRING:
            *(const char **)storage = p->def.s;
            type = MCA_BASE_VAR_TYPE_STRING;
            break;
        case GPU_PARAM_ENUM:
        case GPU_PARAM_ALGORITHM: {
            char enum_name[64];
            *(int *)storage = p->def.i;
            snprintf(enum_name, sizeof enum_name, "coll_gpu_%s", p->name);
            mca_base_var_enum_create(enum_name, p->type == GPU_PARAM_ENUM ? p->values : algorithm_values(p->coll_kind),
                                     &e);
            break;
        }
        }
        int index = mca_base_component_var_register(&c->super.collm_version, p->name, p->help, type, e, 0, 0,
                                                    p->level, MCA_BASE_VAR_SCOPE_READONLY, storage);
        if (index >= 0 && p->deprecated_synonym)
            (void)mca_base_var_register_synonym(index, "ompi", "coll", "gpu", p->deprecated_synonym,
                                                MCA_BASE_VAR_SYN_FLAG_DEPRECATED);
        if (e) OBJ_RELEASE(e);
    }
    /* Not a field of the component: the mapping code (coll_gpu_dtype.c)
     * owns it, and its cpu test links that code without the component. */
    (void)mca_base_component_var_register(
        &c->super.collm_version, "user_op_symbols",
        "User reduction ops whose host function computes what a GPU kernel computes, named by the function's "
        "symbol: comma-separated SYMBOL=TYPE:OP entries (TYPE float16, bfloat16, int8..uint64, float32, float64; "
        "OP sum, prod, min, max, land, lor, lxor, band, bor, bxor). A collective on device buffers whose op was "
        "made by MPI_Op_create from a function of that exact (mangled) name, on a contiguous derived type of "
        "TYPE's size, is reduced on the GPU as OP on TYPE instead of by the user function on host copies. The "
        "default names Horovod's float16_sum/min/max/prod (HOROVOD_GPU_OPERATIONS=MPI with fp16 tensors). "
        "Empty or none: no user op is recognised by name (coll_gpu_op_declare still applies). Must be the "
        "same on every rank",
        MCA_BASE_VAR_TYPE_STRING, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY, &coll_gpu_user_op_symbols);
    return OMPI_SUCCESS;
}

static int gpu_open(void)
{
    mca_coll_gpu_component_t *c = &mca_coll_gpu_component;
    c->output = opal_output_open(NULL);
    opal_output_set_verbosity(c->output, c->verbose);

    /* The parameters are already in place (gpu_params[] registered their fields). */
    gpucoll_config_t *cfg = &c->config;
    cfg->verbose = c->verbose;
    if (cfg->virtual_node_size < 0) cfg->virtual_node_size = 0;
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
