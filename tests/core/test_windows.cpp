// Registered windows without a GPU: the book that places a call's buffers in
// this rank's windows (core/windows.hpp), the descriptors and their
// resolution against a table (kernels/windows.h), and the rule the kernels
// follow (kernels/windows.cuh): every rank resolves every rank's posts with
// its own table, and all must reach the same verdict, also for descriptors
// of a window since deregistered and its slot registered again.
#include <cstdint>
#include <cstring>
#include <vector>

#include "../common/check.h"
#include "auto_windows.hpp"
#include "windows.hpp"

using namespace gpucoll;

namespace {

struct Post {
    uint64_t src, dst, src_bytes, dst_bytes;
};

// The kernel's verdict on rank `me` for one call: all posts resolve.
bool verdict(const WindowTable &t, const std::vector<Post> &posts)
{
    for (size_t r = 0; r < posts.size(); r++)
        if (!window_resolve(t, (int)r, posts[r].src, posts[r].src_bytes) ||
            !window_resolve(t, (int)r, posts[r].dst, posts[r].dst_bytes))
            return false;
    return true;
}

// A team of n ranks, each with its own book and its own table (its peers'
// windows at the addresses it mapped them to), kept as windows.cpp keeps them.
struct Team {
    int n;
    std::vector<WindowBook> book;
    std::vector<WindowTable> table;
    explicit Team(int n_) : n(n_), book(n_), table(n_) { std::memset(table.data(), 0, sizeof(WindowTable) * n_); }
    // Every rank registers its own buffer; rank r's buffer of window w is
    // mapped by rank m at a fake address that differs per mapper.
    int add(const std::vector<char *> &bufs, const std::vector<size_t> &bytes)
    {
        const int w = book[0].free_slot();
        for (int m = 0; m < n; m++) {
            CHECK(book[m].free_slot() == w, "rank %d would take slot %d, rank 0 %d", m, book[m].free_slot(), w);
            table[m].gen[w] = book[m].add(w, bufs[m], bytes[m]);
            for (int r = 0; r < n; r++) {
                table[m].base[w][r] = r == m ? bufs[r] : bufs[r] + 0x100000000ll * (m + 1);
                table[m].bytes[w][r] = bytes[r];
            }
        }
        for (int m = 1; m < n; m++) CHECK(table[m].gen[w] == table[0].gen[w], "generations differ");
        return w;
    }
    void remove(int w)
    {
        for (int m = 0; m < n; m++) {
            book[m].remove(w);
            for (int r = 0; r < n; r++) {
                table[m].base[w][r] = nullptr;
                table[m].bytes[w][r] = 0;
            }
        }
    }
    // Every rank's verdict on a call with buffers (p[r], len[r]) and (q[r], qlen[r]).
    void expect(const std::vector<char *> &p, const std::vector<size_t> &len, const std::vector<char *> &q,
                const std::vector<size_t> &qlen, bool want, const char *what)
    {
        std::vector<Post> posts(n);
        for (int r = 0; r < n; r++)
            posts[r] = Post{book[r].describe(p[r], len[r]), book[r].describe(q[r], qlen[r]), len[r], qlen[r]};
        for (int m = 0; m < n; m++) CHECK(verdict(table[m], posts) == want, "%s: rank %d's verdict", what, m);
    }
};

void descriptors()
{
    CHECK(window_desc(-1, 1, 0) == 0);
    CHECK(window_desc(kMaxWindows, 1, 0) == 0);
    CHECK(window_desc(0, 1, kWindowOffsetMask + 1) == 0, "offsets past 1 TiB are no descriptor");
    CHECK(window_desc(0, 0, 0) != 0, "window 0 at offset 0 is a descriptor (bit 63)");
    WindowTable t{};
    char buf[256];
    t.base[5][2] = buf;
    t.bytes[5][2] = 256;
    t.gen[5] = 0x12345;
    const uint64_t d = window_desc(5, 0x12345, 16);
    CHECK(window_resolve(t, 2, d, 240) == buf + 16);
    CHECK(window_resolve(t, 2, d, 241) == nullptr, "one byte past the window");
    CHECK(window_resolve(t, 3, d, 16) == nullptr, "rank 3 has no window 5");
    CHECK(window_resolve(t, 2, window_desc(5, 0x12344, 16), 16) == nullptr, "an older generation");
    CHECK(window_resolve(t, 2, window_desc(5, 0x22345, 16), 16) == buf + 16, "generations compare in 16 bits");
    CHECK(window_resolve(t, 2, 0, 0) == nullptr, "no descriptor");
    CHECK(window_resolve(t, kMaxPeers, d, 0) == nullptr, "a rank out of range");
    CHECK(window_resolve(t, 2, window_desc(5, 0x12345, 300), 0) == nullptr, "an offset past the end");
}

void book()
{
    WindowBook b;
    CHECK(b.free_slot() == 0 && b.count() == 0);
    alignas(16) static char a[4096], c[4096];
    const uint32_t g0 = b.add(0, a, sizeof a);
    CHECK(b.free_slot() == 1 && b.count() == 1);
    CHECK(b.describe(a, sizeof a) == window_desc(0, g0, 0));
    CHECK(b.describe(a + 64, 64) == window_desc(0, g0, 64));
    CHECK(b.describe(a + 4096, 0) == window_desc(0, g0, 4096), "an empty range at the end");
    CHECK(b.describe(a + 8, 8) == 0, "not 16-byte aligned");
    CHECK(b.describe(a + 16, sizeof a) == 0, "past the end");
    CHECK(b.describe(c, 16) == 0, "not in a window");
    CHECK(b.describe(nullptr, 0) == 0);
    const uint32_t g1 = b.add(1, c, sizeof c);
    CHECK(g1 != g0 && b.describe(c + 32, 32) == window_desc(1, g1, 32));
    b.remove(0);
    CHECK(b.free_slot() == 0 && b.count() == 1 && !b.used(0) && b.used(1));
    CHECK(b.describe(a, 16) == 0, "a window removed");
    b.remove(0);
    CHECK(b.count() == 1, "removing twice counts once");
    const uint32_t g2 = b.add(0, a, 1024);
    CHECK(g2 != g0 && b.describe(a, 16) == window_desc(0, g2, 0), "the slot again, a new generation");
    for (int w = 2; w < kMaxWindows; w++) b.add(w, c, 16);
    CHECK(b.free_slot() == -1 && b.count() == kMaxWindows);
}

void team()
{
    const int n = 4;
    Team t(n);
    alignas(16) static char mem[n][1 << 16];
    std::vector<char *> base(n), half(n), small(n);
    std::vector<size_t> big(n, 1 << 16), quarter(n, 1 << 14), tiny(n, 256);
    for (int r = 0; r < n; r++) {
        base[r] = mem[r];
        half[r] = mem[r] + (1 << 15) + 16 * r; // each rank at its own offset
        small[r] = mem[r] + (1 << 15);
    }
    t.expect(base, quarter, base, quarter, false, "no window yet");
    const int w = t.add(base, big);
    t.expect(base, quarter, base, quarter, true, "every buffer in a window");
    t.expect(half, quarter, half, quarter, true, "at different offsets per rank");
    std::vector<size_t> over = quarter;
    over[2] = (1 << 15); // rank 2 reaches past its window
    t.expect(half, over, half, quarter, false, "one rank's range past its window");
    std::vector<char *> odd = half;
    odd[1] = half[1] + 8;
    t.expect(odd, quarter, half, quarter, false, "one rank's buffer unaligned");
    // A descriptor made now, kept (a persistent plan, a graph), then the
    // window deregistered and its slot registered again by smaller buffers.
    std::vector<Post> old(n);
    for (int r = 0; r < n; r++) old[r] = Post{t.book[r].describe(base[r], 4096), t.book[r].describe(base[r], 4096), 4096, 4096};
    t.remove(w);
    for (int m = 0; m < n; m++) CHECK(!verdict(t.table[m], old), "rank %d: a removed window still resolves", m);
    // The same buffers again: only the generation tells the old descriptors apart.
    const int w2 = t.add(base, big);
    CHECK(w2 == w, "the freed slot is taken again");
    for (int m = 0; m < n; m++) CHECK(!verdict(t.table[m], old), "rank %d: a stale generation resolves", m);
    t.expect(small, tiny, small, tiny, true, "the new window");
    // Sizes may differ per rank; each is checked against its own.
    std::vector<size_t> uneven = {1 << 10, 1 << 12, 1 << 14, 1 << 16};
    Team u(n);
    u.add(base, uneven);
    t.expect(small, tiny, small, tiny, true, "still");
    u.expect(base, uneven, base, uneven, true, "uneven windows, each filled");
    std::vector<size_t> too = uneven;
    too[0] = (1 << 10) + 16;
    u.expect(base, too, base, uneven, false, "rank 0 past its smaller window");
}

// Export descriptors (windows made on first use) and their rows.
void export_descriptors()
{
    CHECK(export_desc(-1, 1, 0) == 0 && export_desc(kMaxExports, 1, 0) == 0, "slots out of range");
    CHECK(export_desc(0, 0, 0) == 0, "export number 0 is no export");
    CHECK(export_desc(0, 1, kWindowOffsetMask + 1) == 0, "offsets past 1 TiB");
    for (int w = 0; w < kMaxWindows; w++)
        CHECK(!is_export_desc(window_desc(w, 0xffff, kWindowOffsetMask)), "window %d reads as an export", w);
    const uint64_t d = export_desc(kMaxExports - 1, 0x10007, 32);
    CHECK(is_export_desc(d) && export_slot(d) == kMaxExports - 1);
    WindowTable t{};
    char buf[256];
    CHECK(window_resolve(t, 1, d, 16) == nullptr, "nothing mapped yet");
    t.xbase[1][kMaxExports - 1] = buf;
    t.xbytes[1][kMaxExports - 1] = sizeof buf;
    t.xseq[1][kMaxExports - 1] = 0x10007;
    CHECK(window_resolve(t, 1, d, 224) == buf + 32);
    CHECK(window_resolve(t, 1, d, 225) == nullptr, "one byte past the allocation");
    CHECK(window_resolve(t, 2, d, 16) == nullptr, "another rank's slot");
    t.xseq[1][kMaxExports - 1] = 0x10008;
    CHECK(window_resolve(t, 1, d, 16) == nullptr, "the slot holds a later export");
    t.xseq[1][kMaxExports - 1] = 0x20007;
    CHECK(window_resolve(t, 1, d, 16) == buf + 32, "export numbers compare in 16 bits");
    t.xseq[1][kMaxExports - 1] = 0;
    CHECK(window_resolve(t, 1, d, 16) == nullptr, "an emptied slot");
    // A window and an export in one table do not shadow each other.
    t.base[kMaxExports - 1][1] = buf + 128;
    t.bytes[kMaxExports - 1][1] = 128;
    t.gen[kMaxExports - 1] = 7;
    t.xseq[1][kMaxExports - 1] = 0x10007;
    CHECK(window_resolve(t, 1, window_desc(kMaxExports - 1, 7, 0), 16) == buf + 128);
    CHECK(window_resolve(t, 1, d, 16) == buf + 32);
}

void export_slots()
{
    ExportSlots m;
    CHECK(m.free_slot() == 0 && m.find(5) == -1 && m.next_to_check() == -1, "empty");
    const uint64_t s0 = m.add(0, 5, 0x1000, 4096);
    const uint64_t s1 = m.add(1, 6, 0x9000, 8192);
    CHECK(s0 && s1 && s0 != s1 && m.find(5) == 0 && m.find(6) == 1 && m.free_slot() == 2);
    CHECK(m.base(1) == 0x9000 && m.bytes(1) == 8192 && m.id(1) == 6 && m.seq(1) == s1);
    CHECK(m.next_to_check() == 0 && m.next_to_check() == 1 && m.next_to_check() == 0, "live slots in turn");
    m.retire(0);
    CHECK(!m.live(0) && m.find(5) == -1 && m.free_slot() == 0, "a retired slot is free");
    CHECK(m.next_to_check() == 1 && m.next_to_check() == 1, "only live slots are checked");
    const uint64_t again = m.add(0, 5, 0x1000, 4096);
    CHECK(again != s0 && again != s1, "a slot taken again gets a new number, also for the same allocation id");
    for (int s = 2; s < kMaxExports; s++) m.add(s, 100 + s, 0x100000 * s, 16);
    CHECK(m.free_slot() == -1, "all slots taken");
    CHECK(!m.refused(7) && !m.refused(0), "nothing refused yet (and id 0 never)");
    m.refuse(7);
    CHECK(m.refused(7) && !m.refused(8), "a refused allocation is remembered");
    for (unsigned long long id = 1000; id < 1016; id++) m.refuse(id);
    CHECK(!m.refused(7) && m.refused(1000) && m.refused(1015), "the last 16 refused are remembered");
}

void shm_exports()
{
    static ShmExports x; // zeroed: no exports
    uint64_t seq = 1;
    IpcDesc d{};
    CHECK(read_export(x, 3, &seq, &d) && seq == 0, "an empty slot");
    IpcDesc w{};
    w.buffer_id = 42;
    w.alloc_bytes = 1 << 20;
    const uint64_t before = x.changes.load();
    publish_export(x, 3, 9, w);
    CHECK(x.changes.load() > before, "a change is counted");
    CHECK(read_export(x, 3, &seq, &d) && seq == 9 && d.buffer_id == 42 && d.alloc_bytes == (1u << 20));
    retire_export(x, 3);
    CHECK(read_export(x, 3, &seq, &d) && seq == 0, "retired");
}

// Ranks that map each other's exports at different times: each rank's own
// verdict differs, so the kernels vote (kernels/windows.cuh) and every rank
// takes the AND of all.
void voted_exports()
{
    const int n = 3;
    std::vector<WindowTable> table(n);
    std::memset(table.data(), 0, sizeof(WindowTable) * n);
    alignas(16) static char mem[n][4096];
    std::vector<Post> posts(n);
    for (int r = 0; r < n; r++) {
        posts[r] = Post{export_desc(r, 1, 64), export_desc(r, 1, 64), 1024, 1024};
        table[r].xbase[r][r] = mem[r]; // its own export
        table[r].xbytes[r][r] = sizeof mem[r];
        table[r].xseq[r][r] = 1;
    }
    auto map = [&](int m, int r) {
        table[m].xbase[r][r] = mem[r] + 0x1000000 * (m + 1);
        table[m].xbytes[r][r] = sizeof mem[r];
        table[m].xseq[r][r] = 1;
    };
    auto voted = [&]() {
        bool all = true;
        for (int m = 0; m < n; m++) all = all && verdict(table[m], posts);
        return all;
    };
    CHECK(!voted(), "nobody mapped anybody");
    map(0, 1);
    map(0, 2);
    CHECK(verdict(table[0], posts) && !verdict(table[1], posts), "rank 0 alone could: the verdicts differ");
    CHECK(!voted(), "so the vote says scratch to every rank");
    map(1, 0);
    map(1, 2);
    map(2, 0);
    map(2, 1);
    CHECK(voted(), "every rank mapped every peer");
    table[2].xseq[0][0] = 2; // rank 0's slot reused, seen by rank 2 only
    CHECK(!voted(), "a post of the old export no longer resolves on rank 2");
}

// Which calls in windows switch to zero-copy, by kind and size.
void worth()
{
    gpucoll_config_t cfg{};
    gpucoll_config_fill_defaults(&cfg);
    const size_t mib = (size_t)1 << 20, limit = GPUCOLL_DEFAULT_WINDOW_MOVE_MIN_BYTES;
    auto call = [](gpucoll_coll_kind_t kind, size_t count) {
        gpucoll_coll_args_t a{};
        a.kind = kind;
        a.count = count;
        a.dtype = GPUCOLL_FLOAT32;
        return a;
    };
    CHECK(window_worth(call(GPUCOLL_COLL_ALLREDUCE, mib), cfg, 4), "allreduce: from direct_min_bytes, as planned");
    CHECK(!window_worth(call(GPUCOLL_COLL_BCAST, limit / 4 - 4), cfg, 4), "bcast below the limit");
    CHECK(window_worth(call(GPUCOLL_COLL_BCAST, limit / 4), cfg, 4), "bcast at the limit");
    CHECK(!window_worth(call(GPUCOLL_COLL_BCAST, limit / 4), cfg, 2), "bcast, 2 ranks: not at the limit");
    CHECK(window_worth(call(GPUCOLL_COLL_BCAST, 2 * limit), cfg, 2), "bcast, 2 ranks: from 8 times it");
    CHECK(!window_worth(call(GPUCOLL_COLL_BCAST, 2 * limit - 4), cfg, 2), "bcast, 2 ranks: just below");
    CHECK(window_worth(call(GPUCOLL_COLL_ALLGATHER, limit / 16), cfg, 4), "allgather: all ranks' blocks count");
    CHECK(!window_worth(call(GPUCOLL_COLL_ALLGATHER, limit / 16), cfg, 2), "allgather, 2 ranks: half as much");
    // Their zero-copy candidates start where the blocking call's do (zero_copy_candidate).
    CHECK(window_worth(call(GPUCOLL_COLL_ALLTOALL, mib / 16), cfg, 4), "alltoall: as planned");
    CHECK(window_worth(call(GPUCOLL_COLL_REDUCE_SCATTER_BLOCK, mib / 16), cfg, 4), "reduce_scatter_block: as planned");
    CHECK(!window_worth(call(GPUCOLL_COLL_ALLTOALL, mib / 8), cfg, 2), "alltoall, 2 ranks: not at direct_min_bytes");
    CHECK(window_worth(call(GPUCOLL_COLL_REDUCE_SCATTER_BLOCK, 2 * mib), cfg, 2), "reduce_scatter_block, 2 ranks: from 4 times it");
    CHECK(!window_worth(call(GPUCOLL_COLL_REDUCE_SCATTER_BLOCK, 2 * mib - 4), cfg, 2), "reduce_scatter_block, 2 ranks: just below");
    CHECK(window_worth(call(GPUCOLL_COLL_REDUCE, mib / 4), cfg, 4), "reduce: as planned");
    CHECK(!window_worth(call(GPUCOLL_COLL_ALLGATHERV, limit), cfg, 4), "the vector kinds have no windows");
    CHECK(!window_worth(call(GPUCOLL_COLL_ALLTOALLV, limit), cfg, 4), "nor alltoallv");
    cfg.window_move_min_bytes = mib;
    CHECK(window_worth(call(GPUCOLL_COLL_BCAST, mib / 4), cfg, 4), "the parameter moves the limit");
}

} // namespace

int main()
{
    worth();
    descriptors();
    book();
    team();
    export_descriptors();
    export_slots();
    shm_exports();
    voted_exports();
    std::printf("%s\n", failures ? "test_windows: FAILED" : "test_windows: passed");
    return failures ? 1 : 0;
}
