// The zero-copy alltoall(v) / allgatherv kernel (kernels/vector_push.cuh)
// on the host, every GPU thread a std::thread (kernel_host_threads.h), the
// ranks' buffers host memory: each rank stores its pieces into the peers'
// outputs, its own piece beside the first peer's where both are 16-byte
// aligned (pairs_with_own), one after another where not. Checks every
// output byte (and the guard bytes around it) for equal blocks, uneven and
// empty pieces, 4-byte and byte alignment, allgatherv in place, 2-4 ranks,
// calls back to back.
#include "kernel_host_shim.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "peer_kernels.cuh"

#include "kernel_host_atomics.h"
#include "kernel_host_threads.h"

using namespace gpucoll;

#include "../common/check.h"

namespace {

constexpr unsigned kGrid = 3, kBlock = 4;
constexpr size_t kGuard = 32;

using Bytes = HostBytes;

// One call: what rank r sends rank p (bytes[r][p]) and where the pieces
// sit, as the host resolves MPI's counts and displacements (place_pieces).
struct Layout {
    int n;
    size_t offset;      // of every buffer's data from its allocation (0 keeps 16-byte alignment)
    size_t bytes[kMaxPeers][kMaxPeers];
    bool allgather_in_place; // allgatherv: each rank's piece already at its place in its output
    size_t sdispl(int r, int p) const
    {
        if (allgather_in_place) return rdispl(r, r);
        size_t d = 0;
        for (int q = 0; q < p; q++) d += bytes[r][q];
        return d;
    }
    size_t rdispl(int p, int r) const // where r's piece lands in p's output
    {
        size_t d = 0;
        for (int q = 0; q < r; q++) d += bytes[q][p];
        return d;
    }
    size_t in_size(int r) const { return allgather_in_place ? out_size(r) : sdispl(r, n); }
    size_t out_size(int p) const { return rdispl(p, n); }
};

unsigned char in_byte(int call, int r, size_t i) { return (unsigned char)(call * 31 + r * 101 + i * 7 + (i >> 9)); }

// Runs `calls` back to back on every rank and checks every output.
void check_calls(const std::vector<Layout> &calls, const char *what)
{
    const int n = calls[0].n;
    std::vector<std::unique_ptr<Bytes>> scratch;
    for (int r = 0; r < n; r++) {
        scratch.emplace_back(new Bytes(kDataOffset));
        std::memset(scratch.back()->p, 0, kDataOffset);
    }
    std::vector<std::vector<std::unique_ptr<Bytes>>> in(n), out(n);
    for (size_t c = 0; c < calls.size(); c++) {
        const Layout &l = calls[c];
        for (int r = 0; r < n; r++) {
            out[r].emplace_back(new Bytes(l.offset + l.out_size(r) + kGuard));
            std::memset(out[r][c]->p, 0xee, out[r][c]->n);
            in[r].emplace_back(new Bytes(l.offset + l.in_size(r)));
            Bytes &src = l.allgather_in_place ? *out[r][c] : *in[r][c];
            for (size_t i = 0; i < l.bytes[r][0]; i++) // allgatherv: the same piece to everyone
                if (l.allgather_in_place) src.p[l.offset + l.sdispl(r, 0) + i] = (char)in_byte((int)c, r, i);
            if (!l.allgather_in_place)
                for (size_t i = 0; i < l.in_size(r); i++) src.p[l.offset + i] = (char)in_byte((int)c, r, i);
        }
    }
    int error[kMaxPeers] = {};
    run_calls_in_order(n, (int)calls.size(), kGrid, kBlock, [&](int r, int c) {
        const Layout &l = calls[c];
        PeerArgs a{};
        a.algo = PeerAlgo::VectorPush;
        a.rank = r;
        a.nranks = n;
        a.epoch0 = (uint64_t)c + 1;
        a.timeout_ns = 30ull * 1000 * 1000 * 1000; // a broken kernel fails, not hangs
        a.error = &error[r];
        const char *src = (l.allgather_in_place ? out[r][c]->p : in[r][c]->p) + l.offset;
        for (int p = 0; p < n; p++) {
            a.scratch[p] = scratch[p]->p;
            a.peer_src[p] = src + l.sdispl(r, p);
            a.peer_dst[p] = out[p][c]->p + l.offset + l.rdispl(p, r);
            a.vbytes[p] = l.bytes[r][p];
        }
        vector_push(a);
    });
    for (int r = 0; r < n; r++) CHECK(error[r] == 0);
    int wrong = 0;
    for (size_t c = 0; c < calls.size(); c++) {
        const Layout &l = calls[c];
        for (int p = 0; p < n; p++) {
            const unsigned char *o = reinterpret_cast<const unsigned char *>(out[p][c]->p);
            for (size_t i = 0; i < out[p][c]->n; i++) {
                unsigned char want = 0xee;
                if (i >= l.offset && i < l.offset + l.out_size(p)) {
                    int r = 0;
                    while (i - l.offset >= l.rdispl(p, r + 1)) r++;
                    const size_t k = i - l.offset - l.rdispl(p, r);
                    want = in_byte((int)c, r, l.allgather_in_place ? k : l.sdispl(r, p) + k);
                }
                if (o[i] != want && wrong++ < 5)
                    std::fprintf(stderr, "%s: %d ranks, call %zu, rank %d's output byte %zu is %#x, not %#x\n", what, n,
                                 c, p, i, o[i], want);
            }
        }
    }
    CHECK(wrong == 0);
}

Layout equal_blocks(int n, size_t block, size_t offset)
{
    Layout l{n, offset, {}, false};
    for (int r = 0; r < n; r++)
        for (int p = 0; p < n; p++) l.bytes[r][p] = block;
    return l;
}

// Alltoallv: a size per (r, p), some empty, multiples of `unit` bytes.
Layout uneven(int n, size_t unit, size_t offset, int seed)
{
    Layout l{n, offset, {}, false};
    for (int r = 0; r < n; r++)
        for (int p = 0; p < n; p++) l.bytes[r][p] = unit * (size_t)((r * 7 + p * 3 + seed) % 9);
    return l;
}

Layout allgatherv_in_place(int n, size_t unit)
{
    Layout l{n, 0, {}, true};
    for (int r = 0; r < n; r++)
        for (int p = 0; p < n; p++) l.bytes[r][p] = unit * (size_t)(r + 2);
    return l;
}

} // namespace

int main()
{
    for (int n = 2; n <= 4; n++) {
        for (size_t block : {(size_t)16, (size_t)48, (size_t)1024, (size_t)4096 + 16}) // paired with the first peer
            check_calls({equal_blocks(n, block, 0)}, "alltoall");
        check_calls({equal_blocks(n, 1024, 4)}, "alltoall, 4-byte aligned");  // one by one, in words
        check_calls({equal_blocks(n, 1001, 0)}, "alltoall, odd blocks");     // one by one, in bytes
        for (int seed = 0; seed < 3; seed++) {
            check_calls({uneven(n, 64, 0, seed)}, "alltoallv");   // paired where own and first piece are there
            check_calls({uneven(n, 12, 0, seed)}, "alltoallv, 4-byte pieces");
        }
        check_calls({allgatherv_in_place(n, 32)}, "allgatherv in place"); // our own piece stays
        check_calls({equal_blocks(n, 256, 0), uneven(n, 16, 0, 1), equal_blocks(n, 33, 8), uneven(n, 64, 0, 2)},
                    "back to back");
    }
    std::printf("vector_push: %d failed\n", failures);
    return failures ? 1 : 0;
}
