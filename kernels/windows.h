// Registered windows (coll_gpu_register, core/windows.cpp): buffers every
// rank of a team has mapped every other rank's, once, collectively. A call
// whose buffers all lie in windows can run zero-copy without a host
// agreement (nonblocking, persistent): each rank's kernel posts where its
// buffers are, as window descriptors, and reads every rank's posts; all
// ranks read the same posts, so all take the same plan
// (kernels/windows.cuh). Plain data and pure functions, shared by the host
// (which encodes) and the kernels (which resolve), unit-tested on the CPU.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "gpu_port.h"

namespace gpucoll {

constexpr int kMaxWindows = 64;
constexpr int kWindowPeers = 8; // = kMaxPeers (peer_args.h includes this header)
// Buffers a rank exported on their first use by a call that could run
// zero-copy (core/auto_windows.hpp): per rank and team, one allocation each.
constexpr int kMaxExports = 32;

// One per team, in device memory; row w is written by the host at the
// collective registration of window w, before any kernel that may read it,
// and cleared at its collective deregistration, after every kernel that
// may have read it has ended on every rank. base[w][r]: rank r's window w
// as mapped in this process (this rank's own: its buffer). gen[w] changes
// at each registration into slot w, so that a descriptor of a window since
// deregistered (a graph captured earlier, a plan made earlier) resolves to
// nothing rather than to another buffer.
struct WindowTable {
    char *base[kMaxWindows][kWindowPeers];
    uint64_t bytes[kMaxWindows][kWindowPeers];
    uint32_t gen[kMaxWindows];
    unsigned long long zero_copy_calls; // kernels that took the windows (block 0 counts), for verbose output
    // Exports: rank r's allocation in its export slot s as mapped here, and
    // the export's number (0: none). Each rank maps its peers' exports on its
    // own time, so these rows differ between ranks (the kernels vote). A row
    // is written before its number, and is rewritten only once its owner has
    // put another export in the slot, which it does only after the old one's
    // allocation was freed, and so after every kernel that named it ended.
    char *xbase[kWindowPeers][kMaxExports];
    uint64_t xbytes[kWindowPeers][kMaxExports];
    uint64_t xseq[kWindowPeers][kMaxExports];
};

// A descriptor: where one rank's buffer lies in its windows. 0: not in one.
// bit 63: valid; bits 56-62: window; 40-55: the window's generation (low 16
// bits); 0-39: the offset in bytes (windows up to 1 TiB).
constexpr int kWindowOffsetBits = 40;
constexpr uint64_t kWindowOffsetMask = (1ull << kWindowOffsetBits) - 1;

__host__ __device__ inline uint64_t window_desc(int window, uint32_t gen, uint64_t offset)
{
    if (window < 0 || window >= kMaxWindows || offset > kWindowOffsetMask) return 0;
    return 1ull << 63 | (uint64_t)window << 56 | (uint64_t)(gen & 0xffff) << kWindowOffsetBits | offset;
}

// The descriptor of an export: bit 62 set, bits 56-61 the poster's export
// slot, 40-55 the export's number (low 16 bits), 0-39 the offset.
constexpr uint64_t kExportDescBit = 1ull << 62;

__host__ __device__ inline uint64_t export_desc(int slot, uint64_t seq, uint64_t offset)
{
    if (slot < 0 || slot >= kMaxExports || !seq || offset > kWindowOffsetMask) return 0;
    return 1ull << 63 | kExportDescBit | (uint64_t)slot << 56 | (seq & 0xffff) << kWindowOffsetBits | offset;
}

__host__ __device__ inline bool is_export_desc(uint64_t d) { return (d >> 63) && (d & kExportDescBit); }
__host__ __device__ inline int export_slot(uint64_t d) { return (int)(d >> 56 & 0x3f); }
__host__ __device__ inline bool export_seq_matches(uint64_t seq, uint64_t d)
{
    return seq && (seq & 0xffff) == (d >> kWindowOffsetBits & 0xffff);
}

// Rank r's buffer of descriptor d, `bytes` long, as mapped here; nullptr
// where d is no descriptor, names a window not registered (now) or an
// export not mapped here (now), or a range past its end.
__host__ __device__ inline char *window_resolve(const WindowTable &t, int r, uint64_t d, uint64_t bytes)
{
    if (!(d >> 63) || r < 0 || r >= kWindowPeers) return nullptr;
    const uint64_t off = d & kWindowOffsetMask;
    if (is_export_desc(d)) {
        const int s = export_slot(d);
        if (s >= kMaxExports || !export_seq_matches(t.xseq[r][s], d) || !t.xbase[r][s]) return nullptr;
        if (off > t.xbytes[r][s] || bytes > t.xbytes[r][s] - off) return nullptr;
        return t.xbase[r][s] + off;
    }
    const int w = (int)(d >> 56 & 0x7f);
    if (w >= kMaxWindows || (t.gen[w] & 0xffff) != (d >> kWindowOffsetBits & 0xffff) || !t.base[w][r]) return nullptr;
    if (off > t.bytes[w][r] || bytes > t.bytes[w][r] - off) return nullptr;
    return t.base[w][r] + off;
}

// What a rank's kernel posts in every rank's scratch (at kWindowPostOffset,
// one slot per posting rank) before its first wait: its buffers'
// descriptors, then `call` (the call's first barrier epoch, which grows
// with every call of the team) with release semantics. A slot is written
// again only by the same rank's next such call, which starts after every
// rank's kernel of this call has passed a barrier that comes after its
// reading of the slot.
struct WindowPost {
    uint64_t src, dst;
    uint64_t src_bytes, dst_bytes; // what the kernels reach in each buffer (checked against the window)
    uint64_t call;
    // Where a post holds an export: call << 1 | whether the poster could
    // resolve every rank's post of the call (kernels/windows.cuh).
    uint64_t vote;
    uint64_t pad[2];
};
static_assert(sizeof(WindowPost) == 64, "one post per 64 bytes");

} // namespace gpucoll
