// The barrier-based scratch kernels (run_steps of kernels/*.cuh) run on the
// host: every GPU thread of every rank is a std::thread, __syncthreads a
// barrier of its block, the ranks' scratch host memory, and the flags
// acquire/release atomics, which is what the kernels ask of the GPU. A rank
// runs its calls one after another with all its threads done between two
// (stream order), while other ranks may still be in an earlier call: so a
// rank that runs ahead (bcast_forward's root) is caught if it writes where
// a peer still reads. Checks the results of many steps per call (scratch
// halves far smaller than the messages), tails, every root, 2-4 ranks,
// aligned and unaligned buffers, and calls back to back.
//
// Then the two-shot allreduce, alone and as two communicators' kernels on
// every rank, launched in the other order on odd ranks, where a rank's SMs
// hold fewer blocks than both grids (a gate admits blocks in launch order):
// each rank's first kernel waits for a peer's second, which must make
// progress with the blocks that find room (the scratch two-shot used to
// wait for every block of every rank there and deadlocked on 4 x H200).
// bcast_forward, crossed the same way, must too, and the two-shot reduce
// (every root; the other ranks' outputs untouched).
#include "kernel_host_shim.h"

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "peer_kernels.cuh"

#include "kernel_host_atomics.h"
#include "kernel_host_threads.h"

using namespace gpucoll;

#include "../common/check.h"

namespace {

constexpr size_t kHalf = 256; // bytes per scratch half: a call of a few KiB takes many steps
constexpr unsigned kGrid = 3, kBlock = 4;

using Buf = HostBytes;

// One call of a sequence: what every rank passes.
struct Call {
    PeerAlgo algo;
    size_t bytes;
    int root;
    size_t offset; // into the buffers: 0 keeps 16-byte alignment
};

struct World {
    int n;
    std::vector<std::unique_ptr<Buf>> scratch;
    int error[kMaxPeers] = {};
    explicit World(int nranks) : n(nranks)
    {
        for (int r = 0; r < n; r++) {
            scratch.emplace_back(new Buf(kDataOffset + 2 * kHalf));
            std::memset(scratch.back()->p, 0, scratch.back()->n);
        }
    }
};

unsigned char input_byte(int call, size_t i) { return (unsigned char)(call * 37 + i * 11 + (i >> 8)); }

// Runs `calls` on every rank, each rank's threads all done with call c
// before any starts c + 1; rank r's buffers for call c are bufs[r][c].
void run(World &w, const std::vector<Call> &calls, std::vector<std::vector<std::unique_ptr<Buf>>> &bufs)
{
    std::vector<uint64_t> epoch0(calls.size());
    uint64_t e = 1;
    for (size_t c = 0; c < calls.size(); c++) {
        epoch0[c] = e;
        const size_t chunk = kHalf; // bytes: one area in all (areas_per_rank 0)
        e += (calls[c].bytes + chunk - 1) / chunk;
    }
    run_calls_in_order(w.n, (int)calls.size(), kGrid, kBlock, [&](int r, int c) {
        const Call &call = calls[c];
        PeerArgs a{};
        a.algo = call.algo;
        a.rank = r;
        a.nranks = w.n;
        a.root = call.root;
        a.src = bufs[r][c]->p + call.offset;
        a.dst = bufs[r][c]->p + call.offset; // bcast: in place everywhere
        a.count = call.bytes;
        a.chunk = kHalf;
        a.half_bytes = kHalf;
        a.epoch0 = epoch0[c];
        for (int p = 0; p < w.n; p++) a.scratch[p] = w.scratch[p]->p;
        a.timeout_ns = 30ull * 1000 * 1000 * 1000; // a broken kernel fails, not hangs
        a.error = &w.error[r];
        a.vector_ok = call.offset % 16 == 0;
        if (call.algo == PeerAlgo::BcastForward) run_steps<bcast_forward_step>(a);
        else run_steps<bcast_step>(a);
    });
}

// Every rank's buffer after a sequence of bcasts: the root's input, and
// nothing written before or after the message.
void check_bcasts(int nranks, const std::vector<Call> &calls, const char *what)
{
    World w(nranks);
    std::vector<std::vector<std::unique_ptr<Buf>>> bufs(nranks);
    const size_t guard = 32;
    for (int r = 0; r < nranks; r++)
        for (size_t c = 0; c < calls.size(); c++) {
            bufs[r].emplace_back(new Buf(calls[c].offset + calls[c].bytes + guard));
            std::memset(bufs[r][c]->p, 0xee, bufs[r][c]->n);
            if (r == calls[c].root)
                for (size_t i = 0; i < calls[c].bytes; i++)
                    bufs[r][c]->p[calls[c].offset + i] = (char)input_byte((int)c, i);
        }
    run(w, calls, bufs);
    for (int r = 0; r < nranks; r++) CHECK(w.error[r] == 0);
    int wrong = 0;
    for (int r = 0; r < nranks; r++)
        for (size_t c = 0; c < calls.size(); c++) {
            const Call &call = calls[c];
            const char *b = bufs[r][c]->p;
            for (size_t i = 0; i < bufs[r][c]->n; i++) {
                const bool inside = i >= call.offset && i < call.offset + call.bytes;
                const unsigned char want = inside ? input_byte((int)c, i - call.offset) : 0xee;
                if ((unsigned char)b[i] != want && wrong++ < 5)
                    std::fprintf(stderr, "%s: %d ranks, rank %d, call %zu (%zu bytes, root %d, offset %zu): byte %zu "
                                         "is %#x, not %#x\n",
                                 what, nranks, r, c, call.bytes, call.root, call.offset, i, (unsigned char)b[i], want);
            }
        }
    CHECK(wrong == 0);
}

void check_algo(PeerAlgo algo, const char *what)
{
    for (int n = 2; n <= 4; n++) {
        // One step, a tail, many steps; every root; then calls back to back
        // with changing roots, so that a root that ran ahead meets its peers
        // still in the call before.
        for (size_t bytes : {(size_t)1, (size_t)100, kHalf, 5 * kHalf + 48, 9 * kHalf + 7})
            for (int root = 0; root < n; root++)
                // Not 16-byte aligned: copied byte by byte.
                for (size_t offset : {(size_t)0, (size_t)3, (size_t)4, (size_t)8})
                    check_bcasts(n, {{algo, bytes, root, offset}}, what);
        std::vector<Call> seq;
        for (int c = 0; c < 8; c++) seq.push_back({algo, (size_t)(c * 3 + 2) * kHalf / 2 + c, c % n, 0});
        check_bcasts(n, seq, what);
    }
}

// ---- The two-shot allreduce, and two communicators' kernels crossed ----------

// A rank's SMs: blocks start in launch order while fewer than `cap` run,
// and keep their place until all their threads are done.
class Sms {
public:
    explicit Sms(int cap) : cap_(cap) {}
    void enter(int ticket)
    {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return ticket == next_ && running_ < cap_; });
        running_++;
        next_++;
        cv_.notify_all();
    }
    void leave()
    {
        std::lock_guard<std::mutex> lock(mu_);
        running_--;
        cv_.notify_all();
    }

private:
    std::mutex mu_;
    std::condition_variable cv_;
    int cap_, running_ = 0, next_ = 0;
};

int32_t allreduce_input(int team, int rank, size_t i) { return (int32_t)(team * 1000003 + rank * 7919 + (int)i * 13); }

// What a communicator's call runs: the two-shot allreduce, bcast_forward
// from rank 0 in place, the two-shot reduce to `root`, or the reduce by
// stores into the root's scratch.
enum class Kind { Allreduce, Bcast, Reduce, ReduceStores };
const char *kind_name(Kind k)
{
    return k == Kind::Bcast          ? "bcast_forward"
           : k == Kind::Reduce       ? "reduce_twoshot"
           : k == Kind::ReduceStores ? "reduce_stores"
                                     : "two-shot";
}

// One communicator's call on `count` int32; its scratch and every rank's buffers.
struct TeamCall {
    World w;
    std::vector<std::unique_ptr<Buf>> src, dst;
    size_t count;
    Kind kind;
    int root;
    bool bcast;
    TeamCall(int nranks, size_t n, int team, Kind k, int root_rank = 0)
        : w(nranks), count(n), kind(k), root(root_rank), bcast(k == Kind::Bcast)
    {
        for (int r = 0; r < nranks; r++) {
            src.emplace_back(new Buf(n * sizeof(int32_t)));
            dst.emplace_back(new Buf((n + 8) * sizeof(int32_t)));
            int32_t *in = reinterpret_cast<int32_t *>(src.back()->p);
            for (size_t i = 0; i < n; i++) in[i] = allreduce_input(team, r, i);
            std::memset(dst.back()->p, 0xee, dst.back()->n);
            if (bcast && r == 0) std::memcpy(dst.back()->p, in, n * sizeof(int32_t));
        }
    }
    // What element i of rank r's result is (a reduce's other ranks keep
    // what their output held).
    int32_t want(int team, int nranks, int r, size_t i) const
    {
        if ((kind == Kind::Reduce || kind == Kind::ReduceStores) && r != root) {
            int32_t untouched;
            std::memset(&untouched, 0xee, sizeof untouched);
            return untouched;
        }
        if (bcast) return allreduce_input(team, 0, i);
        int32_t sum = 0;
        for (int q = 0; q < nranks; q++) sum += allreduce_input(team, q, i);
        return sum;
    }
};

// Sets `a` up for rank r's part of `tc` and runs it.
void run_team_call(TeamCall &tc, int r, int nranks, bool vector_ok, uint64_t timeout_ns)
{
    PeerArgs a{};
    a.rank = r;
    a.nranks = nranks;
    a.src = tc.bcast ? tc.dst[r]->p : tc.src[r]->p;
    a.dst = tc.dst[r]->p;
    a.half_bytes = kHalf;
    a.epoch0 = 1;
    for (int p = 0; p < nranks; p++) a.scratch[p] = tc.w.scratch[p]->p;
    a.timeout_ns = timeout_ns;
    a.error = &tc.w.error[r];
    a.vector_ok = vector_ok;
    if (tc.bcast) {
        a.algo = PeerAlgo::BcastForward;
        a.count = tc.count * sizeof(int32_t); // bytes, as data movement runs
        a.chunk = kHalf;
        return run_steps<bcast_forward_step>(a);
    }
    a.count = tc.count;
    a.root = tc.root;
    if (tc.kind == Kind::ReduceStores) {
        a.algo = PeerAlgo::ReduceStores;
        // An area per rank but the root in the root's half, as max_chunk_elems
        // cuts it (Areas::PerOtherRank; whole 16 elements, so areas stay
        // 16-byte aligned): at 2 ranks the one area fills the half.
        a.chunk = kHalf / ((nranks - 1) * sizeof(int32_t)) / 16 * 16;
        return run_steps<reduce_stores_step<int32_t, OpSum>>(a);
    }
    a.chunk = kHalf / (2 * sizeof(int32_t)); // the result area follows the step's inputs
    if (tc.kind == Kind::Reduce) {
        a.algo = PeerAlgo::ReduceTwoShot;
        return run_steps<reduce_twoshot_step<int32_t, OpSum>>(a);
    }
    a.algo = PeerAlgo::AllreduceTwoShot;
    run_steps<allreduce_twoshot_step<int32_t, OpSum>>(a);
}

// Rank r launches the kernels of teams order[r][0], order[r][1], ... on
// streams that do not wait for each other; at most `sms` of its blocks run
// at once. A wait that cannot end gives up after `timeout_ns`.
void run_team_calls(std::vector<std::unique_ptr<TeamCall>> &teams, const std::vector<std::vector<int>> &order, int sms,
                    bool vector_ok, uint64_t timeout_ns)
{
    const int nranks = (int)order.size();
    std::vector<std::unique_ptr<Sms>> gates;
    std::vector<std::unique_ptr<BlockSync>> blocks;
    for (int r = 0; r < nranks; r++) gates.emplace_back(new Sms(sms));
    for (int i = 0; i < nranks * (int)(teams.size() * kGrid); i++) blocks.emplace_back(new BlockSync(kBlock));
    std::vector<std::thread> threads;
    for (int r = 0; r < nranks; r++)
        for (size_t pos = 0; pos < order[r].size(); pos++)
            for (unsigned b = 0; b < kGrid; b++)
                for (unsigned t = 0; t < kBlock; t++)
                    threads.emplace_back([&, r, pos, b, t] {
                        gridDim.x = kGrid;
                        blockDim.x = kBlock;
                        blockIdx.x = b;
                        threadIdx.x = t;
                        t_block = blocks[(r * teams.size() + pos) * kGrid + b].get();
                        TeamCall &tc = *teams[order[r][pos]];
                        if (t == 0) gates[r]->enter((int)(pos * kGrid + b));
                        __syncthreads();
                        run_team_call(tc, r, nranks, vector_ok, timeout_ns);
                        __syncthreads();
                        if (t == 0) gates[r]->leave();
                    });
    for (auto &t : threads) t.join();
}

// `nteams` allreduces of `count` elements at `nranks` ranks, rank r
// launching them in order (odd ranks in reverse where `crossed`), with
// `sms` blocks at once per rank: every result exact, nothing written past
// the message, no wait given up.
void check_team_calls(int nranks, size_t count, int nteams, bool crossed, int sms, bool vector_ok, Kind kind,
                      int root = 0)
{
    const char *what = kind_name(kind);
    std::vector<std::unique_ptr<TeamCall>> teams;
    for (int k = 0; k < nteams; k++) teams.emplace_back(new TeamCall(nranks, count, k, kind, root));
    std::vector<std::vector<int>> order(nranks);
    for (int r = 0; r < nranks; r++)
        for (int k = 0; k < nteams; k++) order[r].push_back(crossed && r % 2 ? nteams - 1 - k : k);
    run_team_calls(teams, order, sms, vector_ok, 5ull * 1000 * 1000 * 1000);
    int wrong = 0, gave_up = 0;
    for (int k = 0; k < nteams; k++)
        for (int r = 0; r < nranks; r++) {
            gave_up += teams[k]->w.error[r] != 0;
            const int32_t *out = reinterpret_cast<const int32_t *>(teams[k]->dst[r]->p);
            for (size_t i = 0; i < count + 8; i++) {
                int32_t want = teams[k]->want(k, nranks, r, i);
                if (i >= count) std::memset(&want, 0xee, sizeof want);
                if (out[i] != want && wrong++ < 5)
                    std::fprintf(stderr, "%s: %d ranks, %zu elements, team %d of %d%s, %d SMs: rank %d element "
                                         "%zu is %d, not %d\n",
                                 what, nranks, count, k, nteams, crossed ? " crossed" : "", sms, r, i, out[i], want);
            }
        }
    CHECK(gave_up == 0, "%s: %d ranks, %zu elements, %d teams%s, %d SMs a rank: %d kernels gave up", what, nranks,
          count, nteams, crossed ? " crossed" : "", sms, gave_up);
    CHECK(wrong == 0);
}

// Two-shot allreduces back to back on one communicator, every rank's
// threads done with one before starting the next (stream order), counts
// with one step, many and a tail, odd ones in place: each step copies the
// next one's input into the other half while it gathers, so a rank that
// runs ahead must still not write where a peer reads.
void check_twoshot_sequence(int nranks)
{
    const size_t step = kHalf / (2 * sizeof(int32_t));
    const size_t counts[] = {5 * step + 13, step, 3 * step, 7, 2 * step + 1, 9 * step};
    const int ncalls = (int)(sizeof counts / sizeof counts[0]);
    World w(nranks);
    std::vector<std::vector<std::unique_ptr<Buf>>> src(nranks), dst(nranks);
    std::vector<uint64_t> epoch0(ncalls);
    for (int c = 0, e = 1; c < ncalls; e += (int)((counts[c] + step - 1) / step), c++) epoch0[c] = (uint64_t)e;
    for (int r = 0; r < nranks; r++)
        for (int c = 0; c < ncalls; c++) {
            src[r].emplace_back(new Buf(counts[c] * sizeof(int32_t)));
            dst[r].emplace_back(new Buf((counts[c] + 8) * sizeof(int32_t)));
            std::memset(dst[r][c]->p, 0xee, dst[r][c]->n);
            int32_t *in = reinterpret_cast<int32_t *>(c % 2 ? dst[r][c]->p : src[r][c]->p);
            for (size_t i = 0; i < counts[c]; i++) in[i] = allreduce_input(c, r, i);
        }
    run_calls_in_order(nranks, ncalls, kGrid, kBlock, [&](int r, int c) {
        PeerArgs a{};
        a.algo = PeerAlgo::AllreduceTwoShot;
        a.rank = r;
        a.nranks = nranks;
        a.dst = dst[r][c]->p;
        a.src = c % 2 ? a.dst : src[r][c]->p;
        a.count = counts[c];
        a.chunk = step;
        a.half_bytes = kHalf;
        a.epoch0 = epoch0[c];
        for (int p = 0; p < nranks; p++) a.scratch[p] = w.scratch[p]->p;
        a.timeout_ns = 30ull * 1000 * 1000 * 1000;
        a.error = &w.error[r];
        a.vector_ok = true;
        run_steps<allreduce_twoshot_step<int32_t, OpSum>>(a);
    });
    int wrong = 0;
    for (int r = 0; r < nranks; r++) {
        CHECK(w.error[r] == 0);
        for (int c = 0; c < ncalls; c++) {
            const int32_t *out = reinterpret_cast<const int32_t *>(dst[r][c]->p);
            for (size_t i = 0; i < counts[c] + 8; i++) {
                int32_t want = 0;
                for (int q = 0; q < nranks; q++) want += allreduce_input(c, q, i);
                if (i >= counts[c]) std::memset(&want, 0xee, sizeof want);
                if (out[i] != want && wrong++ < 5)
                    std::fprintf(stderr, "two-shot sequence: %d ranks, rank %d, call %d (%zu elements%s): element %zu "
                                         "is %d, not %d\n",
                                 nranks, r, c, counts[c], c % 2 ? ", in place" : "", i, out[i], want);
            }
        }
    }
    CHECK(wrong == 0);
}

void check_twoshot()
{
    const size_t step = kHalf / (2 * sizeof(int32_t));
    for (int n = 2; n <= 4; n++) {
        // One step, a tail, many steps with a short last one; vector and scalar copies.
        for (size_t count : {(size_t)1, (size_t)7, step, step + 1, 5 * step + 13, 9 * step})
            for (bool vec : {true, false}) check_team_calls(n, count, 1, false, (int)kGrid, vec, Kind::Allreduce);
        // Two communicators crossed, with room for one grid and one more
        // block: the second kernel runs a block at a time beside the first.
        check_team_calls(n, 7 * step + 5, 2, true, (int)kGrid + 1, true, Kind::Allreduce);
        check_twoshot_sequence(n);
        // bcast_forward likewise (its slices are cut per receiver; every
        // block must still pair with the same block only).
        for (size_t count : {(size_t)5, 3 * kHalf + 7})
            check_team_calls(n, count, 2, true, (int)kGrid + 1, true, Kind::Bcast);
        // The two-shot reduce (slices cut among the non-roots) and the
        // reduce by stores into the root's scratch, every root, alone and
        // crossed.
        for (Kind k : {Kind::Reduce, Kind::ReduceStores})
            for (int root = 0; root < n; root++) {
                for (size_t count : {(size_t)1, (size_t)7, step + 1, 5 * step + 13})
                    for (bool vec : {true, false}) check_team_calls(n, count, 1, false, (int)kGrid, vec, k, root);
                check_team_calls(n, 7 * step + 5, 2, true, (int)kGrid + 1, true, k, root);
            }
    }
}

} // namespace

int main()
{
    check_algo(PeerAlgo::Bcast, "bcast");
    check_algo(PeerAlgo::BcastForward, "bcast_forward");
    check_twoshot();
    std::printf("scratch_steps: %d failed\n", failures);
    return failures ? 1 : 0;
}
