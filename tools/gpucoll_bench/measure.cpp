#include "measure.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "report.hpp"

namespace {

// After an enqueued or captured call that returned `rc` on this rank: true on
// every rank when it was taken everywhere. MPI_ERR_UNSUPPORTED_OPERATION on
// any rank skips the row (rank 0 says so, once per series); any other error
// ends the run.
bool agree_taken(const Context &x, const Call &call, const Case &c, int rc, bool capturing)
{
    int cls = rc;
    if (rc != MPI_SUCCESS && MPI_Error_class(rc, &cls) != MPI_SUCCESS) cls = rc;
    if (rc != MPI_SUCCESS && cls != MPI_ERR_UNSUPPORTED_OPERATION) call.fail(rc);
    int refused = rc != MPI_SUCCESS, n = 0;
    MPI_CHECK(MPI_Allreduce(&refused, &n, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    if (n == 0) return true;
    x.skips->rows++;
    char what[512];
    std::snprintf(what, sizeof what,
                  "# skipped: %s %s rows of %s %s%s%s %s, from %s on: %s returned "
                  "MPI_ERR_UNSUPPORTED_OPERATION on %d of %d ranks%s",
                  call.name.c_str(), mode_name(call.mode), coll_name(c.coll), dtype_name(c.dtype),
                  coll_is_reduction(c.coll) ? " " : "", coll_is_reduction(c.coll) ? op_name(c.op) : "",
                  c.inplace ? "in-place" : "out-of-place", format_size(c.size_bytes()).c_str(),
                  mpi_enqueue_name(c.coll).c_str(), n, x.nranks,
                  capturing ? " while capturing (no GPU path for this call: type, op or ranks)"
                            : " (coll/gpu not loaded?)");
    // the message names the first size only: later sizes of the series stay quiet
    std::string key(what);
    key = key.substr(0, key.find(", from "));
    if (x.rank == 0 && x.skips->said.insert(key).second) {
        std::printf("%s\n", what);
        std::fflush(stdout);
    }
    return false;
}

// Loads this case's inputs (and sentinel bytes where results must appear).
void load_inputs(const Context &x, const Case &c)
{
    const size_t es = dtype_size(c.dtype);
    if (c.send_elems()) x.buf.upload(x.buf.send(), x.host.send.get(), c.send_elems() * es);
    x.buf.upload(x.buf.recv(), x.host.recv.get(), c.recv_elems() * es);
}

// Counts the wrong output elements of the call that last ran on this rank
// (prints the first one to stderr). `when` ends the message.
size_t check_result(const Context &x, const Call &call, const Case &c, const char *when)
{
    const size_t es = dtype_size(c.dtype), n = c.out_elems();
    if (!x.opt.check || n == 0) return 0;
    const Path &p = call.path;
    const char *out = static_cast<const char *>(x.buf.recv()) + c.out_offset(p.kind != Kind::Mpi) * es;
    x.buf.download(x.host.out.get(), out, n * es);
    if (x.rank == x.opt.corrupt_rank)   // test hook: a wrong result must fail the run
        dtype_store(c.dtype, x.host.out.get(), n / 2, dtype_load(c.dtype, x.host.out.get(), n / 2) + 1);
    std::string first;
    size_t errors = compare_output(c, x.host.out.get(), x.host.ref.get(), &first);
    if (errors)
        std::fprintf(stderr, "gpucoll-bench: WRONG RESULT %s %s %s %s path %s mode %s: %zu wrong elements%s; %s\n",
                     coll_name(c.coll), dtype_name(c.dtype), coll_is_reduction(c.coll) ? op_name(c.op) : "-",
                     format_size(c.size_bytes()).c_str(), call.name.c_str(), mode_name(call.mode), errors, when,
                     first.c_str());
    return errors;
}

// Runs the collective once on fresh inputs, in the call's own mode (the
// persistent request the timing reuses; one enqueued call and a stream
// sync), and counts wrong output elements on this rank. *refused: an
// enqueued call was refused on some rank (then nothing is checked).
size_t validate(const Context &x, Call &call, const Case &c, bool *refused)
{
    load_inputs(x, c);
    *refused = false;
    if (mode_on_stream(call.mode)) {
        const int rc = call.start();
        if (!agree_taken(x, call, c, rc, false)) {
            call.wait();
            *refused = true;
            return 0;
        }
        call.wait();
    } else {
        call.once();
    }
    return check_result(x, call, c, "");
}

// Results that a repeat of the call leaves as they are, so that they can be
// checked after the timed calls: out of place, bcast, in-place allgather.
// (In-place reductions are timed on zeros; in-place alltoall swaps back.)
bool repeat_stable(const Case &c) { return !c.inplace || c.coll == Coll::Bcast || c.coll == Coll::Allgather; }

// In-place reductions would grow their data every call (sums overflow to
// inf, and the host path slows on odd values): time them on zeros.
void zero_inplace_reduction(const Context &x, const Case &c)
{
    if (c.inplace && coll_is_reduction(c.coll)) x.buf.fill_bytes(x.buf.recv(), 0, c.recv_elems() * dtype_size(c.dtype));
}

// Iteration counts from one call's time `t` (the slowest rank's): the same
// on every rank, so loops stay matched.
void iteration_counts(const Context &x, double t, int *warmup, int *iters)
{
    t = std::max(t, 1e-7);
    const double limit = x.opt.time_limit;
    *warmup = (int)std::min<double>(x.opt.warmup, 0.2 * limit / t);
    *iters = (int)std::max(1.0, std::min<double>(x.opt.iters, limit / t));
}

// Times one path in one mode on one case. Returns this rank's mean seconds
// per call and the iteration count (the same on every rank, so loops stay matched).
double time_path(const Context &x, Call &call, const Case &c, int *iters_out)
{
    zero_inplace_reduction(x, c);

    // One call, timed, sets how many fit in the time limit (slowest rank decides).
    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    double t = MPI_Wtime();
    call.once();
    t = MPI_Wtime() - t;
    MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
    int warmup, iters;
    iteration_counts(x, t, &warmup, &iters);
    for (int i = 0; i < warmup; i++) call.once();
    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));

    double total = 0;
    if (call.back_to_back()) {
        // nccl-tests style (nccl-nosync, enqueue): calls queue back to back on
        // the stream, one sync at the end
        double t0 = MPI_Wtime();
        for (int i = 0; i < iters; i++) call.issue();
        call.wait();
        total = MPI_Wtime() - t0;
    } else {
        // OSU style: time each call to its completion, barrier between calls
        for (int i = 0; i < iters; i++) {
            double t0 = MPI_Wtime();
            call.once();
            total += MPI_Wtime() - t0;
            MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
        }
    }
    *iters_out = iters;
    return total / iters;
}

// The graph mode: `one` (one captured call, launched and synced) sets the
// iteration count as one call does above; then a graph of K = min(--graph-calls,
// iterations) calls is captured and launched R = ceil(iterations / K) times
// back to back, one sync at the end. Returns seconds per call, total / (R*K),
// and R*K in *iters_out.
double time_graph(const Context &x, Call &call, const Case &c, Graph &one, int *iters_out)
{
    const cudaStream_t s = call.stream();
    zero_inplace_reduction(x, c);

    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    double t = MPI_Wtime();
    one.launch(s);
    call.wait();
    t = MPI_Wtime() - t;
    MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
    int warmup, iters;
    iteration_counts(x, t, &warmup, &iters);

    const int k = std::min(x.opt.graph_calls, iters), launches = (iters + k - 1) / k;
    Graph many;
    Graph *g = &one;
    if (k > 1) {
        // one graph captured everywhere: so is this one (same call, same ranks)
        const int rc = many.capture(call, k);
        if (rc != MPI_SUCCESS) call.fail(rc);
        g = &many;
    }
    for (int i = 0; i < (warmup + k - 1) / k; i++) g->launch(s);
    call.wait();
    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));

    const double t0 = MPI_Wtime();
    for (int i = 0; i < launches; i++) g->launch(s);
    call.wait();
    const double total = MPI_Wtime() - t0;
    *iters_out = launches * k;
    return total / (launches * k);
}

// Host work of about `seconds`, as OSU's dummy_compute: no MPI call inside,
// so only the progress a library makes on its own (a progress thread, the
// GPU) overlaps it. The sum ends in a volatile so the compiler keeps the loop.
volatile double g_compute_sink;
double host_compute(double seconds)
{
    const double t0 = MPI_Wtime();
    double acc = 0, v = 1, t;
    do {
        for (int i = 0; i < 64; i++) {
            v = v * 0.999 + 0.001;
            acc += v;
        }
        t = MPI_Wtime() - t0;
    } while (t < seconds);
    g_compute_sink = acc;
    return t;
}

// OSU's overlap of a nonblocking call: each rank computes for t_pure (the
// call's own latency, the same on every rank) between MPI_I<coll> and
// MPI_Wait. A call that moved meanwhile ends with the compute; one that only
// moves inside MPI_Wait adds all of t_pure. Times are averaged over ranks, as
// the rows' latencies are; 100 = fully hidden, 0 = not at all.
double measure_overlap(const Context &x, Call &call, int iters, double t_pure)
{
    double t[2] = {0, 0};   // total, compute
    for (int i = 0; i < iters; i++) {
        double t0 = MPI_Wtime();
        call.issue();
        t[1] += host_compute(t_pure);
        call.wait();
        t[0] += MPI_Wtime() - t0;
        MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    }
    MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, t, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
    const double t_total = t[0] / iters / x.nranks, t_compute = t[1] / iters / x.nranks;
    return std::max(0.0, 100.0 * (1.0 - (t_total - t_compute) / t_pure));
}

// One row: the path in one mode validated, timed and, where asked, its
// overlap measured, on the case whose host inputs are ready. Returns false
// (no row) where an enqueued call was refused.
// A call's time for algbw and the ratios. A rooted call is done when its
// slowest rank is: the others of a bcast or reduce may leave long before the
// root has its data, and their mean would flatter it (a one-shot reduce's
// by 2x, 4 x H200). max_us is rank 0's only, as the rows are.
double call_time_us(const Row &r, Coll coll) { return coll_has_root(coll) ? r.max_us : r.avg_us; }

bool measure_call(const Context &x, const Path &p, Mode m, const Case &c, unsigned long long *total_errors, Row *out)
{
    Call call(x, p, m, c);
    Row r;
    r.c = c;
    r.path = call.name;
    r.mode = m;
    unsigned long long errors = 0, all_errors = 0;
    double t;
    if (m == Mode::Graph) {
        // captured once per size; checked after the timing: the timed
        // launches' result where a repeat leaves it as it is, otherwise one
        // launch of the one-call graph on fresh inputs
        Graph one;
        if (!agree_taken(x, call, c, one.capture(call, 1), true)) return false;
        load_inputs(x, c);
        t = time_graph(x, call, c, one, &r.iters);
        if (repeat_stable(c) || !x.opt.check) {
            errors = check_result(x, call, c, " (after the timed graph launches)");
        } else {
            load_inputs(x, c);
            one.launch(call.stream());
            call.wait();
            errors = check_result(x, call, c, " (one graph launch)");
        }
    } else {
        bool refused = false;
        errors = validate(x, call, c, &refused);
        if (refused) return false;
        // back-to-back enqueued calls: their last result too, on output
        // areas reset to the sentinel (so a call that did nothing shows)
        const bool check_after = m == Mode::Enqueue && repeat_stable(c) && x.opt.check;
        if (check_after) load_inputs(x, c);
        t = time_path(x, call, c, &r.iters);
        if (check_after) errors += check_result(x, call, c, " (after the timed calls)");
    }
    MPI_CHECK(MPI_Allreduce(&errors, &all_errors, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD));
    *total_errors += all_errors;
    double sum = 0, mn = 0, mx = 0;
    // the sum on every rank: the overlap's compute lasts the mean latency everywhere
    MPI_CHECK(MPI_Allreduce(&t, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
    MPI_CHECK(MPI_Reduce(&t, &mn, 1, MPI_DOUBLE, MPI_MIN, 0, MPI_COMM_WORLD));
    MPI_CHECK(MPI_Reduce(&t, &mx, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD));
    r.avg_us = sum / x.nranks * 1e6;
    r.min_us = mn * 1e6;
    r.max_us = mx * 1e6;
    const double call_us = call_time_us(r, c.coll);
    r.algbw = call_us > 0 ? c.size_bytes() / (call_us * 1e3) : 0;
    r.busbw = r.algbw * busbw_factor(c.coll, x.nranks);
    r.errors = all_errors;
    r.valid = !x.opt.check ? "off" : all_errors ? "FAIL" : "ok";
    if (x.opt.overlap && p.kind == Kind::Mpi && m == Mode::Nonblocking)
        r.overlap_pct = measure_overlap(x, call, r.iters, sum / x.nranks);
    if (x.copy_rate > 0 && call_us > 0) {
        r.bound_us = hbm_traffic_bytes(c) / (2 * x.copy_rate) * 1e6;   // 0: nothing must move
        r.vs_bound = r.bound_us / call_us;
    }
    *out = r;
    return true;
}

// The modes a path runs in: the mpi and staged paths those of --mode (the
// enqueue and graph modes on the mpi path only, and only once
// coll_gpu_stream_init worked); nccl one blocking row for the MPI call modes
// and its own enqueue and graph rows; nccl-nosync one blocking row.
std::vector<Mode> path_modes(const Options &o, const Path &p)
{
    std::vector<Mode> out;
    bool call_modes = false;
    for (Mode m : o.modes) {
        if (!mode_on_stream(m)) call_modes = true;
        if (p.kind == Kind::Mpi ? !mode_on_stream(m) || p.streams : mode_on_stream(m) && p.streams)
            out.push_back(m);
    }
    if (p.kind == Kind::NcclNoSync || (p.kind == Kind::Nccl && call_modes)) out.insert(out.begin(), Mode::Blocking);
    return out;
}

} // namespace

// Rank 0, stderr: a line rewritten in place on a terminal; in a log, one line
// per size once the sweep has run for a while (short sweeps stay quiet).
void progress(const Options &o, int rank, const std::string &what, double elapsed, bool first_path, bool last)
{
    if (rank != 0) return;
    static const bool tty = isatty(2);
    if (tty) {
        std::fprintf(stderr, "\r\033[K[gpucoll-bench %6.1fs] %s", elapsed, what.c_str());
        if (last) std::fprintf(stderr, "\r\033[K");
    } else if (elapsed > 5 * o.time_limit && first_path && !last) {
        std::fprintf(stderr, "[gpucoll-bench %6.1fs] %s\n", elapsed, what.c_str());
    }
    std::fflush(stderr);
}

// Everything for one case at one size: inputs, reference, then each path in
// each mode. Returns the rows (complete on rank 0).
std::vector<Row> measure_size(const Context &x, const std::vector<Path> &paths, const Case &c,
                              const std::string &label, double start, unsigned long long *total_errors)
{
    // host inputs: sentinel bytes where outputs go, then this rank's data
    std::memset(x.host.recv.get(), 0x5A, c.recv_elems() * dtype_size(c.dtype));
    fill_input(c, x.host.send.get(), x.host.recv.get());
    if (x.opt.check) fill_reference(c, x.host.ref.get());

    std::vector<Row> rows;
    for (const Path &p : paths) {
        if (p.kind != Kind::Mpi && !nccl_supports(c)) continue;
        for (Mode m : path_modes(x.opt, p)) {
            progress(x.opt, x.rank, label + " " + p.name + " " + mode_name(m), MPI_Wtime() - start,
                     rows.empty(), false);
            Row r;
            if (measure_call(x, p, m, c, total_errors, &r)) rows.push_back(r);
        }
    }
    // ratios on the mpi rows: ours over NCCL in the same way of calling (the
    // synced one if run for the MPI call modes) and over staged in the same mode
    auto lat = [&](const char *name, Mode m) {
        for (const Row &r : rows) if (r.path == name && r.mode == m) return call_time_us(r, c.coll);
        return 0.0;
    };
    const double nccl = lat("nccl", Mode::Blocking) > 0 ? lat("nccl", Mode::Blocking) : lat("nccl-nosync", Mode::Blocking);
    for (Row &r : rows) {
        if (r.path != "mpi") continue;
        const double staged = lat("staged", r.mode);
        // (nccl-nosync times what nccl-enqueue does)
        const double enq = lat("nccl-enqueue", Mode::Enqueue) > 0 ? lat("nccl-enqueue", Mode::Enqueue)
                                                                  : lat("nccl-nosync", Mode::Blocking);
        const double ref = r.mode == Mode::Enqueue ? enq
                         : r.mode == Mode::Graph   ? lat("nccl-graph", Mode::Graph)
                                                   : nccl;
        if (ref > 0) r.vs_nccl = call_time_us(r, c.coll) / ref;
        if (staged > 0) r.vs_staged = call_time_us(r, c.coll) / staged;
    }
    return rows;
}
