// The layout math of the zero-copy vector kinds (vector_piece,
// reduce_scatter_block_of), replayed on host memory: every rank's pieces are
// copied (or reduced) the way the kernels do, and each output is compared
// with what MPI defines, for 1-8 ranks, uneven counts, empty blocks, gaps,
// displacements out of rank order, and allgatherv in place.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "algo_select.hpp"

using namespace gpucoll;

#include "../common/check.h"

namespace {

// A byte every (rank, index) pair makes its own.
uint8_t val(int r, size_t i) { return (uint8_t)(r * 37 + i * 11 + 1); }

// displs[p] (elements) for blocks of counts[p]: in reverse rank order with
// gaps, so that no offset equals a running sum by luck.
void place(const std::vector<size_t> &counts, int salt, std::vector<size_t> &displs, size_t *total)
{
    int n = (int)counts.size();
    displs.assign(n, 0);
    size_t off = 3;
    for (int p = n - 1; p >= 0; p--) {
        displs[p] = off;
        off += counts[p] + (size_t)((p + salt) % 3);
    }
    *total = off + 2;
}

// Uneven counts with rank 1 empty, and their layout.
void layout(int n, int salt, std::vector<size_t> &counts, std::vector<size_t> &displs, size_t *total)
{
    counts.assign(n, 0);
    for (int p = 0; p < n; p++) counts[p] = p == 1 ? 0 : (size_t)(p * 5 + salt) % 9 + 1;
    place(counts, salt, displs, total);
}

void allgatherv(int n, size_t elt, bool in_place)
{
    std::vector<size_t> counts, displs;
    size_t total;
    layout(n, 2, counts, displs, &total);
    std::vector<std::vector<uint8_t>> in(n), out(n, std::vector<uint8_t>(total * elt, 0xee));
    for (int r = 0; r < n; r++) {
        in[r].resize(counts[r] * elt);
        for (size_t i = 0; i < in[r].size(); i++) in[r][i] = val(r, i);
        if (in_place) memcpy(out[r].data() + displs[r] * elt, in[r].data(), in[r].size());
    }
    gpucoll_coll_args_t a{};
    a.kind = GPUCOLL_COLL_ALLGATHERV;
    a.counts = counts.data();
    a.displs = displs.data();
    for (int r = 0; r < n; r++)
        for (int p = 0; p < n; p++) {
            Piece pc = vector_piece(a, r, p, elt, 0);
            const uint8_t *src = in_place ? out[r].data() + displs[r] * elt : in[r].data();
            bool fits = pc.dst_off + pc.bytes <= total * elt && pc.src_off + pc.bytes <= counts[r] * elt;
            CHECK(fits, "allgatherv n=%d piece %d->%d out of bounds", n, r, p);
            if (!fits) continue;
            memmove(out[p].data() + pc.dst_off, src + pc.src_off, pc.bytes);
        }
    for (int p = 0; p < n; p++)
        for (int r = 0; r < n; r++)
            for (size_t i = 0; i < counts[r] * elt; i++)
                CHECK(out[p][displs[r] * elt + i] == val(r, i), "allgatherv n=%d elt=%zu rank %d block %d byte %zu",
                      n, elt, p, r, i);
}

void alltoallv(int n, size_t elt)
{
    // What r sends p: f(r, p) elements; each rank lays out its send and
    // receive buffers its own way (a different salt per rank).
    auto f = [](int r, int p) { return (size_t)((r * 3 + p * 7) % 5); };
    std::vector<std::vector<size_t>> sc(n), sd(n), rc(n), rd(n);
    std::vector<size_t> stotal(n), rtotal(n);
    for (int r = 0; r < n; r++) {
        sc[r].resize(n);
        rc[r].resize(n);
        for (int p = 0; p < n; p++) {
            sc[r][p] = f(r, p);
            rc[r][p] = f(p, r);
        }
        place(sc[r], r, sd[r], &stotal[r]);
        place(rc[r], r + 1, rd[r], &rtotal[r]);
    }
    std::vector<std::vector<uint8_t>> in(n), out(n);
    for (int r = 0; r < n; r++) {
        in[r].resize(stotal[r] * elt);
        for (size_t i = 0; i < in[r].size(); i++) in[r][i] = val(r, i);
        out[r].assign(rtotal[r] * elt, 0xee);
    }
    for (int r = 0; r < n; r++) {
        gpucoll_coll_args_t a{};
        a.kind = GPUCOLL_COLL_ALLTOALLV;
        a.counts = sc[r].data();
        a.displs = sd[r].data();
        a.rcounts = rc[r].data();
        a.rdispls = rd[r].data();
        for (int p = 0; p < n; p++) {
            Piece pc = vector_piece(a, r, p, elt, rd[p][r]); // p publishes its rdispls
            bool fits = pc.src_off + pc.bytes <= in[r].size() && pc.dst_off + pc.bytes <= out[p].size();
            CHECK(fits, "alltoallv n=%d piece %d->%d out of bounds", n, r, p);
            if (!fits) continue;
            memcpy(out[p].data() + pc.dst_off, in[r].data() + pc.src_off, pc.bytes);
        }
    }
    for (int p = 0; p < n; p++)
        for (int r = 0; r < n; r++)
            for (size_t i = 0; i < rc[p][r] * elt; i++)
                CHECK(out[p][rd[p][r] * elt + i] == in[r][sd[r][p] * elt + i],
                      "alltoallv n=%d elt=%zu rank %d from %d byte %zu", n, elt, p, r, i);
}

void reduce_scatter(int n, bool blocked)
{
    std::vector<size_t> counts(n), displs;
    size_t total = 0;
    for (int p = 0; p < n; p++) total += counts[p] = blocked ? 6 : (p == 1 ? 0 : (size_t)(p * 3) % 7 + 1);
    gpucoll_coll_args_t a{};
    a.kind = blocked ? GPUCOLL_COLL_REDUCE_SCATTER_BLOCK : GPUCOLL_COLL_REDUCE_SCATTER;
    a.count = blocked ? counts[0] : total;
    a.counts = blocked ? nullptr : counts.data();
    size_t start = 0;
    for (int r = 0; r < n; r++) {
        size_t off, cnt;
        reduce_scatter_block_of(a, r, &off, &cnt);
        // Blocks follow each other in rank order: rank r's starts after all earlier ones.
        CHECK(off == start && cnt == counts[r], "reduce_scatter n=%d rank %d: offset %zu count %zu", n, r, off, cnt);
        start += counts[r];
    }
}

} // namespace

int main()
{
    for (int n = 1; n <= kMaxPeers; n++) {
        for (size_t elt : {(size_t)1, (size_t)4, (size_t)8}) {
            allgatherv(n, elt, false);
            allgatherv(n, elt, true);
            alltoallv(n, elt);
        }
        reduce_scatter(n, false);
        reduce_scatter(n, true);
    }
    std::printf("vector_pieces: %d failed\n", failures);
    return failures ? 1 : 0;
}
