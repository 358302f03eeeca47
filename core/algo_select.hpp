// The algorithm table: which peer-to-peer algorithm serves a call, in what
// steps. Pure logic (no GPU), unit-tested in tests/core.
#pragma once

#include <stddef.h>

#include "gpucoll_config.h"
#include "gpucoll_core.h"
#include "peer_args.h"

namespace gpucoll {

struct Plan {
    PeerAlgo algo;
    size_t chunk;               // elements per rank and step (before scratch limits)
    int scratch_blocks_per_step;// chunk-sized areas a step needs in one scratch half
    bool strided;               // buffers hold one block per rank `count` apart
    bool wait_acks;             // `queued` and a one-way LL kernel: its ranks write and wait for acknowledgements (kernels/ll_lines.cuh)
    const char *name;           // the row's name in the algorithm table
    // coll_gpu_<kind>_algorithm forced a row that cannot serve this call:
    // why (the automatic choice served it instead); nullptr otherwise.
    const char *forced_refused;
};

// The GPU a team's kernels run on, as far as grids and algorithms go: its
// SMs (as this process sees them; 0 if unknown) and how many ranks run peer
// kernels on it, whose kernels may wait on each other at the same time.
// Alike on every rank of a team (core/team.cpp: gpu_share_of).
struct GpuShare {
    int sms = 0;
    int ranks = 1;
};

// Fills `plan` for `a` on a team of `nranks`; false if no kernel serves it.
// The row config.algorithm[kind] forces serves where it can; where it cannot
// (zero-copy without mapped buffers, LL above ll_max_bytes) the automatic
// choice does, and plan->forced_refused says why.
// `direct`: every rank's buffers are mapped by the others, so the zero-copy
// algorithms may serve (the caller decides when that holds). `share`: a
// team whose ranks all share one GPU moves data through one HBM, which
// favours other zero-copy kernels than links do. `queued`: the call runs
// without a host agreement (nonblocking, persistent, stream-ordered), so its
// one-way LL kernels end only once every peer has started the call
// (plan->wait_acks, kernels/ll_lines.cuh), and
// zero-copy serves only with `direct` (a persistent plan whose buffers every
// rank mapped).
bool make_plan(const gpucoll_coll_args_t &a, int rank, int nranks, const gpucoll_config_t &cfg, bool direct,
               Plan *plan, const GpuShare &share = GpuShare{}, bool queued = false);
inline bool make_plan(const gpucoll_coll_args_t &a, int rank, int nranks, const gpucoll_config_t &cfg, Plan *plan)
{
    return make_plan(a, rank, nranks, cfg, false, plan);
}

// The name of the row config.algorithm[kind] forces, or nullptr (auto).
const char *forced_algorithm(gpucoll_coll_kind_t kind, const gpucoll_config_t &cfg);

// Whether `a` may run zero-copy as far as this rank's call goes (its
// buffers must still be exported and mapped by every peer): a kind with a
// zero-copy kernel and a call shaped for it, large enough for the automatic
// choice, or at any size where the forced row is zero-copy (never where
// it is not).
bool zero_copy_candidate(const gpucoll_coll_args_t &a, const gpucoll_config_t &cfg, int nranks);

// Largest chunk (elements, a multiple of 16) that fits a scratch half.
size_t max_chunk_elems(const Plan &plan, size_t half_bytes, size_t elt);
// The chunk that a scratch plan of `chunk` elements of `elt` bytes (its
// whole count, rounded up to 16) runs in when an area holds at most `max` (a
// multiple of 16): as few steps as fit, about the same size, so that no call
// ends with a step of a few elements that costs a whole step's barriers;
// in whole 4 KiB pages where that fits, else, and for calls of more than 16
// steps, `max`. 0 when `max` is.
size_t even_chunk_elems(size_t chunk, size_t max, size_t elt);

// Whether a call of `plan` runs on a resident kernel (core/resident.cpp):
// the scratch algorithms up to resident_max_bytes, when resident_us > 0.
bool resident_serves(const Plan &plan, size_t elt, int nranks, const gpucoll_config_t &cfg);

// Peer kernels of one rank that may wait for their peers at once:
// kernels_at_once (nonblocking, persistent and enqueued calls of different
// communicators, which MPI lets ranks start in different orders: each
// rank's first kernel then waits for a peer's second), or under
// MPI_THREAD_MULTIPLE thread_calls (one per thread making them at the same
// time) where that is more.
int calls_at_once(const gpucoll_config_t &cfg);

// Most blocks of a kernel such that kernels waiting on each other always
// progress. A block that waits holds its SM; one block per SM is the worst
// case (the reduce kernels take ~128 registers x 512 threads, a whole SM's
// register file). Every kernel pairs block b only with block b of the other
// ranks (kernels/peer_sync.cuh), and the GPU starts a kernel's blocks in
// index order, so a kernel progresses as long as each of its ranks runs at
// least one of its blocks: the lowest unfinished block then has every
// partner on an SM or past its waits. Hence the grids of all but one of the
// kernels that may be waiting on one GPU (its ranks times the calls each may
// have running, calls_at_once) leave at least one SM: two crossed calls of
// one rank per GPU keep whole-GPU grids (128 of 132 SMs). Ranks sharing a GPU
// (MPS) also fit it together, so that none spins on a peer that has no SM;
// without MPS the GPU takes turns between processes, which this covers too.
// At least 1.
int co_resident_blocks(const GpuShare &share, int calls_at_once);

// The parameters from which every rank of a team derives the same plan,
// grid and scratch layout on its own (algorithms, thresholds, grid caps,
// scratch and LL sizes, the calls at once), hashed: ranks whose values
// differ would run different kernels against each other (a hang) or index
// a peer's scratch by their own size. Equal configs give equal values; the
// parameters that stay local (verbose, timeout_ms, the IPC cache, ordering,
// launch style) do not enter it.
uint64_t plan_config_fingerprint(const gpucoll_config_t &cfg);

// Thread blocks per kernel: enough to keep the links busy, few enough that
// the cross-rank barrier stays cheap for small messages, and within
// co_resident_blocks.
int blocks_for(const Plan &plan, size_t elt, const gpucoll_config_t &cfg, int nranks,
               const GpuShare &share = GpuShare{});

// Threads per block for a kernel of `algo` whose rank moves `block_bytes`
// (its own block where the buffers are strided), on `blocks` blocks: LL
// kernels take a thread per line of 8 bytes, at least 64, at most
// threads_per_block; the others take threads_per_block, or fewer where
// their row of the algorithm table says (reduce_stores: 128).
int threads_for(PeerAlgo algo, size_t block_bytes, int blocks, const gpucoll_config_t &cfg);

// How an algorithm moves data: flag-in-data lines (LL), through scratch
// with barriers, zero-copy by loads from or stores into peers' mapped
// buffers, or locally (no peers).
enum class Protocol { LL, Scratch, ZeroCopyPull, ZeroCopyPush, Local };

// From the algorithm table (core/algo_select.cpp): an algorithm's name
// ("allreduce_ll", ...; "?" for none), its protocol, and the algorithms
// that may serve `kind`, in the order make_plan tries them (at most `max`
// written; returns how many there are). gpucoll_algorithm_names
// (gpucoll_core.h) gives the rows' names in the same order.
const char *algo_name(PeerAlgo algo);
Protocol algo_protocol(PeerAlgo algo);
int algo_rows(gpucoll_coll_kind_t kind, PeerAlgo *out, int max);

// Where the zero-copy kernels of the vector kinds move data (bytes).
// Allgatherv/Alltoallv: the piece of `rank`'s input that goes to rank p,
// and where it lands in p's output; `peer_rdispl` is alltoallv's rdispls[rank]
// of rank p (in elements), which only p knows and publishes.
struct Piece {
    size_t src_off, dst_off, bytes;
};
Piece vector_piece(const gpucoll_coll_args_t &a, int rank, int p, size_t elt, size_t peer_rdispl);
// Reduce_scatter(_block): `rank`'s block of every input, in elements.
void reduce_scatter_block_of(const gpucoll_coll_args_t &a, int rank, size_t *offset, size_t *count);

} // namespace gpucoll
