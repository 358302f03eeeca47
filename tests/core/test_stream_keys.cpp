// The keys of stream-ordered calls (core/team_stream_keys.cpp), on stand-in
// teams that share one control block: ranks whose enqueued calls match
// raise nothing; a count, op or root that differs raises every rank's error
// word (kErrorArgsDiffer), also that of a rank whose peer overwrote the key
// before it could compare (the finder's flag); a capture on any rank ends
// the comparisons, so that a rank replaying a graph while its peers enqueue
// the same calls eagerly (fewer host calls than theirs) is never taken for
// a mismatch; a word already raised keeps its reason.
#include <cstdio>
#include <memory>

#include "../common/check.h"
#include "team_state.hpp"

using namespace gpucoll;

namespace {

gpucoll_coll_args_t call(size_t count, gpucoll_op_t op = GPUCOLL_OP_SUM, int root = 0,
                         gpucoll_coll_kind_t kind = GPUCOLL_COLL_ALLREDUCE)
{
    gpucoll_coll_args_t a{};
    a.kind = kind;
    a.count = count;
    a.dtype = GPUCOLL_FLOAT32;
    a.op = op;
    a.root = root;
    a.local_ok = 1;
    return a;
}

// n ranks' stream-ordered teams, one per rank, as after coll_gpu_stream_init.
struct Ranks {
    int n;
    std::unique_ptr<ShmBlock> shm{new ShmBlock()};
    std::unique_ptr<gpucoll_team[]> teams;
    int error[kMaxPeers] = {};
    explicit Ranks(int ranks) : n(ranks), teams(new gpucoll_team[ranks])
    {
        for (int r = 0; r < n; r++) {
            gpucoll_team &t = teams[r];
            t.rank = r;
            t.size = n;
            t.shm = shm.get();
            t.error = &error[r];
            t.stream_keys_on.store(true);
        }
    }
    ~Ranks()
    {
        for (int r = 0; r < n; r++) teams[r].shm = nullptr, teams[r].error = nullptr;
    }
    gpucoll_team *operator[](int r) { return &teams[r]; }
    void eager_all(const gpucoll_coll_args_t &a)
    {
        for (int r = 0; r < n; r++) post_stream_key(&teams[r], a, true);
    }
    void settle_all()
    {
        for (int r = 0; r < n; r++) settle_stream_keys(&teams[r]);
    }
    int raised() const
    {
        int k = 0;
        for (int r = 0; r < n; r++) k += error[r] == kErrorArgsDiffer;
        return k;
    }
};

void matching_calls()
{
    Ranks R(3);
    for (int i = 0; i < 10; i++) {
        R.eager_all(call(1000 + i));
        if (i % 3 == 0) R.settle_all();
    }
    R.eager_all(call(1, GPUCOLL_OP_MAX, 2, GPUCOLL_COLL_REDUCE));
    R.settle_all();
    CHECK(R.raised() == 0, "matching calls raised %d error words", R.raised());
    for (int r = 0; r < 3; r++) CHECK(R[r]->queued_check.checked == 11, "rank %d compared %llu calls of 11", r,
                                      (unsigned long long)R[r]->queued_check.checked);
}

// The last rank's call 3 differs as `differ` says.
void one_call_differs(const char *what, const gpucoll_coll_args_t &same, const gpucoll_coll_args_t &differ)
{
    Ranks R(4);
    R.eager_all(same);
    R.eager_all(same);
    for (int r = 0; r < 4; r++) post_stream_key(R[r], r == 3 ? differ : same, true);
    settle_stream_keys(R[0]);
    CHECK(R.error[0] == kErrorArgsDiffer, "%s: the first rank to compare raised %d", what, R.error[0]);
    R.settle_all();
    CHECK(R.raised() == 4, "%s: %d of 4 ranks' kernels stopped", what, R.raised());
    // Later calls change nothing: the team's enqueued calls fail from here on.
    R.eager_all(same);
    R.settle_all();
    CHECK(R.raised() == 4, "%s: a later call cleared an error word", what);
}

// Rank 0 finds call 1's mismatch; then both ranks run more than a ring's
// worth of calls, so rank 1 can no longer read rank 0's key of call 1.
void finder_tells_the_others()
{
    Ranks R(2);
    post_stream_key(R[0], call(100), true);
    post_stream_key(R[1], call(101), true);
    settle_stream_keys(R[0]);
    CHECK(R.error[0] == kErrorArgsDiffer, "rank 0 did not find the mismatch: %d", R.error[0]);
    for (int q = 0; q < kQueuedKeys + 1; q++) R.eager_all(call(100));
    settle_stream_keys(R[1]);
    CHECK(R.error[1] == kErrorArgsDiffer, "rank 1, whose view of call 1 was overwritten, raised %d", R.error[1]);
}

// Rank 0 captures its second call into a graph and replays it (no host
// calls); rank 1 makes the same calls eagerly, and one more kind between.
void capture_ends_comparisons(bool settle_before_capture)
{
    Ranks R(2);
    R.eager_all(call(64));
    if (settle_before_capture) R.settle_all();
    post_stream_key(R[0], call(64), false); // captured
    post_stream_key(R[0], call(64, GPUCOLL_OP_MAX), true); // eager again after the capture
    for (int i = 0; i < 3; i++) {
        post_stream_key(R[1], call(64), true);
        post_stream_key(R[1], call(8, GPUCOLL_OP_PROD), true);
    }
    R.settle_all();
    R.settle_all();
    CHECK(R.raised() == 0, "a capture on rank 0 (settled before: %d) led to %d raised error words",
          settle_before_capture, R.raised());
    for (int r = 0; r < 2; r++) CHECK(!R[r]->stream_keys_on.load(), "rank %d still compares after a capture", r);
    CHECK(R[0]->queued_posted.load() == 1, "rank 0 posted %llu keys, 1 before its capture",
          (unsigned long long)R[0]->queued_posted.load());
}

void gone_peer_keeps_its_reason()
{
    Ranks R(2);
    R.error[1] = kErrorPeerGone;
    post_stream_key(R[0], call(5), true);
    post_stream_key(R[1], call(6), true);
    R.settle_all();
    CHECK(R.error[0] == kErrorArgsDiffer, "rank 0: %d", R.error[0]);
    CHECK(R.error[1] == kErrorPeerGone, "rank 1's gone peer was overwritten by %d", R.error[1]);
}

} // namespace

int main()
{
    gpucoll_config_t cfg{};
    gpucoll_config_fill_defaults(&cfg);
    gpucoll_core_configure(&cfg);
    matching_calls();
    one_call_differs("count", call(4096), call(4096 + (1 << 20) + 1));
    one_call_differs("op", call(4096), call(4096, GPUCOLL_OP_MAX));
    one_call_differs("bcast root", call(4096, GPUCOLL_OP_NONE, 0, GPUCOLL_COLL_BCAST),
                     call(4096, GPUCOLL_OP_NONE, 1, GPUCOLL_COLL_BCAST));
    one_call_differs("kind", call(4096), call(4096, GPUCOLL_OP_SUM, 0, GPUCOLL_COLL_REDUCE_SCATTER_BLOCK));
    finder_tells_the_others();
    capture_ends_comparisons(false);
    capture_ends_comparisons(true);
    gone_peer_keeps_its_reason();
    std::printf("core_stream_keys: %s\n", failures ? "FAILED" : "passed");
    return failures ? 1 : 0;
}
