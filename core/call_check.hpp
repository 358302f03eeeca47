// What the ranks of a team check about each other's calls before any kernel
// runs: that they name the same collective exactly (not a hash of it), that
// alltoallv's senders and receivers agree on every piece, and that what a
// kernel will touch in a peer's mapped buffer lies inside that buffer.
// Pure logic (no GPU), unit-tested in tests/core/test_call_check.cpp.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "gpucoll_core.h"
#include "peer_args.h"

namespace gpucoll {

// A call as every rank of the team publishes it (shared memory), in the
// units of gpucoll_coll_args_t (bytes for data movement). Entries past the
// team's size are zero, so that two keys compare with memcmp.
struct CallKey {
    uint32_t kind, dtype, op;
    int32_t root;
    uint64_t count;                // 0 for alltoallv, whose totals are each rank's own
    uint64_t counts[kMaxPeers];    // allgatherv, reduce_scatter: equal on every rank
    uint64_t displs[kMaxPeers];
    uint64_t sends[kMaxPeers];     // alltoallv: what this rank sends to / receives from rank p
    uint64_t recvs[kMaxPeers];
};

CallKey call_key(const gpucoll_coll_args_t &a, int nranks);

enum class KeyVerdict {
    Match,    // every rank makes the same call: go on
    Truncate, // this rank would be sent more than its arguments leave room for (MPI_ERR_TRUNCATE)
    Mismatch  // the ranks' arguments differ elsewhere: every rank fails the call
};
// keys[r]: rank r's key. Every rank that reads the same keys reaches a
// consistent verdict: Match everywhere, or no Match anywhere.
KeyVerdict compare_keys(const CallKey *keys, int nranks, int me);

// The bytes a zero-copy kernel of this call touches in a rank's input and
// output (from the buffer's start as that rank described it), for the
// non-vector kinds; equal for every rank once the keys matched.
void direct_extent(const gpucoll_coll_args_t &a, int nranks, size_t elt, size_t *src_bytes, size_t *dst_bytes);

// Whether [offset, offset + bytes) lies inside an allocation of alloc_bytes
// (no overflow on hostile values).
inline bool range_fits(uint64_t offset, uint64_t bytes, uint64_t alloc_bytes)
{
    return offset <= alloc_bytes && bytes <= alloc_bytes - offset;
}

} // namespace gpucoll
