/* coll_gpu_ext.h: fp16 and bf16 for MPI collectives, reduced on the GPU by coll/gpu,
 * stream-ordered (CUDA graph capturable) collectives, and user ops declared equal to a
 * built-in one (coll_gpu_op_declare, at the end).
 *
 * Open MPI 4.1 and 5.0 have no half-precision datatypes. This header gives
 * you two (IEEE binary16 and bfloat16, each 2 bytes) and the sum, product,
 * min and max ops on them:
 *
 *     coll_gpu_ext_t ext;
 *     coll_gpu_ext_init(&ext);               // after MPI_Init
 *     MPI_Allreduce(MPI_IN_PLACE, dev_buf, n, ext.float16, ext.float16_sum, comm);
 *     coll_gpu_ext_free(&ext);               // before MPI_Finalize
 *
 * Promises:
 * - With coll/gpu loaded, collectives on device buffers with these types and
 *   ops reduce on the GPU (accumulating in fp32 within one reduction step).
 * - Without it (or on host buffers), the same calls are correct: the ops are
 *   ordinary MPI user ops with host implementations (round to nearest even).
 * - Header only: nothing to link but MPI (and libdl on glibc older than 2.34).
 */
#ifndef COLL_GPU_EXT_H
#define COLL_GPU_EXT_H

#include <mpi.h>
#include <stdint.h>
#include <string.h>
#ifndef COLL_GPU_EXT_IMPLEMENTATION
#include <dlfcn.h>
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* coll/gpu recognises the datatypes by these names. */
#define COLL_GPU_EXT_FLOAT16_NAME "COLL_GPU_FLOAT16"
#define COLL_GPU_EXT_BFLOAT16_NAME "COLL_GPU_BFLOAT16"

typedef struct coll_gpu_ext {
    MPI_Datatype float16, bfloat16;
    MPI_Op float16_sum, float16_prod, float16_min, float16_max;
    MPI_Op bfloat16_sum, bfloat16_prod, bfloat16_min, bfloat16_max;
} coll_gpu_ext_t;

/* ---- host conversions (also used by coll/gpu's tests) -------------------- */
static inline float coll_gpu_ext_half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu, bits;
    if (exp == 0x1f) {
        bits = sign | 0x7f800000u | (mant << 13); /* inf / nan */
    } else if (exp != 0) {
        bits = sign | ((exp + 112u) << 23) | (mant << 13);
    } else if (mant == 0) {
        bits = sign;
    } else { /* subnormal: normalise */
        int e = -1;
        do {
            e++;
            mant <<= 1;
        } while ((mant & 0x400u) == 0);
        bits = sign | ((uint32_t)(112 - e) << 23) | ((mant & 0x3ffu) << 13);
    }
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

static inline uint16_t coll_gpu_ext_float_to_half(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    uint32_t absx = x & 0x7fffffffu;
    if (absx >= 0x7f800000u) /* inf or nan (keep nan quiet) */
        return (uint16_t)(sign | 0x7c00u | (absx > 0x7f800000u ? 0x200u : 0));
    if (absx >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* rounds to inf */
    if (absx < 0x38800000u) { /* subnormal half or zero */
        if (absx < 0x33000000u) return sign;
        uint32_t mant = (absx & 0x7fffffu) | 0x800000u;
        int shift = 126 - (int)(absx >> 23);
        uint32_t half = mant >> shift, rem = mant & ((1u << shift) - 1u), mid = 1u << (shift - 1);
        if (rem > mid || (rem == mid && (half & 1u))) half++;
        return (uint16_t)(sign | half);
    }
    uint32_t half = ((absx - 0x38000000u) >> 13);
    uint32_t rem = absx & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (half & 1u))) half++;
    return (uint16_t)(sign | half);
}

static inline float coll_gpu_ext_bf16_to_float(uint16_t b)
{
    uint32_t bits = (uint32_t)b << 16;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

static inline uint16_t coll_gpu_ext_float_to_bf16(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u); /* quiet nan */
    x += 0x7fffu + ((x >> 16) & 1u); /* round to nearest even */
    return (uint16_t)(x >> 16);
}

/* ---- the ops' host functions --------------------------------------------- *
 * In coll/gpu itself (COLL_GPU_EXT_IMPLEMENTATION) they are exported, so that
 * it can tell its ops from any other user op by their address. */
#ifdef COLL_GPU_EXT_IMPLEMENTATION
#define COLL_GPU_EXT_FN __attribute__((visibility("default")))
#else
#define COLL_GPU_EXT_FN static inline
#endif

#define COLL_GPU_EXT_DEFINE_OP(type, name, expr)                                                            \
    COLL_GPU_EXT_FN void coll_gpu_ext_##type##_##name(void *in, void *inout, int *len, MPI_Datatype *dt)   \
    {                                                                                                       \
        (void)dt;                                                                                           \
        const uint16_t *a_ = (const uint16_t *)in;                                                          \
        uint16_t *b_ = (uint16_t *)inout;                                                                   \
        for (int i = 0; i < *len; i++) {                                                                    \
            float a = coll_gpu_ext_##type##_load(a_[i]), b = coll_gpu_ext_##type##_load(b_[i]);             \
            b_[i] = coll_gpu_ext_##type##_store(expr);                                                      \
        }                                                                                                   \
    }
#define coll_gpu_ext_float16_load coll_gpu_ext_half_to_float
#define coll_gpu_ext_float16_store coll_gpu_ext_float_to_half
#define coll_gpu_ext_bfloat16_load coll_gpu_ext_bf16_to_float
#define coll_gpu_ext_bfloat16_store coll_gpu_ext_float_to_bf16
/* MPI_MAX/MIN semantics for nan are unspecified; these propagate `b`'s. */
#define COLL_GPU_EXT_OPS(type)                            \
    COLL_GPU_EXT_DEFINE_OP(type, sum, a + b)              \
    COLL_GPU_EXT_DEFINE_OP(type, prod, a * b)             \
    COLL_GPU_EXT_DEFINE_OP(type, min, a < b ? a : b)      \
    COLL_GPU_EXT_DEFINE_OP(type, max, a > b ? a : b)
COLL_GPU_EXT_OPS(float16)
COLL_GPU_EXT_OPS(bfloat16)

#ifndef COLL_GPU_EXT_IMPLEMENTATION
/* Prefer coll/gpu's copy of a function (so it recognises the op); fall back
 * to this header's when coll/gpu is not loaded. */
static inline MPI_User_function *coll_gpu_ext_pick(const char *symbol, MPI_User_function *fallback)
{
    void *fn = dlsym(RTLD_DEFAULT, symbol);
    return fn ? (MPI_User_function *)fn : fallback;
}

static inline int coll_gpu_ext_init(coll_gpu_ext_t *ext)
{
    int rc = MPI_Type_contiguous(2, MPI_BYTE, &ext->float16);
    if (rc == MPI_SUCCESS) rc = MPI_Type_set_name(ext->float16, COLL_GPU_EXT_FLOAT16_NAME);
    if (rc == MPI_SUCCESS) rc = MPI_Type_commit(&ext->float16);
    if (rc == MPI_SUCCESS) rc = MPI_Type_contiguous(2, MPI_BYTE, &ext->bfloat16);
    if (rc == MPI_SUCCESS) rc = MPI_Type_set_name(ext->bfloat16, COLL_GPU_EXT_BFLOAT16_NAME);
    if (rc == MPI_SUCCESS) rc = MPI_Type_commit(&ext->bfloat16);
#define COLL_GPU_EXT_MAKE_OP(type, name)                                                                   \
    if (rc == MPI_SUCCESS)                                                                                 \
        rc = MPI_Op_create(coll_gpu_ext_pick("coll_gpu_ext_" #type "_" #name, coll_gpu_ext_##type##_##name), \
                           1, &ext->type##_##name);
    COLL_GPU_EXT_MAKE_OP(float16, sum)
    COLL_GPU_EXT_MAKE_OP(float16, prod)
    COLL_GPU_EXT_MAKE_OP(float16, min)
    COLL_GPU_EXT_MAKE_OP(float16, max)
    COLL_GPU_EXT_MAKE_OP(bfloat16, sum)
    COLL_GPU_EXT_MAKE_OP(bfloat16, prod)
    COLL_GPU_EXT_MAKE_OP(bfloat16, min)
    COLL_GPU_EXT_MAKE_OP(bfloat16, max)
#undef COLL_GPU_EXT_MAKE_OP
    return rc;
}

static inline void coll_gpu_ext_free(coll_gpu_ext_t *ext)
{
    MPI_Op *ops[] = {&ext->float16_sum, &ext->float16_prod, &ext->float16_min, &ext->float16_max,
                     &ext->bfloat16_sum, &ext->bfloat16_prod, &ext->bfloat16_min, &ext->bfloat16_max};
    for (unsigned i = 0; i < sizeof ops / sizeof ops[0]; i++) MPI_Op_free(ops[i]);
    MPI_Type_free(&ext->float16);
    MPI_Type_free(&ext->bfloat16);
}
#endif


/* ---- stream-ordered collectives ------------------------------------------ *
 * Collectives queued on a CUDA stream (a HIP stream on AMD), like NCCL's:
 *
 *     coll_gpu_stream_init(comm);               // once, collective, before any capture
 *     coll_gpu_allreduce_enqueue(MPI_IN_PLACE, dbuf, n, MPI_FLOAT, MPI_SUM, comm, stream);
 *     ... more work on `stream` ...             // returns at once: no host wait
 *     cudaStreamSynchronize(stream);            // or an event, or the next kernel
 *
 * Promises (docs/stream.md has the long form):
 * - The collective runs in stream order: after the work `stream` holds when
 *   the call is made, before the work queued on it later. The call returns
 *   without waiting for the GPU or for another rank.
 * - Inside cudaStreamBeginCapture / torch.cuda.graph the calls are captured:
 *   the graph can be launched any number of times, with the buffers'
 *   contents changing between launches. Per-call state lives on the GPU, so
 *   a replay needs no host step. A graph must not be launched after its
 *   communicator is freed (its kernels then do nothing).
 * - Every rank must make the same enqueued calls on a communicator in the
 *   same order (as for any MPI collective), and one communicator's enqueued
 *   calls must be ordered with each other (one stream, or streams the
 *   caller orders). A rank may enqueue any time later than its peers: their
 *   kernels wait for it. A kernel ends without its peer only when that
 *   peer's process is gone (or past coll_gpu_timeout_ms, a debugging bound,
 *   off by default); coll_gpu_stream_status and every later call on the
 *   communicator then fail on that rank. Calls made outside a capture whose
 *   arguments differ between ranks (count, type, op, root) end every rank's
 *   kernels of the communicator; once every rank has made the call,
 *   coll_gpu_stream_status and later enqueued calls fail with MPI_ERR_ARG.
 *   From the first call any rank captures on, calls are not compared.
 * - coll_gpu_stream_init is collective every time it is called. Called
 *   again on every rank after an enqueued call failed on any rank (not for a
 *   peer that is gone), it ends every rank's enqueued kernels of the
 *   communicator still queued or waiting (their results undefined; graphs
 *   captured before it then do nothing) and starts afresh: later enqueued
 *   calls work. Without a failure it changes nothing.
 * - Buffers: device memory of the GPU current at coll_gpu_stream_init, or
 *   managed memory.
 *   Reductions: predefined types (and this header's fp16/bf16) with
 *   predefined ops; data movement: any contiguous datatype.
 * - Enqueued and ordinary MPI collectives on one communicator are
 *   independent: each kind is ordered among itself. An ordinary call that
 *   reads what an enqueued one writes must come after that stream's work.
 * - Where the communicator cannot take the GPU path (ranks on several
 *   nodes, no coll/gpu, a type or op without a kernel), the call, if the
 *   stream is not being captured, synchronises the stream and runs the
 *   ordinary MPI collective: correct, not asynchronous. While capturing it
 *   returns MPI_ERR_UNSUPPORTED_OPERATION instead.
 * - Return values are MPI error codes; MPI_ERR_UNSUPPORTED_OPERATION where
 *   coll/gpu is not loaded into this process at all.
 * - Freeing the communicator waits for its enqueued kernels (they end, or
 *   stop because a peer is gone). */
typedef int (*coll_gpu_stream_init_fn)(MPI_Comm comm);
typedef int (*coll_gpu_stream_status_fn)(MPI_Comm comm);
typedef int (*coll_gpu_allreduce_enqueue_fn)(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                                             MPI_Op op, MPI_Comm comm, void *stream);
typedef int (*coll_gpu_reduce_enqueue_fn)(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                                          MPI_Op op, int root, MPI_Comm comm, void *stream);
typedef int (*coll_gpu_bcast_enqueue_fn)(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm,
                                         void *stream);
typedef int (*coll_gpu_allgather_enqueue_fn)(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                             void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                                             void *stream);
typedef int (*coll_gpu_reduce_scatter_block_enqueue_fn)(const void *sendbuf, void *recvbuf, int recvcount,
                                                        MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                                                        void *stream);
typedef int (*coll_gpu_alltoall_enqueue_fn)(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                            void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                                            void *stream);

#ifndef COLL_GPU_EXT_IMPLEMENTATION
/* coll/gpu exports these as coll_gpu_impl_<name> (Python's ctypes finds
 * the same symbols: python/coll_gpu_stream). */
#define COLL_GPU_EXT_FORWARD(name, params, args)                                       \
    static inline int coll_gpu_##name params                                           \
    {                                                                                  \
        static coll_gpu_##name##_fn fn;                                                \
        if (!fn) fn = (coll_gpu_##name##_fn)dlsym(RTLD_DEFAULT, "coll_gpu_impl_" #name); \
        return fn ? fn args : MPI_ERR_UNSUPPORTED_OPERATION;                           \
    }
COLL_GPU_EXT_FORWARD(stream_init, (MPI_Comm comm), (comm))
/* MPI_SUCCESS, or the error that an enqueued kernel of `comm` met (a peer
 * whose process is gone, arguments that differ between ranks, or the
 * debugging coll_gpu_timeout_ms): the communicator's enqueued calls then
 * fail; free it. Never waits. */
COLL_GPU_EXT_FORWARD(stream_status, (MPI_Comm comm), (comm))
COLL_GPU_EXT_FORWARD(allreduce_enqueue,
                     (const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                      void *stream),
                     (sendbuf, recvbuf, count, datatype, op, comm, stream))
COLL_GPU_EXT_FORWARD(reduce_enqueue,
                     (const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, int root,
                      MPI_Comm comm, void *stream),
                     (sendbuf, recvbuf, count, datatype, op, root, comm, stream))
COLL_GPU_EXT_FORWARD(bcast_enqueue, (void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm, void *stream),
                     (buffer, count, datatype, root, comm, stream))
COLL_GPU_EXT_FORWARD(allgather_enqueue,
                     (const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                      MPI_Datatype recvtype, MPI_Comm comm, void *stream),
                     (sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, stream))
COLL_GPU_EXT_FORWARD(reduce_scatter_block_enqueue,
                     (const void *sendbuf, void *recvbuf, int recvcount, MPI_Datatype datatype, MPI_Op op,
                      MPI_Comm comm, void *stream),
                     (sendbuf, recvbuf, recvcount, datatype, op, comm, stream))
COLL_GPU_EXT_FORWARD(alltoall_enqueue,
                     (const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                      MPI_Datatype recvtype, MPI_Comm comm, void *stream),
                     (sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, stream))
#endif


/* ---- registered windows --------------------------------------------------- *
 * Buffers every rank maps every other rank's once, up front, so that
 * nonblocking, persistent and stream-ordered collectives on them (captured
 * ones too) run zero-copy (as the blocking ones do) from their first call,
 * with no wait at the call:
 *
 *     int win;
 *     coll_gpu_register(comm, dev_buf, bytes, &win);   // every rank, collective
 *     for (...) { MPI_Iallreduce(MPI_IN_PLACE, dev_buf, n, MPI_FLOAT, MPI_SUM, comm, &req); ...; MPI_Wait(&req, ...); }
 *     coll_gpu_deregister(comm, win);                   // every rank, collective, before cudaFree(dev_buf)
 *
 * Promises (docs/nonblocking.md, "Registered windows"):
 * - Both calls are collective and blocking: every rank of comm makes them,
 *   in the same order with respect to each other and to comm's other
 *   collectives, each rank with its own buffer (sizes may differ). They
 *   succeed or fail alike on every rank.
 * - A window: device memory of the GPU comm's collectives run on, 16-byte
 *   aligned, from cudaMalloc (any allocation CUDA IPC can export). Any part
 *   of it serves: a call whose buffers on every rank lie in windows (each
 *   rank's in its own, at any offset) runs zero-copy. Today that is
 *   MPI_Iallreduce, MPI_Ibcast, MPI_Iallgather, MPI_Ireduce (3 ranks or
 *   more), MPI_Ireduce_scatter_block and MPI_Ialltoall and their persistent
 *   forms, and the coll_gpu_*_enqueue of the same kinds (sums where they
 *   reduce; in a graph too), from the size at which the blocking call runs
 *   zero-copy (coll_gpu_direct_min_bytes; bcast and allgather from
 *   coll_gpu_window_move_min_bytes); other calls run as before. Results are
 *   the same either way.
 * - Without registration (coll_gpu_auto_windows, on by default) the same
 *   calls run zero-copy from the second call on the same buffers, and a
 *   graph's replays from about 100 ms after every rank captured it: the
 *   first use exports the buffer and the peers map it on their own time
 *   (docs/nonblocking.md, "Windows made on first use"). Registration makes
 *   it so from the first call, and for buffers an earlier call did not use.
 * - Deregistering waits until no collective of this rank may still read or
 *   write the window (its enqueued calls included; replays of a graph that
 *   uses it are the caller's to have finished) and every rank has got as
 *   far; from its return the buffer may be freed. A graph captured on the
 *   window and replayed later runs through scratch. Freeing a registered buffer first is erroneous: the
 *   peers' mappings keep its memory alive (the driver's rule), and a
 *   collective that still reaches it reads freed memory.
 * - At most 64 windows per communicator; freeing the communicator
 *   deregisters what is left.
 * - Errors: MPI_ERR_ARG (some rank's buffer cannot be a window: host or
 *   managed memory, another GPU, unaligned; or, deregistering, a window not
 *   registered on every rank), MPI_ERR_NO_MEM (64 registered),
 *   MPI_ERR_UNSUPPORTED_OPERATION where comm has no GPU path (ranks on several
 *   nodes, coll/gpu not loaded or not selected); MPI_ERR_COMM for a null
 *   communicator. On error, window is -1 and nothing is registered. */
typedef int (*coll_gpu_register_fn)(MPI_Comm comm, void *buf, size_t bytes, int *window);
typedef int (*coll_gpu_deregister_fn)(MPI_Comm comm, int window);

/* ---- user ops declared equal to a built-in one --------------------------- *
 * MPI must reduce with a user op's own host function, unless it knows what
 * the function computes. This says so, so that coll/gpu reduces on the GPU:
 *
 *     MPI_Type_contiguous(2, MPI_BYTE, &half); MPI_Type_commit(&half);
 *     MPI_Op_create(my_half_sum, 1, &op);                  // fp32 sum, rounded to fp16
 *     coll_gpu_op_declare(op, half, ext.float16, MPI_SUM); // every rank, once
 *     MPI_Allreduce(MPI_IN_PLACE, dev_buf, n, half, op, comm);  // on the GPU
 *
 * "user_op applied to user_type computes what as_op computes on as_type".
 * as_type: a predefined integer or floating type, or this header's float16
 * or bfloat16; as_op: a predefined op (or this header's fp16/bf16 ops) that
 * coll/gpu reduces on as_type on the GPU. user_type: committed, one run of
 * bytes per element from its lower bound 0 (extent equal to size), as many
 * bytes as as_type. user_op: made by MPI_Op_create in C.
 *
 * Promises:
 * - The declaration is about user_op's function, not its handle: it covers
 *   every op made from that function, on user_type if that is a predefined
 *   type, else on every derived type of that layout and size (a function
 *   that behaves differently by its datatype argument must not be declared).
 *   Freeing the op changes nothing, and a freed handle that MPI_Op_create
 *   hands out again for another function carries no declaration. A
 *   dispatching function (one C function serving several user functions, as
 *   language bindings make) must not be declared.
 * - The GPU reduces as as_op does there (fp16/bf16: in fp32 within a step,
 *   rounded once per step), so results may differ from what the function
 *   gives on the host in the last bits, as any reduction order may.
 *   Host buffers and paths without a kernel still call the function.
 * - Declare on every rank, before the op's first collective, with the same
 *   meaning everywhere: nonblocking, persistent and stream-ordered calls
 *   choose the GPU without asking the other ranks (a rank that did not
 *   declare would stage the call while its peers wait on the GPU).
 * - A declaration is permanent: the same one again returns MPI_SUCCESS,
 *   another meaning for the same function and type MPI_ERR_ARG. At most 64.
 * - Errors (returned, also printed by coll/gpu): MPI_ERR_OP (user_op not a
 *   C user op; as_op not reduced on as_type on the GPU), MPI_ERR_TYPE
 *   (user_type not such a layout or not committed; as_type without a GPU
 *   reduction; sizes differ), MPI_ERR_NO_MEM (64 taken), and
 *   MPI_ERR_UNSUPPORTED_OPERATION where coll/gpu is not loaded (nothing to
 *   declare to: the op keeps running on the host, correctly).
 * - Thread safe; call after MPI_Init.
 * Horovod's fp16 ops need no declaration: coll/gpu knows them by name
 * (MCA parameter coll_gpu_user_op_symbols, README "Horovod"). */
typedef int (*coll_gpu_op_declare_fn)(MPI_Op user_op, MPI_Datatype user_type, MPI_Datatype as_type, MPI_Op as_op);
#ifndef COLL_GPU_EXT_IMPLEMENTATION
COLL_GPU_EXT_FORWARD(op_declare, (MPI_Op user_op, MPI_Datatype user_type, MPI_Datatype as_type, MPI_Op as_op),
                     (user_op, user_type, as_type, as_op))
COLL_GPU_EXT_FORWARD(register, (MPI_Comm comm, void *buf, size_t bytes, int *window), (comm, buf, bytes, window))
COLL_GPU_EXT_FORWARD(deregister, (MPI_Comm comm, int window), (comm, window))
#undef COLL_GPU_EXT_FORWARD
#endif

#ifdef __cplusplus
}
#endif
#endif
