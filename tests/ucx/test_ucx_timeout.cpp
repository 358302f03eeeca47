/* A rank that never shows up must cost the others one timeout, not a hang:
 * each phase below leaves the last rank out, every other rank must get
 * GPUCOLL_ERR_TIMEOUT (naming a peer) within the configured bound, and then
 * all ranks, the absent one included, destroy their groups and exit cleanly.
 * In the last phase the absent rank tears its transport down instead of
 * idling (a departed peer): the others may then also learn it from UCX
 * (GPUCOLL_ERR_PEER), but again within the bound.
 * Each phase uses a fresh group: a group is not reused after a failure. */
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>

#include "ucx_test_util.h"

using namespace ucx_test;

namespace {

/* Runs `op` on every rank but the last, with a fresh group. */
void phase(const char *what, const Options &opt, int timeout_ms,
           const std::function<gpucoll_status_t(gpucoll_ucx_group_t *, Buffer &, Buffer &)> &op, size_t bytes,
           bool absent_departs = false)
{
    const int n = size(), r = rank(), absent = n - 1;
    gpucoll_ucx_group_t *g = make_group(make_config(opt, timeout_ms));
    if (absent_departs && r == absent) { /* the UCP worker goes with its last group */
        check_status(gpucoll_ucx_group_destroy(g), "group_destroy of the departing rank");
        g = nullptr;
    }
    Buffer a(bytes * size_t(n), opt.device), b(bytes * size_t(n), opt.device);
    a.fill_byte(1);
    b.fill_byte(2);
    MPI_Barrier(MPI_COMM_WORLD);
    if (r != absent) {
        const double t0 = now_seconds();
        gpucoll_status_t st = op(g, a, b);
        const double took = now_seconds() - t0;
        const std::string why = gpucoll_last_error();
        const bool expected = st == GPUCOLL_ERR_TIMEOUT || (absent_departs && st == GPUCOLL_ERR_PEER);
        check(expected, "%s: expected a timeout, got %s (%s)", what, gpucoll_status_name(st), why.c_str());
        check(why.find("rank ") != std::string::npos, "%s: the error does not name a peer: %s", what, why.c_str());
        /* Waits restart their clock on progress, so allow a few periods of
         * slack for ranks that moved a little before getting stuck. */
        const double limit = 3.0 * timeout_ms / 1000.0 + 2.0;
        check(took < limit, "%s: took %.2f s, more than %.2f s for a %d ms timeout", what, took, limit, timeout_ms);
        printf("[rank %d] %s: %s after %.2f s: %s\n", r, what, gpucoll_status_name(st), took, why.c_str());
        fflush(stdout);
    }
    /* The absent rank waits here; then everybody tears down. */
    MPI_Barrier(MPI_COMM_WORLD);
    check_status(gpucoll_ucx_group_destroy(g), "group_destroy after a timeout");
}

} // namespace

int main(int argc, char **argv)
{
    Options opt = parse_options(argc, argv);
    if (!init(&argc, &argv, opt)) return finish_skip();
    const int n = size(), absent = n - 1, timeout_ms = opt.timeout_ms > 0 ? opt.timeout_ms : 1500;
    if (n < 2) {
        if (rank() == 0) printf("SKIP: needs 2 ranks or more\n");
        MPI_Finalize();
        return kSkip;
    }
    gpucoll_ucx_reducer_t reducer = copying_reducer(opt.device, nullptr);
    const gpucoll_ucx_reducer_t *red = opt.device || opt.stage_host ? &reducer : nullptr;

    phase("recv from a silent peer", opt, timeout_ms,
          [&](gpucoll_ucx_group_t *g, Buffer &a, Buffer &) {
              return gpucoll_ucx_recv(g, absent, a.data(), 4096, 9, 0);
          },
          4096);
    phase("allreduce, small", opt, timeout_ms,
          [&](gpucoll_ucx_group_t *g, Buffer &a, Buffer &b) {
              return gpucoll_ucx_allreduce(g, a.data(), b.data(), 1000, GPUCOLL_INT32, GPUCOLL_OP_SUM, red);
          },
          4000);
    /* Large enough for rendezvous sends to the absent rank: those are
     * aborted by closing the endpoint, and the buffers are free on return. */
    phase("allreduce, 8 MB", opt, timeout_ms,
          [&](gpucoll_ucx_group_t *g, Buffer &a, Buffer &b) {
              return gpucoll_ucx_allreduce(g, a.data(), b.data(), 2000000, GPUCOLL_FLOAT32, GPUCOLL_OP_SUM, red);
          },
          8000000);
    phase("allgather", opt, timeout_ms,
          [&](gpucoll_ucx_group_t *g, Buffer &a, Buffer &b) {
              return gpucoll_ucx_allgather(g, a.data(), b.data(), 100000, GPUCOLL_UINT8);
          },
          100000);
    phase("bcast from the absent rank", opt, timeout_ms,
          [&](gpucoll_ucx_group_t *g, Buffer &a, Buffer &) {
              return gpucoll_ucx_bcast(g, a.data(), 300000, GPUCOLL_FLOAT64, absent);
          },
          2400000);
    phase("allreduce with a departed peer", opt, timeout_ms,
          [&](gpucoll_ucx_group_t *g, Buffer &a, Buffer &b) {
              return gpucoll_ucx_allreduce(g, a.data(), b.data(), 500000, GPUCOLL_FLOAT32, GPUCOLL_OP_SUM, red);
          },
          2000000, true);
    return finish("ucx timeout");
}
