// What the core hands a peer-to-peer kernel: plain data, shared by the host
// code that launches (core/) and the device code (kernels/).
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "gpucoll_types.h"
#include "windows.h"

namespace gpucoll {

constexpr int kMaxPeers = kWindowPeers;
constexpr int kMaxBlocks = 128;
// Flag sets per rank: barriers 0-2 (the direct allreduce has three), the
// round flags of pipelined kernels (kRoundPhase) and the flags by which the
// write-based allreduce hands a scratch slot back to its writers
// (kFreePhase). Round and free flags hold round_flag(epoch, round), so that
// they grow across calls too.
constexpr int kPhases = 5;
constexpr int kRoundPhase = 3;
constexpr int kFreePhase = 4;
constexpr int kMaxRounds = 16; // rounds of the pipelined pull kernels
constexpr int kRoundBits = 24; // rounds one call may count in its flags
// Each rank's scratch starts with barrier flags: [phase][rank][block].
constexpr size_t kFlagsBytes = kPhases * kMaxPeers * kMaxBlocks * sizeof(uint64_t);
constexpr size_t kDataOffset = 64 * 1024;
// After the flags: where block 0 of a resident kernel passes each decision
// (serve the next call, or leave) and the call to the other blocks
// (kernels/resident.cuh): the word, then a copy of the call 64 bytes on.
constexpr size_t kResidentOffset = kFlagsBytes;
constexpr size_t kResidentCallOffset = kResidentOffset + 64;

enum class PeerAlgo : int {
    AllreduceOneShot = 0, // copy in, barrier, every rank reduces everything
    AllreduceTwoShot,     // copy in, barrier, reduce own slice, barrier, gather slices
    Reduce,               // copy in, barrier, the root reduces
    ReduceScatterBlock,   // copy blocks in, barrier, reduce own block
    Allgather,            // copy in, barrier, read every rank's block
    Bcast,                // root copies in, barrier, the others read it
    Alltoall,             // copy blocks in, barrier, read own block of every rank
    LocalReduce,          // dst = src op dst on one GPU, no peers
    // Zero-copy: peers' user buffers are mapped (CUDA IPC), no scratch, no chunks.
    AllreduceDirect,      // barrier, rounds of: reduce a piece of own slice from peers' inputs, gather the
                          // previous piece of the other slices; barrier
    ReduceScatterDirect,  // barrier, reduce own block from peers' inputs, barrier (blocks of any size)
    AllgatherDirect,      // barrier, read every peer's input, barrier
    BcastDirect,          // barrier, rounds of: read a piece of own slice from the root, read the previous
                          // piece of the other slices from their receivers; barrier
    // Zero-copy by stores into peers' buffers (push) rather than loads (pull, above).
    AllreducePush,        // barrier, reduce own slice from peers' inputs into every rank's output; barrier
    AllreduceWrites,      // barrier, rounds of: write a piece of every other slice into its owner's scratch,
                          // reduce the previous piece of own slice into every rank's output; barrier
    AllgatherPush,        // barrier, write own input into every peer's output; barrier
    BcastPush,            // barrier, read own slice from the root into every receiver's buffer; barrier
    BcastSpread,          // all ranks on one GPU: BcastPush with a slice for the root too
    VectorPush,           // Allgatherv, Alltoallv: barrier, write each peer's piece into its output; barrier
    // Flag-in-data lines through the LL area of scratch (kernels/ll_lines.cuh): every rank stores what a
    // peer needs into that peer's area, 8 bytes of data and a flag per 16-byte line; readers spin on
    // their own memory. No barrier and no fence: the latency path for small messages.
    AllreduceLL,          // store the input into every peer's area; reduce all ranks' lines
    ReduceScatterBlockLL, // store block p of the input into rank p's area; reduce own block's lines
    AllgatherLL,          // store the input into every peer's area; copy out every rank's lines
    BcastLL,              // the root stores its buffer into every peer's area; the others copy it out
    ReduceLL,             // the others store their input into the root's area; the root reduces the lines
    AlltoallLL,           // store block p of the input into rank p's area; copy out every rank's lines
    // Through scratch again, for buffers that are not mapped.
    BcastForward,         // root stores slice j into receiver j's scratch, barrier, receiver j forwards it to the
                          // others' scratch, barrier, each copies out (kernels/bcast_forward.cuh)
    // Zero-copy again (numbered after the others so that the older values stay).
    ReducePush,           // barrier, each non-root reduces its slice from every input into the root's output; barrier
    // Through scratch (numbered last for the same reason).
    ReduceTwoShot,        // copy in, barrier, each non-root reduces a slice into the root's scratch, barrier, the
                          // root copies out (kernels/reduce_twoshot.cuh)
    ReduceStores          // the non-roots store their chunk into the root's scratch, barrier, the root reduces
                          // (kernels/reduce_stores.cuh)
};

// The LL area follows the two scratch halves: [parity][from rank] slots of
// ll_slot_bytes (two bytes of line per byte of data, for calls of up to
// ll_max_bytes), parity alternating between consecutive LL calls.
constexpr size_t ll_slot_bytes_for(size_t ll_max_bytes) { return 2 * ((ll_max_bytes + 15) / 16 * 16); }
constexpr size_t ll_area_bytes(size_t ll_max_bytes) { return 2 * kMaxPeers * ll_slot_bytes_for(ll_max_bytes); }

struct ResidentMailbox;
struct StreamCalls; // kernels/stream_calls.h

// A kernel launched with a mailbox stays resident after its call: it serves
// the calls the host posts to the mailbox until it has been idle for
// idle_ns or the host moves the mailbox to another generation
// (kernels/resident.cuh, core/resident.cpp).
struct Residency {
    ResidentMailbox *mailbox; // page-locked host memory (kernels/resident_call.h); nullptr: serve the launch's call only
    uint32_t gen;             // the generation this kernel serves
    int timed;                // block 0 writes when each call's phases end into mailbox->stamps
    uint64_t seq;             // the call: its blocks report it in mailbox->done when finished
    uint64_t idle_ns;
    uint64_t seen_ns;         // the GPU's clock when block 0 took the call from the mailbox (0: the launch's)
};

struct alignas(16) PeerArgs {
    PeerAlgo algo;
    int rank, nranks, root;
    const char *src;          // this rank's input (never NULL: the core resolves in place)
    char *dst;                // this rank's output
    size_t count;             // elements per block (see gpucoll_coll_args_t)
    size_t chunk;             // elements moved per rank and step through scratch
    size_t half_bytes;        // bytes of one of the two scratch halves
    size_t ll_slot_bytes;     // bytes of one slot of the LL area (after the halves)
    uint64_t epoch0;          // barrier epoch of the first step; LL algorithms: the call's flag (never 0)
    char *scratch[kMaxPeers]; // every rank's scratch, mapped here
    uint64_t timeout_ns;
    int *error;               // host-mapped: set to a kError* value when a wait gives up
    int vector_ok;            // src, dst and strides allow 16-byte accesses
    // LL calls: a rank that did not hear from every peer in the call (bcast's
    // root, reduce's non-roots) ends only once every peer has started it
    // (kernels/ll_lines.cuh). Set for calls that run without the host
    // agreement, which otherwise gives the same.
    int ll_wait_acks;
    // Direct algorithms: every rank's input and output, mapped here (ours too).
    // ReduceScatterDirect: peer_src[j] points at this rank's block of j's input.
    // VectorPush: peer_src[p] is the piece of this rank's input that goes to
    // rank p, peer_dst[p] where it goes in p's output, vbytes[p] its size.
    const char *peer_src[kMaxPeers];
    char *peer_dst[kMaxPeers];
    uint64_t vbytes[kMaxPeers];
    Residency resident;
    // Queued calls (core/team_queued.cpp) learn that their kernel is over
    // from page-locked memory instead of an event: the last block to finish
    // writes done_value to done_word. nullptr: nothing to report.
    uint64_t *done_word;
    uint64_t done_value;
    // Stream-ordered calls (kernels/stream_calls.h): epoch0 comes from here
    // at the kernel's start, not from the host; the call takes
    // stream_epochs barrier epochs, or, where 0, one LL flag (an LL call).
    // nullptr: epoch0 as given.
    StreamCalls *stream_calls;
    uint64_t stream_epochs;
    // Queued calls on a team with registered windows (kernels/windows.h):
    // the team's table (nullptr: none, the plan runs as it is), this rank's
    // buffers as window descriptors (0: not in a window) with the bytes the
    // kernels reach in each, and the zero-copy algorithm that runs instead
    // of `algo` where every rank's buffers are in windows.
    const WindowTable *windows;
    uint64_t window_src, window_dst;
    uint64_t window_src_bytes, window_dst_bytes;
    PeerAlgo window_algo;
};
static_assert(sizeof(PeerArgs) % 16 == 0, "resident kernels copy a command in 16-byte words");
static_assert(kResidentCallOffset + sizeof(PeerArgs) <= kDataOffset, "barrier flags overflow into the data area");
// After the resident call: the give-up word. A kernel that gives up on a
// peer (timeout) sets it in every rank's scratch, and every wait of every
// kernel of the team checks its own, so that no rank's kernel keeps spinning
// for a peer that has left: its process could be killed with the kernel
// still running, which under MPS takes the GPU down for every client. Never
// cleared: the team runs no peer kernel after a timeout (core/team.cpp).
// What a kernel leaves in PeerArgs::error (0: nothing went wrong).
constexpr int kErrorTimeout = 1;    // this kernel waited a.timeout_ns for a peer
constexpr int kErrorPeerGaveUp = 2; // another rank's kernel gave up first
constexpr int kErrorFlagsExhausted = 3; // a stream-ordered LL call found no flag left (kStreamLLFlagLimit)
constexpr int kErrorPeerGone = 4;   // set by the host: a peer's process is gone, or this one exits (core/peer_watch.hpp)
constexpr size_t kGiveUpOffset = (kResidentCallOffset + sizeof(PeerArgs) + 63) / 64 * 64;
static_assert(kGiveUpOffset + sizeof(uint64_t) <= kDataOffset, "the give-up word overflows into the data area");
// After the give-up word: how many blocks of the running queued kernel have
// finished (report_done in kernels/peer_sync.cuh); 0 between kernels.
constexpr size_t kDoneCountOffset = kGiveUpOffset + 64;
static_assert(kDoneCountOffset + sizeof(unsigned) <= kDataOffset, "the done count overflows into the data area");
// After the done count: the window posts of the ranks (kernels/windows.h).
constexpr size_t kWindowPostOffset = kDoneCountOffset + 64;
static_assert(kWindowPostOffset + kMaxPeers * sizeof(WindowPost) <= kDataOffset, "the window posts overflow into the data area");
// After the window posts: the LL acknowledgements (kernels/ll_lines.cuh).
// Word p of rank r's is the flag of the last LL call for which rank p has
// finished reading its own LL area, as p told r.
constexpr size_t kLLAckOffset = kWindowPostOffset + kMaxPeers * sizeof(WindowPost);
static_assert(kLLAckOffset + kMaxPeers * sizeof(uint64_t) <= kDataOffset, "the LL acknowledgements overflow into the data area");


__host__ __device__ constexpr bool is_direct(PeerAlgo a)
{
    return a == PeerAlgo::AllreduceDirect || a == PeerAlgo::ReduceScatterDirect ||
           a == PeerAlgo::AllgatherDirect || a == PeerAlgo::BcastDirect || a == PeerAlgo::AllreducePush ||
           a == PeerAlgo::AllreduceWrites || a == PeerAlgo::AllgatherPush || a == PeerAlgo::BcastPush ||
           a == PeerAlgo::BcastSpread || a == PeerAlgo::VectorPush || a == PeerAlgo::ReducePush;
}

// Whether the kernel moves bytes (no datatype, no op) rather than reducing.
constexpr bool moves_bytes(PeerAlgo a)
{
    return a == PeerAlgo::Allgather || a == PeerAlgo::Bcast || a == PeerAlgo::Alltoall ||
           a == PeerAlgo::AllgatherDirect || a == PeerAlgo::BcastDirect || a == PeerAlgo::AllgatherPush ||
           a == PeerAlgo::BcastPush || a == PeerAlgo::BcastSpread || a == PeerAlgo::AllgatherLL ||
           a == PeerAlgo::BcastLL || a == PeerAlgo::AlltoallLL || a == PeerAlgo::VectorPush ||
           a == PeerAlgo::BcastForward;
}

__host__ __device__ constexpr bool is_ll(PeerAlgo a)
{
    return a == PeerAlgo::AllreduceLL || a == PeerAlgo::ReduceScatterBlockLL || a == PeerAlgo::AllgatherLL ||
           a == PeerAlgo::BcastLL || a == PeerAlgo::ReduceLL || a == PeerAlgo::AlltoallLL;
}

// The LL algorithms in which some rank hears from some peer not at all (the
// root of bcast, the others of reduce): only there does a call without the
// host agreement wait for the peers' acknowledgements, and only there are
// they written (kernels/ll_lines.cuh). The others receive from every peer,
// which tells each rank that every peer has started the call.
__host__ __device__ constexpr bool ll_one_way(PeerAlgo a) { return a == PeerAlgo::BcastLL || a == PeerAlgo::ReduceLL; }

// Loads every kernel of the family into the current device's context and
// sets *stack_bytes to the most local memory a thread of any of them uses.
// Both serve one rule: no launch of ours may wait for the kernels already
// running. CUDA loads a kernel at its first launch by default (lazy
// loading), and grows the context's per-thread stack at the first launch
// of a kernel that needs more; either may wait for the running kernels.
// With several threads, one thread's launch would then wait for another
// thread's peer kernel, which waits for a peer rank whose threads may be
// stuck the same way. Also records each kernel's most threads per block
// (its registers decide) for launch_peer_kernel, and sets *max_regs to the
// most registers a thread of any of them takes. False if a kernel could not
// be loaded.
bool load_peer_kernels(size_t *stack_bytes, int *max_regs);

// A graph of one kernel node through which launch_peer_kernel launches on
// one stream: each launch sets the node's kernel, grid and arguments and
// launches the graph. The kernel starts about 1 us sooner than after
// cudaLaunchKernel (H100, with and without MPS: gpucoll-floor's graph rows).
// One per stream, never shared between streams: the launches of one graph
// run one after another, whatever streams they are queued on. Its owner
// destroys it (destroy_kernel_graph) once the stream is idle.
struct KernelGraph {
    void *graph = nullptr, *exec = nullptr, *node = nullptr;
    bool off = false; // the graph could not be made: plain launches from now on
    // What the node is set to launch (func null: unknown); a launch of the
    // same skips setting it again (0.6-1.1 us of CPU on an H100).
    void *func = nullptr;
    int blocks = 0, threads = 0;
    PeerArgs args{};
};
void destroy_kernel_graph(KernelGraph *g);

// Launches the kernel for `a` on `stream` with up to `threads` per block:
// fewer where the kernel cannot take that many, and half as many again
// while the launch is refused for lack of resources (no block of a refused
// launch ran; the kernels take any multiple of 32; later launches of the
// kernel start from what was accepted). *threads_used (if not null) says
// what the launch got. Through `graph` where given, else cudaLaunchKernel;
// the same stream order either way. Returns false for a pair the kernels do
// not implement; a launch that failed leaves its error for
// gpuGetLastError(). gpuStream_t is passed as void* to keep GPU headers out.
bool launch_peer_kernel(const PeerArgs &a, gpucoll_dtype_t dtype, gpucoll_op_t op, int blocks, int threads,
                        void *stream, int *threads_used = nullptr, KernelGraph *graph = nullptr);

// Sets `graph` (if made, and not off) up for a launch of `a` that the
// caller expects next, so that launch_peer_kernel finds it set and only
// launches: a persistent request does it for its next start while its
// kernel runs. Nothing is launched; a wrong guess costs nothing but the
// setting.
void prepare_peer_kernel(KernelGraph *graph, const PeerArgs &a, gpucoll_dtype_t dtype, gpucoll_op_t op, int blocks,
                         int threads);

} // namespace gpucoll
