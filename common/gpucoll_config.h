/* The plain configuration struct the core reads.
 *
 * The glue fills it from MCA parameters (coll_gpu_*); tests fill it by hand.
 * The core never reads the environment. */
#ifndef GPUCOLL_CONFIG_H
#define GPUCOLL_CONFIG_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* How device-buffer collectives are carried out. */
typedef enum gpucoll_path {
    GPUCOLL_PATH_AUTO = 0,   /* peer-to-peer kernels where possible, else staged */
    GPUCOLL_PATH_STAGED = 1, /* always copy through host memory */
    GPUCOLL_PATH_IPC = 2     /* like auto; the name documents intent */
} gpucoll_path_t;

/* The collective kinds whose algorithm can be forced (config.algorithm[]): gpucoll_coll_kind_t's
   ALLREDUCE .. ALLTOALL (core/gpucoll_core.h), those with more than one row in the algorithm table. */
#define GPUCOLL_FORCEABLE_KINDS 6

/* How the zero-copy kernels move data between mapped buffers. */
typedef enum gpucoll_direct_style {
    GPUCOLL_DIRECT_AUTO = 0, /* the measured better one per collective and rank count (algo_select.cpp) */
    GPUCOLL_DIRECT_PULL = 1, /* every rank loads what it needs from its peers' buffers */
    GPUCOLL_DIRECT_PUSH = 2  /* the rank that holds or reduces a piece stores it into its peers' buffers */
} gpucoll_direct_style_t;

typedef struct gpucoll_config {
    int verbose;                     /* 0 silent .. 100 everything */
    int path;                        /* gpucoll_path_t (int: the MCA parameter's storage) */
    int algorithm[GPUCOLL_FORCEABLE_KINDS]; /* by gpucoll_coll_kind_t: 0 the automatic choice, i > 0 forces
                                        the i-th algorithm of gpucoll_algorithm_names (core/gpucoll_core.h)
                                        where it can serve a call (coll_gpu_<kind>_algorithm) */
    size_t oneshot_max_bytes;        /* auto: one-shot allreduce up to this size */
    size_t scratch_bytes;            /* per-rank peer-visible scratch (split in two halves) */
    size_t staging_cache_bytes;      /* pinned host memory kept for the staged path */
    int max_peers;                   /* largest node-local group the IPC path serves */
    int max_blocks;                  /* grid size cap of the peer kernels */
    int busy_max_blocks;             /* grid size cap of a blocking peer kernel while some rank's legacy
                                        default stream has work pending (0: max_blocks always) */
    size_t block_bytes;              /* bytes per thread block before max_blocks caps the grid
                                        (0: each algorithm's own, see algo_select.cpp) */
    int threads_per_block;           /* made a multiple of 32 in 32..GPUCOLL_MAX_THREADS_PER_BLOCK */
    int timeout_ms;                  /* debugging only: a wait on another rank fails past it (0: never; a
                                        late rank is not an error, a gone one ends every wait) */
    size_t direct_min_bytes;         /* zero-copy (mapped user buffers) from this size on */
    size_t window_move_min_bytes;    /* bcast and allgather in registered windows without a host agreement
                                        (nonblocking, persistent, stream-ordered) switch to zero-copy from
                                        this size of output on */
    int auto_windows;                /* 1: a buffer of a nonblocking, persistent or stream-ordered call that
                                        could run zero-copy is exported on its first such call and mapped by
                                        the peers on their own time, so that later calls on it run zero-copy
                                        without a host agreement (core/auto_windows.hpp); 0: only registered
                                        windows do. The glue's default is 1 */
    int direct_style;                /* gpucoll_direct_style_t (int: the MCA parameter's storage): loads or
                                        stores for allreduce, allgather and bcast zero-copy, where the
                                        automatic choice picks (not forced by algorithm[]) */
    int ipc_cache_entries;           /* peer buffers each process keeps mapped (LRU) */
    size_t ipc_cache_bytes;          /* bytes of peer allocations each process keeps mapped (LRU), beyond
                                        what running calls use: what freed peer buffers can hold of
                                        their GPU's memory until their owners' notices come */
    int shared_gpu;                  /* gpucoll_shared_gpu_t: whether ranks on the same GPU form a team */
    int resident_us;                 /* a kernel stays on the GPU this long after a call through scratch
                                        of up to resident_max_bytes, serving the next such calls without a
                                        launch (kernels/resident.cuh); 0: a launch for every call */
    size_t resident_max_bytes;       /* largest call (bytes moved per rank) a resident kernel serves */
    int resident_blocks;             /* grid of the calls resident kernels serve, the same for every size
                                        so that one kernel serves them all (but LL calls up to 8 KiB: one
                                        block) */
    int resident_early;              /* 1: a blocking LL call that a resident kernel serves is posted to it
                                        before the ranks' agreement, which then runs while the GPU works,
                                        and is taken back where the agreement fails
                                        (core/team_blocking.cpp); 0: posted after it */
    int order;                       /* gpucoll_order_t: what the peer kernels of blocking, nonblocking and
                                        persistent calls start after on the GPU (core/team_blocking.cpp,
                                        core/team_queued.cpp, core/hier.cpp) */
    int kernel_launch;               /* gpucoll_kernel_launch_t: how the peer kernels of blocking,
                                        nonblocking and persistent calls are launched */
    size_t ll_max_bytes;             /* allreduce, reduce, reduce_scatter_block, allgather, alltoall, bcast of up to this
                                        many bytes per rank (a block for the blocked ones) run the
                                        flag-in-data kernels (kernels/ll_lines.cuh); 0: never. At most
                                        GPUCOLL_LL_MAX_BYTES_CAP. Not defaulted when 0. */
    /* ---- across nodes (hierarchical path, docs/multinode.md) ---- */
    int virtual_node_size;           /* >0: split each host into virtual nodes of this many consecutive
                                        ranks (testing the inter-node path on one host); 0: real nodes */
    int inter_path;                  /* gpucoll_inter_path_t */
    int ucx_device_path;             /* gpucoll_ucx_device_path_t of ucx_transport/gpucoll_ucx.h:
                                        0 auto, 1 direct (GPUDirect), 2 staged */
    size_t ucx_chunk_bytes;          /* UCX pipelining unit; 0: the transport's default (16 MiB where device
                                        buffers go direct, else 1 MiB) */
    int ucx_pipeline_depth;          /* UCX chunks in flight per message; 0: the transport's default (4) */
    char *ucx_net_devices;           /* network devices of the UCX transport (the MCA parameter's storage):
                                        "auto" the RDMA NIC nearest this rank's GPU (topo), "all" or
                                        NULL UCX's own choice, else a UCX_NET_DEVICES list; a
                                        UCX_NET_DEVICES the user set wins over all of these */
    size_t hier_min_bytes;           /* smallest message (count x type size) that takes the hierarchical
                                        path; smaller ones are staged (0: every size) */
    int thread_multiple;             /* nonzero under MPI_THREAD_MULTIPLE (set by the glue, not a parameter):
                                        team streams do not block the legacy default stream (the
                                        collectives of two threads would wait on each other through it)
                                        and are ordered after it by an event; grids are capped
                                        (co_resident_blocks in core/algo_select.hpp) */
    int thread_calls;                /* under MPI_THREAD_MULTIPLE: the most peer-to-peer collectives of one
                                        process that may be on the GPU at once (one per thread making
                                        them at the same time); grids are cut so that all but one of that
                                        many leave an SM (co_resident_blocks). Equal on every rank */
    int kernels_at_once;             /* peer-to-peer kernels of one process that may wait for their peers at
                                        the same time: nonblocking, persistent and enqueued collectives of
                                        different communicators in flight together, which ranks may start in
                                        different orders. Grids are cut so that all but one of that many
                                        (under MPI_THREAD_MULTIPLE, or thread_calls if more) leave an SM.
                                        Equal on every rank */
    int stream_priority;             /* gpucoll_stream_priority_t: priority of the streams the peer kernels
                                        of blocking, nonblocking and persistent calls run on */
} gpucoll_config_t;

/* Ranks whose buffers are on the same GPU. Their peer kernels wait on each other, so they must be on
   the GPU at the same time: MPS runs the kernels of its clients together; without it the GPU takes
   turns between processes and every wait costs a time slice (milliseconds; staging is faster). */
typedef enum gpucoll_shared_gpu {
    GPUCOLL_SHARED_GPU_OFF = 0, /* staged */
    GPUCOLL_SHARED_GPU_ON = 1,  /* peer kernels, with or without MPS (how tests run the peer path on one GPU) */
    GPUCOLL_SHARED_GPU_AUTO = 2 /* peer kernels where every such rank runs under MPS, else staged */
} gpucoll_shared_gpu_t;

/* What the kernels coll/gpu launches on its own streams (blocking, nonblocking and persistent calls;
   enqueued calls run on the caller's stream) start after on the GPU. */
typedef enum gpucoll_order {
    GPUCOLL_ORDER_AFTER_DEFAULT_STREAM = 0, /* the work queued on the legacy default stream before the call
                                               (a blocking stream, or an event record and a stream wait) */
    GPUCOLL_ORDER_NONE = 1                  /* nothing: the caller has its buffers ready (synchronised the
                                               streams that wrote them, or waited for an event), as NCCL's
                                               users and Horovod do; the call does not wait for compute
                                               queued on the default stream after the buffers' last write */
} gpucoll_order_t;

/* How a team launches its peer kernels on its own streams (kernels/peer_args.h, KernelGraph). */
typedef enum gpucoll_kernel_launch {
    GPUCOLL_LAUNCH_GRAPH = 0, /* through a one-node graph per stream, its node set per call: the kernel
                                 starts ~1 us sooner than after cudaLaunchKernel (docs/performance.md) */
    GPUCOLL_LAUNCH_PLAIN = 1  /* cudaLaunchKernel */
} gpucoll_kernel_launch_t;

/* Priority of the component's own streams. When the application's kernels fill the GPU, the block
   scheduler gives freed SMs to the waiting blocks of the higher-priority stream first: a collective
   that others wait for is not queued behind compute (Horovod creates its NCCL streams so). Horovod's
   benchmark on 4 x H200 ran no faster with high (docs/performance.md), hence the default normal. */
typedef enum gpucoll_stream_priority {
    GPUCOLL_STREAM_PRIORITY_NORMAL = 0, /* the default priority, like the application's streams */
    GPUCOLL_STREAM_PRIORITY_HIGH = 1    /* the device's greatest priority */
} gpucoll_stream_priority_t;

/* Device-buffer collectives on communicators that span nodes (real or virtual). */
typedef enum gpucoll_inter_path {
    GPUCOLL_INTER_AUTO = 0,   /* hierarchical where the layout allows it (uniform nodes), else staged */
    GPUCOLL_INTER_HIER = 1,   /* like auto, and say so (verbose 0) when it cannot be set up */
    GPUCOLL_INTER_STAGED = 2  /* never hierarchical: copy through host memory */
} gpucoll_inter_path_t;

/* Defaults used when a field is zero. */
/* 4 x H200, allreduce fp32: one-shot 23.9 us at 512 KiB and 29.9 at 1 MiB against 31.1 and 33.1 for
   the scratch two-shot (2 ranks: 17.8, 19.1 against 23.9, 25.6); docs/performance.md. */
#define GPUCOLL_DEFAULT_ONESHOT_MAX_BYTES (1024u * 1024u)
#define GPUCOLL_DEFAULT_SCRATCH_BYTES (64u * 1024u * 1024u)
#define GPUCOLL_DEFAULT_STAGING_CACHE_BYTES (256u * 1024u * 1024u)
#define GPUCOLL_DEFAULT_MAX_PEERS 8
#define GPUCOLL_DEFAULT_MAX_BLOCKS 128
/* tests/mpi/thread_check.c runs 4 threads' collectives at once. */
#define GPUCOLL_DEFAULT_THREAD_CALLS 8
/* Two communicators' nonblocking calls started in the other order on odd ranks deadlocked with
   128-block grids on 4 x H200 and passed with 64 (tests/mpi/cross_order_check.c, session 22). */
#define GPUCOLL_DEFAULT_KERNELS_AT_ONCE 2
#define GPUCOLL_DEFAULT_THREADS 512
/* The most threads per block the kernels launch with: the reduce kernels take up to 112
   registers a thread (ptxas -v, sm_90), and 1024 of them would not fit an SM's 64 Ki
   registers (measured on H200: every launch refused). Not __launch_bounds__(512): that made
   ptxas allocate differently, some kernels with spills. */
#define GPUCOLL_MAX_THREADS_PER_BLOCK 512
#define GPUCOLL_DEFAULT_TIMEOUT_MS 0
#define GPUCOLL_DEFAULT_DIRECT_MIN_BYTES (4u * 1024u * 1024u)
/* The windows' posting round costs a queued or stream-ordered bcast or allgather ~4 us, which the
   zero-copy kernel wins back only on large messages: on 4 x H200 (2026-11-28) it lost at 4 and
   16 MiB against the scratch plans (bcast_forward, allgather through scratch) and won at 64 MiB
   and above; bcast between 2 ranks lost up to 64 MiB, so it switches from 8 times this
   (core/windows.cpp). Allreduce, whose scratch plan is slower, switches from direct_min_bytes. */
#define GPUCOLL_DEFAULT_WINDOW_MOVE_MIN_BYTES (32u * 1024u * 1024u)
#define GPUCOLL_DEFAULT_IPC_CACHE_ENTRIES 64
/* A mapping of a live peer buffer costs no memory, one of a freed buffer keeps it allocated on the
   owner's GPU (its owner's notice unmaps it after the next collective, core/ipc_notices.hpp; the
   budget bounds what escapes that). 8 GiB keeps the working set of zero-copy calls that move GiB
   messages mapped (mapping again costs cudaIpcOpenMemHandle on every rank, and the unmap waits for
   the GPU), while bounding a GPU's loss to (ranks on the node - 1) x 8 GiB at worst, 7% of an H200
   per peer. */
#define GPUCOLL_DEFAULT_IPC_CACHE_BYTES ((size_t)8 << 30)
#define GPUCOLL_DEFAULT_RESIDENT_MAX_BYTES (1024u * 1024u)
#define GPUCOLL_DEFAULT_RESIDENT_BLOCKS 32
/* Not filled in by gpucoll_config_fill_defaults (0 is meaningful): the MCA defaults
   (mca_coll_gpu/coll_gpu_component.c, gpu_params[]). */
#define GPUCOLL_DEFAULT_HIER_MIN_BYTES (512u * 1024u)
/* Measured 2026-11-22 (gpucoll-bench, docs/performance_history.md, "Flag-in-data (LL) kernels"): LL beats the
   scratch kernels at every size up to 512 KiB on 2 x H200 (by 3-5 us); on 4 x H200 by 3-6 us up to
   128 KiB, while at 512 KiB allreduce ties and bcast loses 1 us (twice the bytes over the links). */
#define GPUCOLL_DEFAULT_LL_MAX_BYTES (256u * 1024u)
/* Each rank's scratch holds an LL area of 32 x ll_max_bytes (two parities x 8 peers x two bytes of
   line per byte): 16 MiB at this cap. */
#define GPUCOLL_LL_MAX_BYTES_CAP (512u * 1024u)
/* Resident kernels off by default, although a small blocking call they serve takes 8-11 us
   against 12-16 with a launch each (2 and 4 x H200, docs/small_calls.md): a call of another
   datatype or op retires the kernel and launches anew, the kernel holds an SM while it waits,
   and the application's cudaDeviceSynchronize waits for it to leave; not yet run beside NCCL
   kernels or under a framework. */
#define GPUCOLL_DEFAULT_RESIDENT_US 0

/* Fills every zero field of `cfg` with its default. */
void gpucoll_config_fill_defaults(gpucoll_config_t *cfg);

#ifdef __cplusplus
}
#endif
#endif
