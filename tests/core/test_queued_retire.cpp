// A team's retirement after a failed queued call (retire_after_queued_failure,
// core/team_state.hpp): a broken team, or one whose error word a kernel
// raised, stops taking the GPU at the next blocking call, so that this call
// and the queued calls after it stage; a team with a peer gone keeps failing
// instead (the staged route would wait for that peer for good); a healthy
// team, or one whose GPU path is not up, is left as it is.
#include <cstdio>

#include "../common/check.h"
#include "team_state.hpp"

using namespace gpucoll;

namespace {

struct Case {
    const char *what;
    int gpu; // gpucoll_team::GpuNone, GpuReady or GpuFailed
    bool broken;
    int error;
    int gone_rank;
    bool retires;
};

// What gpucoll_plan_create says on `t`. Asked only of teams it answers
// before planning anything (broken, retired or without a ready GPU path): a
// ready one would plan for real on this stand-in team.
gpucoll_status_t plan_verdict(gpucoll_team *t)
{
    gpucoll_coll_args_t a{};
    a.kind = GPUCOLL_COLL_ALLREDUCE;
    a.count = 1000;
    a.dtype = GPUCOLL_FLOAT32;
    a.op = GPUCOLL_OP_SUM;
    gpucoll_plan_t *p = nullptr;
    gpucoll_status_t st = gpucoll_plan_create(t, &a, 0, &p);
    CHECK(p == nullptr, "a plan was made on a broken or retired team");
    return st;
}

} // namespace

int main()
{
    gpucoll_config_t cfg{};
    gpucoll_config_fill_defaults(&cfg);
    gpucoll_core_configure(&cfg);
    const Case cases[] = {
        {"healthy", gpucoll_team::GpuReady, false, 0, -1, false},
        {"arguments differ (the keys)", gpucoll_team::GpuReady, true, kErrorArgsDiffer, -1, true},
        {"broken, error word not read yet", gpucoll_team::GpuReady, true, 0, -1, true},
        {"a peer's kernel gave up, request not tested", gpucoll_team::GpuReady, false, kErrorPeerGaveUp, -1, true},
        {"a peer is gone (error word)", gpucoll_team::GpuReady, true, kErrorPeerGone, -1, false},
        {"a peer is gone (watcher)", gpucoll_team::GpuReady, true, kErrorPeerGaveUp, 1, false},
        {"GPU path never set up", gpucoll_team::GpuNone, false, 0, -1, false},
        {"GPU path failed in a blocking call", gpucoll_team::GpuFailed, true, 0, -1, false},
    };
    for (const Case &c : cases) {
        gpucoll_team t;
        t.rank = 0;
        t.size = 2;
        t.gpu = static_cast<decltype(t.gpu)>(c.gpu);
        t.broken = c.broken;
        int error = c.error;
        t.error = &error;
        t.gone_rank = c.gone_rank;
        const bool answered = t.broken || t.gpu != gpucoll_team::GpuReady;
        const gpucoll_status_t before = answered ? plan_verdict(&t) : GPUCOLL_SUCCESS;
        retire_after_queued_failure(&t);
        CHECK(t.retired == c.retires, "%s: retired %d, expected %d", c.what, t.retired, c.retires);
        if (c.retires) {
            CHECK(t.gpu == gpucoll_team::GpuFailed, "%s: the GPU path is still taken", c.what);
            CHECK(plan_verdict(&t) == GPUCOLL_ERR_UNSUPPORTED, "%s: a queued call after retirement does not stage",
                  c.what);
            CHECK(!c.broken || before == GPUCOLL_ERR_PEER,
                  "%s: a broken team did not fail a queued call before every rank retired", c.what);
        } else {
            CHECK(t.gpu == c.gpu, "%s: the GPU state changed", c.what);
            if (answered) CHECK(plan_verdict(&t) == before, "%s: a queued call's verdict changed", c.what);
        }
        retire_after_queued_failure(&t); // a second blocking call: nothing more
        CHECK(t.retired == c.retires, "%s: a second call changed the verdict", c.what);
        t.error = nullptr;
    }
    // Under the debugging timeout a rank may miss a peer's give-up: no rank retires.
    cfg.timeout_ms = 100;
    gpucoll_core_configure(&cfg);
    {
        gpucoll_team t;
        t.size = 2;
        t.gpu = gpucoll_team::GpuReady;
        t.broken = true;
        int error = kErrorTimeout;
        t.error = &error;
        retire_after_queued_failure(&t);
        CHECK(!t.retired && t.gpu == gpucoll_team::GpuReady, "timeout_ms set: the team retired");
        t.error = nullptr;
    }
    std::printf("core_queued_retire: %zu cases, %d failed\n", sizeof cases / sizeof cases[0] + 1, failures);
    return failures ? 1 : 0;
}
