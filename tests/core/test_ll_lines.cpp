// The flag-in-data (LL) kernels of kernels/*_ll.cuh, run on the host: one
// std::thread per rank plays its GPU, the ranks' scratch is host memory,
// and the line store/load are 8-byte atomics per half, which is the promise
// gpu_store_line/gpu_load_line make on the GPU. Checks the slot layout,
// in-place calls, tails and unaligned buffers, the reduction order, and that
// a missing peer gives a timeout error instead of a hang, and that senders
// which wait for nothing may run calls ahead of a late receiver when they
// wait for its acknowledgements (the queued and stream-ordered modes).
//
// Each simulated GPU runs its threads one after another, so every thread
// here handles at most one line (grid x block >= the lines or items): then a
// thread's wait is always for a line that a peer thread of no higher index
// sends before it waits itself, and the simulation cannot deadlock.
#include "kernel_host_shim.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <thread>
#include <type_traits>
#include <vector>

#include "peer_kernels.cuh"

#include "kernel_host_atomics.h"

using namespace gpucoll;

#include "../common/check.h"

void gpu_store_line(uint4 *p, uint4 v)
{
    uint64_t *q = reinterpret_cast<uint64_t *>(p);
    __atomic_store_n(q, (uint64_t)v.y << 32 | v.x, __ATOMIC_RELEASE);
    __atomic_store_n(q + 1, (uint64_t)v.w << 32 | v.z, __ATOMIC_RELEASE);
}
uint4 gpu_load_line(const uint4 *p)
{
    // The kernels spin on this; the "GPUs" here share two cores with the
    // ranks that would end the spin.
    std::this_thread::yield();
    const uint64_t *q = reinterpret_cast<const uint64_t *>(p);
    uint64_t lo = __atomic_load_n(q, __ATOMIC_ACQUIRE), hi = __atomic_load_n(q + 1, __ATOMIC_ACQUIRE);
    return uint4{(unsigned)lo, (unsigned)(lo >> 32), (unsigned)hi, (unsigned)(hi >> 32)};
}
// The give-up word (kernels/peer_sync.cuh: must_give_up).
uint64_t gpu_load_acquire_sys(const uint64_t *p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
// The LL acknowledgements, which a sender may spin on.
uint64_t gpu_load_relaxed_sys(const uint64_t *p)
{
    std::this_thread::yield();
    return __atomic_load_n(p, __ATOMIC_RELAXED);
}

namespace {

constexpr size_t kHalf = 4096;
constexpr size_t kLLMax = 4096;

// The ranks' scratch (flags, two halves, LL area) and their error flags.
struct World {
    int n;
    std::vector<std::vector<uint64_t>> scratch; // uint64_t: 16-byte aligned by malloc
    int error[kMaxPeers] = {};
    uint32_t flag = 0;
    explicit World(int nranks) : n(nranks)
    {
        size_t bytes = kDataOffset + 2 * kHalf + ll_area_bytes(kLLMax);
        scratch.assign(n, std::vector<uint64_t>(bytes / 8, 0));
    }
    PeerArgs args(int rank, PeerAlgo algo, const void *src, void *dst, size_t count, int root)
    {
        PeerArgs a{};
        a.algo = algo;
        a.rank = rank;
        a.nranks = n;
        a.root = root;
        a.src = static_cast<const char *>(src);
        a.dst = static_cast<char *>(dst);
        a.count = count;
        a.half_bytes = kHalf;
        a.ll_slot_bytes = ll_slot_bytes_for(kLLMax);
        a.epoch0 = flag;
        for (int r = 0; r < n; r++) a.scratch[r] = reinterpret_cast<char *>(scratch[r].data());
        a.timeout_ns = 10ull * 1000 * 1000 * 1000;
        a.error = &error[rank];
        return a;
    }
};

// Runs one LL call on every rank at once; `items` bounds the lines or
// (peer, line) items a rank handles, so that one thread takes at most one.
template <class Kernel>
void run(World &w, int nranks_running, size_t items, Kernel body)
{
    if (++w.flag == 0) ++w.flag;
    const unsigned block = 32;
    unsigned grid = (unsigned)((items + block - 1) / block);
    if (grid == 0) grid = 1;
    std::vector<std::thread> ths;
    for (int r = 0; r < nranks_running; r++)
        ths.emplace_back([&, r] { kernel_host_launch(grid, block, [&] { body(r); }); });
    for (auto &t : ths) t.join();
}

// Deterministic inputs with every bit pattern class a reduction could trip on.
template <class T> T value(int rank, size_t i)
{
    if constexpr (sizeof(T) == 2) return T{(uint16_t)(0x3f80 + ((rank * 7 + i * 3) % 97))}; // bf16 around 1..2
    else return (T)((double)((rank + 1) * 3 + (i % 13)) * (std::is_floating_point<T>::value ? 0.37 : 1.0));
}

template <class T> bool same(T a, T b) { return std::memcmp(&a, &b, sizeof(T)) == 0; }

// op over ranks in rank order, accumulated the way the kernels accumulate.
template <class T, class Op> T reference(int n, size_t i, int block_of = 0, size_t count = 0)
{
    using A = Acc<T>;
    auto in = [&](int r) { return value<T>(r, i + block_of * count); };
    typename A::type acc = A::load(in(0));
    for (int r = 1; r < n; r++) acc = Op::apply(acc, A::load(in(r)));
    return A::store(acc);
}

// Rank r's input: `elems` values at `offset` into a buffer with 16 spare bytes.
template <class T> void fill_input(std::vector<char> &buf, int r, size_t elems, size_t offset)
{
    for (size_t i = 0; i < elems; i++) {
        T v = value<T>(r, i);
        std::memcpy(buf.data() + offset + i * sizeof(T), &v, sizeof v);
    }
}

template <class T, class Op> void check_allreduce(int n, size_t count, size_t offset, bool in_place)
{
    World w(n);
    std::vector<std::vector<char>> src(n), dst(n);
    for (int r = 0; r < n; r++) {
        src[r].assign(count * sizeof(T) + 16, 0);
        dst[r].assign(count * sizeof(T) + 16, 0x5a);
        fill_input<T>(src[r], r, count, offset);
    }
    for (int call = 0; call < 3; call++) { // both parities, then the first again
        run(w, n, ll_lines(count * sizeof(T)), [&](int r) {
            char *s = src[r].data() + offset;
            char *d = in_place ? s : dst[r].data() + offset;
            allreduce_ll<T, Op>(w.args(r, PeerAlgo::AllreduceLL, s, d, count, 0));
        });
        for (int r = 0; r < n; r++) {
            const char *d = (in_place ? src[r].data() : dst[r].data()) + offset;
            for (size_t i = 0; i < count; i++) {
                T got;
                std::memcpy(&got, d + i * sizeof(T), sizeof got);
                if (!same(got, reference<T, Op>(n, i))) {
                    CHECK(false, "allreduce size %zu n %d count %zu off %zu in place %d call %d rank %d elem %zu",
                          sizeof(T), n, count, offset, in_place, call, r, i);
                    return;
                }
            }
            if (!in_place) CHECK((unsigned char)dst[r][offset + count * sizeof(T)] == 0x5a, "allreduce wrote past the end");
            CHECK(w.error[r] == 0);
        }
        if (in_place) // the next call reduces the inputs again
            for (int r = 0; r < n; r++) fill_input<T>(src[r], r, count, offset);
    }
}

template <class T, class Op> void check_reduce_scatter(int n, size_t count, size_t offset, bool in_place)
{
    World w(n);
    std::vector<std::vector<char>> src(n), dst(n);
    for (int r = 0; r < n; r++) {
        src[r].assign(n * count * sizeof(T) + 16, 0);
        dst[r].assign(count * sizeof(T) + 16, 0x5a);
        fill_input<T>(src[r], r, n * count, offset);
    }
    run(w, n, ll_lines(count * sizeof(T)), [&](int r) {
        char *s = src[r].data() + offset;
        char *d = in_place ? s : dst[r].data() + offset;
        reduce_scatter_block_ll<T, Op>(w.args(r, PeerAlgo::ReduceScatterBlockLL, s, d, count, 0));
    });
    for (int r = 0; r < n; r++) {
        const char *d = (in_place ? src[r].data() : dst[r].data()) + offset;
        for (size_t i = 0; i < count; i++) {
            T got;
            std::memcpy(&got, d + i * sizeof(T), sizeof got);
            if (!same(got, reference<T, Op>(n, i, r, count))) {
                CHECK(false, "reduce_scatter size %zu n %d count %zu off %zu in place %d rank %d elem %zu", sizeof(T),
                      n, count, offset, in_place, r, i);
                return;
            }
        }
        CHECK(w.error[r] == 0);
    }
}

template <class T, class Op> void check_reduce(int n, size_t count, size_t offset, int root, bool in_place)
{
    World w(n);
    std::vector<std::vector<char>> src(n), dst(n);
    for (int r = 0; r < n; r++) {
        src[r].assign(count * sizeof(T) + 16, 0);
        dst[r].assign(count * sizeof(T) + 16, 0x5a);
        fill_input<T>(src[r], r, count, offset);
    }
    for (int call = 0; call < 2; call++) { // both parities
        run(w, n, ll_lines(count * sizeof(T)), [&](int r) {
            char *s = src[r].data() + offset;
            char *d = in_place && r == root ? s : dst[r].data() + offset;
            reduce_ll<T, Op>(w.args(r, PeerAlgo::ReduceLL, s, d, count, root));
        });
        for (int r = 0; r < n; r++) {
            const char *d = (in_place && r == root ? src[r].data() : dst[r].data()) + offset;
            bool ok = true;
            for (size_t i = 0; i < count && ok; i++) {
                T got;
                std::memcpy(&got, d + i * sizeof(T), sizeof got);
                ok = r == root ? same(got, reference<T, Op>(n, i)) : (unsigned char)d[i * sizeof(T)] == 0x5a;
            }
            CHECK(ok, "reduce size %zu n %d count %zu off %zu root %d in place %d call %d rank %d", sizeof(T), n,
                  count, offset, root, in_place, call, r);
            CHECK(w.error[r] == 0);
        }
        if (in_place) fill_input<T>(src[root], root, count, offset);
    }
}

unsigned char byte_of(int rank, size_t i) { return (unsigned char)(rank * 31 + i * 7 + 1); }

void check_allgather(int n, size_t bytes, size_t offset, bool in_place)
{
    World w(n);
    std::vector<std::vector<char>> src(n), dst(n);
    for (int r = 0; r < n; r++) {
        src[r].assign(bytes + 16, 0);
        dst[r].assign(n * bytes + 16, 0x5a);
        char *own = in_place ? dst[r].data() + offset + r * bytes : src[r].data() + offset;
        for (size_t i = 0; i < bytes; i++) own[i] = (char)byte_of(r, i);
    }
    size_t items = (size_t)(n > 1 ? n - 1 : 1) * ll_lines(bytes);
    run(w, n, items, [&](int r) {
        char *d = dst[r].data() + offset;
        const char *s = in_place ? d + r * bytes : src[r].data() + offset;
        allgather_ll(w.args(r, PeerAlgo::AllgatherLL, s, d, bytes, 0));
    });
    for (int r = 0; r < n; r++) {
        const unsigned char *d = reinterpret_cast<const unsigned char *>(dst[r].data() + offset);
        bool ok = true;
        for (int p = 0; p < n && ok; p++)
            for (size_t i = 0; i < bytes && ok; i++) ok = d[p * bytes + i] == byte_of(p, i);
        CHECK(ok, "allgather n %d bytes %zu off %zu in place %d rank %d", n, bytes, offset, in_place, r);
        CHECK(d[n * bytes] == 0x5a, "allgather wrote past the end");
        CHECK(w.error[r] == 0);
    }
}

void check_bcast(int n, size_t bytes, size_t offset, int root)
{
    World w(n);
    std::vector<std::vector<char>> buf(n);
    for (int r = 0; r < n; r++) {
        buf[r].assign(bytes + 16, 0x5a);
        if (r == root)
            for (size_t i = 0; i < bytes; i++) buf[r][offset + i] = (char)byte_of(root, i);
    }
    size_t items = (size_t)(n > 1 ? n - 1 : 1) * ll_lines(bytes);
    run(w, n, items, [&](int r) {
        char *b = buf[r].data() + offset;
        bcast_ll(w.args(r, PeerAlgo::BcastLL, b, b, bytes, root));
    });
    for (int r = 0; r < n; r++) {
        bool ok = true;
        for (size_t i = 0; i < bytes && ok; i++) ok = (unsigned char)buf[r][offset + i] == byte_of(root, i);
        CHECK(ok, "bcast n %d bytes %zu off %zu root %d rank %d", n, bytes, offset, root, r);
        CHECK((unsigned char)buf[r][offset + bytes] == 0x5a, "bcast wrote past the end");
        CHECK(w.error[r] == 0);
    }
}

void check_alltoall(int n, size_t bytes, size_t offset)
{
    World w(n);
    std::vector<std::vector<char>> src(n), dst(n);
    for (int r = 0; r < n; r++) {
        src[r].assign(n * bytes + 16, 0);
        dst[r].assign(n * bytes + 16, 0x5a);
        for (size_t i = 0; i < n * bytes; i++) src[r][offset + i] = (char)byte_of(r, i);
    }
    size_t items = (size_t)(n > 1 ? n - 1 : 1) * ll_lines(bytes);
    for (int call = 0; call < 2; call++) {
        run(w, n, items, [&](int r) {
            alltoall_ll(w.args(r, PeerAlgo::AlltoallLL, src[r].data() + offset, dst[r].data() + offset, bytes, 0));
        });
        for (int r = 0; r < n; r++) {
            const unsigned char *d = reinterpret_cast<const unsigned char *>(dst[r].data() + offset);
            bool ok = true; // block p of rank r's output is block r of rank p's input
            for (int p = 0; p < n && ok; p++)
                for (size_t i = 0; i < bytes && ok; i++) ok = d[p * bytes + i] == byte_of(p, r * bytes + i);
            CHECK(ok, "alltoall n %d bytes %zu off %zu call %d rank %d", n, bytes, offset, call, r);
            CHECK(d[n * bytes] == 0x5a, "alltoall wrote past the end");
            CHECK(w.error[r] == 0);
        }
        for (int r = 0; r < n; r++) std::fill(dst[r].begin(), dst[r].end(), (char)0x5a);
    }
}

// A one-way LL kind run as queued calls: the senders (bcast's root,
// reduce's non-roots) make kCalls calls while the receiver has not started
// any. Their third call's lines would go where their first call's still wait
// to be read; with the acknowledgements (ll_acknowledge at each call's start,
// as the dispatchers do; ll_wait_started at a one-way call's end) no
// sender's call ends before the receiver has started it. Without them the
// receiver finds its first call's lines overwritten and times out. Every
// call must arrive intact.
void check_one_way_ahead(int n, size_t count, bool reduce)
{
    constexpr int kCalls = 4;
    const int root = reduce ? n - 1 : 0;
    const size_t bytes = reduce ? count * sizeof(int32_t) : count, lines = ll_lines(bytes);
    World w(n);
    auto input = [&](int r, int c, size_t i) { return (int32_t)((r + 1) * 1000 + c * 7 + (int)i); };
    std::vector<std::vector<char>> src(n * kCalls), dst(n * kCalls);
    for (int r = 0; r < n; r++)
        for (int c = 0; c < kCalls; c++) {
            std::vector<char> &s = src[r * kCalls + c];
            s.assign(bytes + 16, 0);
            for (size_t i = 0; i < count; i++) {
                if (reduce) {
                    int32_t v = input(r, c, i);
                    std::memcpy(s.data() + i * 4, &v, 4);
                } else {
                    s[i] = (char)byte_of(r + c, i);
                }
            }
            dst[r * kCalls + c].assign(bytes + 16, 0x5a);
        }
    const int late = reduce ? root : n - 1; // the receiver that comes last
    auto rank_calls = [&](int r) {
        if (r == late) std::this_thread::sleep_for(std::chrono::milliseconds(50));
        for (int c = 0; c < kCalls; c++) {
            PeerArgs a = w.args(r, reduce ? PeerAlgo::ReduceLL : PeerAlgo::BcastLL, src[r * kCalls + c].data(),
                                dst[r * kCalls + c].data(), count, root);
            a.epoch0 = (uint64_t)c + 1;
            a.ll_wait_acks = 1;
            a.timeout_ns = 5ull * 1000 * 1000 * 1000;
            const size_t items = r == root && !reduce ? (size_t)(n - 1) * lines : lines;
            // The acknowledgements first, as on a GPU, where block 0's threads
            // store them together before any thread of the call waits.
            const unsigned grid = (unsigned)((items + 31) / 32);
            kernel_host_launch(grid, 32, [&] { ll_acknowledge(a); });
            kernel_host_launch(grid, 32, [&] {
                if (reduce) reduce_ll<int32_t, OpSum>(a);
                else bcast_ll(a);
            });
        }
    };
    std::vector<std::thread> ths;
    for (int r = 0; r < n; r++) ths.emplace_back(rank_calls, r);
    for (auto &t : ths) t.join();
    for (int r = 0; r < n; r++) {
        CHECK(w.error[r] == 0, "one-way %s n %d count %zu: rank %d raised %d", reduce ? "reduce" : "bcast", n, count, r,
              w.error[r]);
        for (int c = 0; c < kCalls; c++) {
            const char *d = dst[r * kCalls + c].data();
            bool ok = true;
            for (size_t i = 0; i < count && ok; i++) {
                if (reduce && r == root) {
                    int32_t got, want = 0;
                    std::memcpy(&got, d + i * 4, 4);
                    for (int p = 0; p < n; p++) want += input(p, c, i);
                    ok = got == want;
                } else if (!reduce && r != root) {
                    ok = (unsigned char)d[i] == byte_of(root + c, i);
                }
            }
            CHECK(ok, "one-way %s n %d count %zu: rank %d call %d", reduce ? "reduce" : "bcast", n, count, r, c);
        }
    }
}

} // namespace

int main()
{
    const size_t counts[] = {1, 2, 3, 5, 7, 8, 9, 15, 16, 17, 33, 100, 257};
    for (int n : {1, 2, 3, 4, 8}) {
        for (size_t c : counts) {
            for (bool ip : {false, true}) {
                check_allreduce<float, OpSum>(n, c, 0, ip);
                check_allreduce<float, OpSum>(n, c, 4, ip); // 4- but not 8-byte aligned
                check_allreduce<double, OpProd>(n, c, 8, ip);
                check_allreduce<int8_t, OpMax>(n, c, 3, ip);
                check_allreduce<uint16_t, OpBxor>(n, c, 2, ip);
                check_allreduce<bf16_t, OpSum>(n, c, 6, ip); // fp32 accumulation, one rounding
                check_reduce_scatter<float, OpSum>(n, c, 0, ip);
                check_reduce_scatter<int32_t, OpMin>(n, c, 4, ip);
                check_reduce_scatter<uint8_t, OpSum>(n, c, 1, ip);
                check_reduce<float, OpSum>(n, c, 0, 0, ip);
                check_reduce<uint16_t, OpMin>(n, c, 2, n - 1, ip);
            }
            for (size_t bytes : {c, c * 4 + 1}) {
                check_allgather(n, bytes, 0, false);
                check_allgather(n, bytes, 3, false);
                check_allgather(n, bytes, 0, true);
                check_allgather(n, bytes, 5, true);
                check_bcast(n, bytes, 0, 0);
                check_bcast(n, bytes, 1, n - 1);
                check_alltoall(n, bytes, 0);
                check_alltoall(n, bytes, 3);
            }
        }
    }
    // The largest call the area takes, on the most ranks.
    check_allreduce<float, OpSum>(kMaxPeers, kLLMax / 4, 0, false);
    check_allgather(kMaxPeers, kLLMax, 0, true);
    check_alltoall(kMaxPeers, kLLMax, 0);

    for (int n : {2, 3, 4})
        for (size_t count : {(size_t)1, (size_t)100, (size_t)1000}) {
            check_one_way_ahead(n, count, false);
            check_one_way_ahead(n, count, true);
        }

    // A peer that never comes: a bounded wait, the error flag, no hang.
    {
        World w(2);
        std::vector<float> s(64, 1.0f), d(64, 0.0f);
        run(w, 1, 64, [&](int r) {
            PeerArgs a = w.args(r, PeerAlgo::AllreduceLL, s.data(), d.data(), 64, 0);
            a.timeout_ns = 20 * 1000 * 1000; // 20 ms
            allreduce_ll<float, OpSum>(a);
        });
        // Returning at all shows the wait is bounded (ctest's timeout catches a hang).
        CHECK(w.error[0] == kErrorTimeout, "a missing peer did not raise the error flag");
        // Rank 0 gave up, so rank 1's next call, which waits for rank 0's
        // lines, ends at once (it would wait out its 10 s on every thread).
        if (++w.flag == 0) ++w.flag;
        kernel_host_launch(2, 32, [&] {
            PeerArgs a = w.args(1, PeerAlgo::AllreduceLL, s.data(), d.data(), 64, 0);
            allreduce_ll<float, OpSum>(a);
        });
        CHECK(w.error[1] == kErrorPeerGaveUp, "a rank whose peer gave up kept waiting, or said something else");
    }
    // A call the host takes back (posted to a resident kernel before the
    // ranks' agreement, which then failed: ResidentMailbox::withdrawn): the
    // wait for the peer that never sends ends with no error raised and
    // nothing written; the number of another call does not end it.
    {
        World w(2);
        ResidentMailbox mb{};
        mb.withdrawn = 6; // the call before
        std::vector<float> s(64, 1.0f), d(64, 0.0f);
        std::thread host([&] {
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
            __atomic_store_n(&mb.withdrawn, 7, __ATOMIC_RELEASE);
        });
        run(w, 1, 64, [&](int r) {
            PeerArgs a = w.args(r, PeerAlgo::AllreduceLL, s.data(), d.data(), 64, 0);
            a.resident.mailbox = &mb;
            a.resident.seq = 7;
            allreduce_ll<float, OpSum>(a);
        });
        const uint64_t when = __atomic_load_n(&mb.withdrawn, __ATOMIC_ACQUIRE);
        host.join();
        CHECK(when == 7, "the wait ended before the call was withdrawn (another call's number ended it)");
        CHECK(w.error[0] == 0, "a withdrawn call raised the error flag (%d)", w.error[0]);
        bool untouched = true;
        for (float v : d) untouched &= v == 0.0f;
        CHECK(untouched, "a withdrawn allreduce wrote output without its peer's lines");
    }
    std::printf("ll_lines: %d failed\n", failures);
    return failures ? 1 : 0;
}
