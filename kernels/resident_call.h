// How the host hands a call to a resident kernel (kernels/resident.cuh):
// eight 8-byte words in page-locked host memory, each tagged with the
// call's number. Block 0 reads all eight in one trip over PCIe (one load
// per thread) and takes the call when every tag is the one it waits for,
// whatever order the words arrived in: a separate doorbell followed by a
// read of the call cost a second trip, 1.2 us on an H200 (gpucoll-floor,
// "resident +cmd" against "resident doorbell"). An aligned 8-byte store
// and load are single accesses on both sides, so a word is never torn.
//
// A word is payload << 16 | tag, the tag being the call number's low 16
// bits. The kernel serving call n waits for call n + 1, and the host
// writes call n + 1 only after call n is done, with every word rewritten
// at each launch and each post: a word from an older call carries tag n
// or the launch's, never n + 1.
//
// The words carry what changes from call to call; everything else must
// equal the launch's arguments (same_resident_base), or the host launches
// a new kernel instead.
#pragma once

#include <stdint.h>

#include "peer_args.h"

namespace gpucoll {

constexpr int kResidentCallWords = 8;
constexpr uint64_t kResidentPayloadLimit = 1ull << 48;

__host__ __device__ constexpr uint64_t resident_word(uint64_t payload, uint64_t seq)
{
    return payload << 16 | (seq & 0xffffu);
}
__host__ __device__ constexpr uint32_t resident_tag(uint64_t word) { return (uint32_t)(word & 0xffffu); }
__host__ __device__ constexpr uint64_t resident_payload(uint64_t word) { return word >> 16; }

// Word 0: the kernel generation it is for (a kernel of another generation
// leaves), the algorithm, the root and whether 16-byte accesses are allowed.
__host__ __device__ constexpr uint32_t resident_gen(uint64_t word0) { return (uint32_t)(resident_payload(word0) >> 16); }

// Fills w[] for call `seq` of generation `gen`. False where a field does not
// fit its 48 bits (the host then launches a kernel for the call).
__host__ __device__ inline bool encode_resident_call(const PeerArgs &k, uint32_t gen, uint64_t seq,
                                                     uint64_t w[kResidentCallWords])
{
    const uint64_t fields[] = {(uint64_t)(uintptr_t)k.src, (uint64_t)(uintptr_t)k.dst, k.count, k.chunk, k.epoch0};
    for (uint64_t f : fields)
        if (f >= kResidentPayloadLimit) return false;
    if ((unsigned)k.algo > 0x7f || (unsigned)k.root > 0xff) return false;
    w[0] = resident_word((uint64_t)gen << 16 | (uint64_t)k.algo << 9 | (uint64_t)(k.vector_ok != 0) << 8 |
                             (uint64_t)(unsigned)k.root,
                         seq);
    for (int i = 0; i < 5; i++) w[1 + i] = resident_word(fields[i], seq);
    w[6] = resident_word(0, seq);
    w[7] = resident_word(0, seq);
    return true;
}

// What a kernel of generation `gen`, waiting for call `seq`, makes of the
// words it read: leave (the host moved to another generation), take the
// call (every word tagged `seq`), or read again.
enum ResidentVerdict { kResidentWait = 0, kResidentTake = 1, kResidentLeave = 2 };
__host__ __device__ inline ResidentVerdict resident_verdict(const uint64_t w[kResidentCallWords], uint32_t gen,
                                                             uint64_t seq)
{
    if (resident_gen(w[0]) != gen) return kResidentLeave;
    for (int i = 0; i < kResidentCallWords; i++)
        if (resident_tag(w[i]) != (uint32_t)(seq & 0xffffu)) return kResidentWait;
    return kResidentTake;
}

// The call of words w[] on top of the launch's arguments `k`.
__host__ __device__ inline void apply_resident_call(const uint64_t w[kResidentCallWords], uint64_t seq, PeerArgs *k)
{
    const uint64_t w0 = resident_payload(w[0]);
    k->root = (int)(w0 & 0xff);
    k->vector_ok = (int)((w0 >> 8) & 1);
    k->algo = (PeerAlgo)((w0 >> 9) & 0x7f);
    k->src = reinterpret_cast<const char *>((uintptr_t)resident_payload(w[1]));
    k->dst = reinterpret_cast<char *>((uintptr_t)resident_payload(w[2]));
    k->count = resident_payload(w[3]);
    k->chunk = resident_payload(w[4]);
    k->epoch0 = resident_payload(w[5]);
    k->resident.seq = seq;
}

// The host writes a call into `call` (encode_resident_call); the resident
// kernel's block b runs it and sets done[b] to its number. With
// Residency::timed, block 0 then writes, for a call it took from the
// mailbox, the GPU's clock (ns) when it took it (stamps[0]), when the
// call's work ended (stamps[1]) and when its writes were fenced (stamps[2]),
// and last the call's number (stamps[3]).
// `withdrawn`: the number of a call the host takes back (posted before the
// agreement, which failed); its blocks stop waiting for peers and report it
// done (call_withdrawn).
// `taken`: the number of the last call block 0 took from `call`, so that
// the host knows a posted call will be served before it queues other work
// behind the kernel (ResidentKernel::order_before).
struct alignas(64) ResidentMailbox {
    uint64_t call[kResidentCallWords];
    uint64_t done[kMaxBlocks];
    uint64_t stamps[8];
    uint64_t withdrawn;
    uint64_t taken;
};

// Whether the host took call `seq` back. Read over the bus: the waits ask
// only now and then (must_give_up, kernels/peer_sync.cuh).
__host__ __device__ inline bool call_withdrawn(const ResidentMailbox *mb, uint64_t seq)
{
    return *reinterpret_cast<const volatile uint64_t *>(&mb->withdrawn) == seq;
}

// Whether call `next` may be sent as words to a kernel launched with `base`
// and serving generation `gen`: all that the words leave out is the same.
inline bool same_resident_base(const PeerArgs &base, PeerArgs next)
{
    next.root = base.root;
    next.vector_ok = base.vector_ok;
    next.algo = base.algo;
    next.src = base.src;
    next.dst = base.dst;
    next.count = base.count;
    next.chunk = base.chunk;
    next.epoch0 = base.epoch0;
    next.resident.seq = base.resident.seq;
    next.resident.gen = base.resident.gen;
    next.resident.seen_ns = base.resident.seen_ns;
    const unsigned char *a = reinterpret_cast<const unsigned char *>(&base);
    const unsigned char *b = reinterpret_cast<const unsigned char *>(&next);
    for (size_t i = 0; i < sizeof(PeerArgs); i++)
        if (a[i] != b[i]) return false;
    return true;
}

} // namespace gpucoll
