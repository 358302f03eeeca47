// gpucoll-bench: latency and bandwidth of MPI collectives on GPU buffers,
// through coll/gpu (plain MPI on MPI_COMM_WORLD), through the staged path
// forced by communicator info, and through NCCL, on the same buffers, with
// every result checked against a host reference; with --mode enqueue,graph
// also coll/gpu's stream-ordered calls (coll_gpu_<coll>_enqueue) back to back
// and in CUDA graphs, next to NCCL's. See docs/benchmark.md.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "check.hpp"
#include "collectives.hpp"
#include "memory.hpp"
#include "mpi_types.hpp"
#include "nccl_path.hpp"
#include "options.hpp"
#include "report.hpp"

[[noreturn]] void bench_fatal(const char *file, int line, const char *call, const char *msg)
{
    int rank = -1, init = 0;
    MPI_Initialized(&init);
    if (init) MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    std::fprintf(stderr, "gpucoll-bench: rank %d: %s:%d: %s failed: %s\n", rank, file, line, call, msg);
    std::fflush(stderr);
    if (init) MPI_Abort(MPI_COMM_WORLD, 1);
    std::exit(1);
}

namespace {

enum class Kind { Mpi, Nccl, NcclNoSync };

struct Path {
    std::string name;
    Kind kind;
    MPI_Comm comm;   // for Kind::Mpi
    bool streams;    // takes the enqueue and graph modes (mpi once coll_gpu_stream_init worked, nccl)
};

struct Host {        // host staging, each as large as the largest size
    std::unique_ptr<char[]> send, recv, out, ref;
    explicit Host(size_t n) : send(new char[n]), recv(new char[n]), out(new char[n]), ref(new char[n]) {}
};

// Rows of the stream-ordered modes that were not made because an enqueued
// call was refused: rank 0 says so once per message (not per size).
struct Skips {
    std::set<std::string> said;
    unsigned long long rows = 0;
};

struct Context {
    const Options &opt;
    int rank, nranks;
    Buffers &buf;
    Host &host;
    NcclPath *nccl;
    double copy_rate;      // device copy bytes/s for the HBM bound; 0 = no bound
    cudaStream_t stream;   // the mpi path's enqueue and graph calls; null when off
    Skips *skips;
};

// How one row issues its collective: the path and, on the MPI paths, the
// mode. A persistent request is made with the Call (once per size, so every
// start reuses it) and freed with it. NCCL rows in the enqueue and graph
// modes are named nccl-enqueue and nccl-graph.
class Call {
public:
    Call(const Context &x, const Path &p, Mode m, const Case &c)
        : path(p), mode(m),
          name(p.kind == Kind::Nccl && mode_on_stream(m) ? p.name + "-" + mode_name(m) : p.name), x_(x), c_(c)
    {
        if (p.kind == Kind::Mpi && m == Mode::Persistent)
            mpi_persistent_init(p.comm, c, x.buf.send(), x.buf.recv(), &req_);
    }
    ~Call()
    {
        if (req_ != MPI_REQUEST_NULL) MPI_Request_free(&req_);
    }
    Call(const Call &) = delete;
    Call &operator=(const Call &) = delete;

    // Issues the call. On a stream (NCCL; the mpi path's enqueue and graph
    // modes) it is only queued there. Returns coll_gpu_<coll>_enqueue's MPI
    // error code unchecked; the other calls check their own.
    int start()
    {
        if (path.kind != Kind::Mpi) {
            nccl_enqueue(x_.nccl, c_, x_.buf.send(), x_.buf.recv());
            return MPI_SUCCESS;
        }
        switch (mode) {
        case Mode::Blocking: mpi_run(path.comm, c_, x_.buf.send(), x_.buf.recv()); break;
        case Mode::Nonblocking: mpi_istart(path.comm, c_, x_.buf.send(), x_.buf.recv(), &req_); break;
        case Mode::Persistent: MPI_CHECK(MPI_Start(&req_)); break;
        case Mode::Enqueue:
        case Mode::Graph: return mpi_enqueue(path.comm, c_, x_.buf.send(), x_.buf.recv(), x_.stream);
        }
        return MPI_SUCCESS;
    }
    // start(), any error fatal
    void issue()
    {
        const int rc = start();
        if (rc != MPI_SUCCESS) fail(rc);
    }
    // For NCCL the stream sync is part of the call, so the comparison with
    // the MPI calls, which return with the result in place, is fair.
    void wait()
    {
        if (path.kind != Kind::Mpi) nccl_sync(x_.nccl);
        else if (mode_on_stream(mode)) CUDA_CHECK(cudaStreamSynchronize(x_.stream));
        else if (mode != Mode::Blocking) MPI_CHECK(MPI_Wait(&req_, MPI_STATUS_IGNORE));
    }
    void once()
    {
        issue();
        wait();
    }
    // Calls queued back to back, one sync at the end (nccl-tests style)
    bool back_to_back() const { return path.kind == Kind::NcclNoSync || mode == Mode::Enqueue; }
    cudaStream_t stream() const { return path.kind == Kind::Mpi ? x_.stream : nccl_stream(x_.nccl); }
    [[noreturn]] void fail(int rc) const
    {
        char s[MPI_MAX_ERROR_STRING];
        int len = 0;
        MPI_Error_string(rc, s, &len);
        bench_fatal(__FILE__, __LINE__, mpi_enqueue_name(c_.coll).c_str(), s);
    }

    const Path &path;
    const Mode mode;
    const std::string name;   // of the row

private:
    const Context &x_;
    const Case &c_;
    MPI_Request req_ = MPI_REQUEST_NULL;
};

// A CUDA graph of calls captured on the call's stream, instantiated and
// uploaded once; launched any number of times.
class Graph {
public:
    Graph() = default;
    ~Graph()
    {
        if (exec_) cudaGraphExecDestroy(exec_);
    }
    Graph(const Graph &) = delete;
    Graph &operator=(const Graph &) = delete;

    // Captures `n` calls. Returns the first refused enqueue's MPI error code
    // (and makes no graph); a capture that CUDA rejects ends the run.
    int capture(Call &call, int n)
    {
        const cudaStream_t s = call.stream();
        cudaGraph_t g = nullptr;
        // Thread-local: a library thread's CUDA call elsewhere does not spoil
        // the capture (this thread makes no other CUDA call meanwhile).
        CUDA_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
        int rc = MPI_SUCCESS;
        for (int i = 0; i < n && rc == MPI_SUCCESS; i++) rc = call.start();
        const cudaError_t e = cudaStreamEndCapture(s, &g);
        if (rc != MPI_SUCCESS) {
            if (e == cudaSuccess && g) cudaGraphDestroy(g);
            (void)cudaGetLastError();
            return rc;
        }
        if (e != cudaSuccess) bench_fatal(__FILE__, __LINE__, "cudaStreamEndCapture", cudaGetErrorString(e));
        CUDA_CHECK(cudaGraphInstantiateWithFlags(&exec_, g, 0));
        CUDA_CHECK(cudaGraphDestroy(g));
        CUDA_CHECK(cudaGraphUpload(exec_, s));
        calls = n;
        return MPI_SUCCESS;
    }
    void launch(cudaStream_t s) { CUDA_CHECK(cudaGraphLaunch(exec_, s)); }

    int calls = 0;

private:
    cudaGraphExec_t exec_ = nullptr;
};

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

// Returns "loaded (coll_gpu_path = auto)" or why not: coll/gpu registers its
// MCA parameters, visible as MPI_T control variables, when Open MPI loads it.
std::string coll_gpu_status()
{
    int provided, n = 0;
    if (MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS) return "unknown (no MPI_T)";
    // Open MPI unloads a coll component that declines (coll/gpu does on a
    // machine without GPU) and its variables go with it.
    std::string status = "not loaded (not on the component path, excluded, or declined: no GPU?); "
                         "the mpi path is Open MPI's own collectives";
    MPI_T_cvar_get_num(&n);
    for (int i = 0; i < n; i++) {
        char name[256], desc[16], text[256] = "";
        int name_len = sizeof name, desc_len = sizeof desc, verbosity, bind, scope, count;
        MPI_Datatype type;
        MPI_T_enum enumtype;
        if (MPI_T_cvar_get_info(i, name, &name_len, &verbosity, &type, &enumtype, desc, &desc_len,
                                &bind, &scope) != MPI_SUCCESS || std::strcmp(name, "coll_gpu_path") != 0)
            continue;
        MPI_T_cvar_handle h;
        if (MPI_T_cvar_handle_alloc(i, nullptr, &h, &count) == MPI_SUCCESS) {
            if (type == MPI_CHAR && count < (int)sizeof text) {
                MPI_T_cvar_read(h, text);
            } else if (type == MPI_INT) {
                int v = 0, items = 0, len;
                char item[64];
                MPI_T_cvar_read(h, &v);
                std::snprintf(text, sizeof text, "%d", v);
                if (enumtype != MPI_T_ENUM_NULL) {
                    len = sizeof item;
                    MPI_T_enum_get_info(enumtype, &items, item, &len);
                    for (int j = 0; j < items; j++) {
                        int value;
                        len = sizeof item;
                        if (MPI_T_enum_get_item(enumtype, j, &value, item, &len) == MPI_SUCCESS && value == v)
                            std::snprintf(text, sizeof text, "%s", item);
                    }
                }
            }
            MPI_T_cvar_handle_free(&h);
        }
        status = std::string("loaded (coll_gpu_path = ") + (text[0] ? text : "?") + ")";
        break;
    }
    MPI_T_finalize();
    return status;
}

std::vector<size_t> sweep_sizes(const Options &o)
{
    std::vector<size_t> sizes;
    for (double s = (double)o.min_bytes; s <= (double)o.max_bytes * 1.0000001; s *= o.factor) {
        size_t v = (size_t)(s + 0.5);
        if (sizes.empty() || v > sizes.back()) sizes.push_back(v);
    }
    return sizes;
}

// Which GPU each rank uses, gathered on rank 0 for the header.
std::vector<std::string> describe_ranks(bool device, int dev, MPI_Comm comm, int rank, int nranks)
{
    char mine[160];
    char host[64] = "?";
    gethostname(host, sizeof host - 1);
    if (device) {
        cudaDeviceProp prop;
        CUDA_CHECK(cudaGetDeviceProperties(&prop, dev));
        std::snprintf(mine, sizeof mine, "%.40s GPU %d (%.60s, PCI %04x:%02x:%02x)", host, dev, prop.name,
                      prop.pciDomainID, prop.pciBusID, prop.pciDeviceID);
    } else {
        std::snprintf(mine, sizeof mine, "%.40s host memory", host);
    }
    std::vector<char> all(rank == 0 ? sizeof mine * nranks : 1);
    MPI_CHECK(MPI_Gather(mine, sizeof mine, MPI_CHAR, all.data(), sizeof mine, MPI_CHAR, 0, comm));
    std::vector<std::string> out;
    if (rank == 0)
        for (int r = 0; r < nranks; r++) out.emplace_back(&all[r * sizeof mine]);
    return out;
}

// True on every rank when all ranks run on one GPU (one node, one PCI
// address; several ranks under MPS): they then share its HBM, whose copy rate
// bounds every collective. Collective over MPI_COMM_WORLD.
bool all_on_one_gpu(int dev, int local_size, int nranks)
{
    cudaDeviceProp prop;
    CUDA_CHECK(cudaGetDeviceProperties(&prop, dev));
    long long id[2];
    id[0] = ((long long)prop.pciDomainID << 16) | (prop.pciBusID << 8) | prop.pciDeviceID;
    id[1] = -id[0];
    // one allreduce gives the smallest id and, negated, the largest
    MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, id, 2, MPI_LONG_LONG, MPI_MIN, MPI_COMM_WORLD));
    return local_size == nranks && id[0] == -id[1];
}

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

// One row: the path in one mode validated, timed and, where asked, its
// overlap measured, on the case whose host inputs are ready. Returns false
// (no row) where an enqueued call was refused.
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
    r.algbw = r.avg_us > 0 ? c.size_bytes() / (r.avg_us * 1e3) : 0;
    r.busbw = r.algbw * busbw_factor(c.coll, x.nranks);
    r.errors = all_errors;
    r.valid = !x.opt.check ? "off" : all_errors ? "FAIL" : "ok";
    if (x.opt.overlap && p.kind == Kind::Mpi && m == Mode::Nonblocking)
        r.overlap_pct = measure_overlap(x, call, r.iters, sum / x.nranks);
    if (x.copy_rate > 0 && r.avg_us > 0) {
        r.bound_us = hbm_traffic_bytes(c) / (2 * x.copy_rate) * 1e6;   // 0: nothing must move
        r.vs_bound = r.bound_us / r.avg_us;
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
        for (const Row &r : rows) if (r.path == name && r.mode == m) return r.avg_us;
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
        if (ref > 0) r.vs_nccl = r.avg_us / ref;
        if (staged > 0) r.vs_staged = r.avg_us / staged;
    }
    return rows;
}

} // namespace

int main(int argc, char **argv)
{
    MPI_CHECK(MPI_Init(&argc, &argv));
    int rank, nranks;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

    Options opt;
    int code = 0;
    if (!parse_options(argc, argv, &opt, rank != 0, &code)) {
        MPI_Finalize();
        return code;
    }
    if (opt.root >= nranks) {
        if (rank == 0) std::fprintf(stderr, "gpucoll-bench: --root %d but only %d ranks\n", opt.root, nranks);
        MPI_Finalize();
        return 2;
    }

    // One process per GPU: local rank among the processes of this node.
    MPI_Comm node;
    int local_rank, local_size;
    MPI_CHECK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node));
    MPI_Comm_rank(node, &local_rank);
    MPI_Comm_size(node, &local_size);

    // The CUDA runtime is first touched here, after MPI_Init, as coll/gpu expects.
    const bool device = !opt.host;
    int ndev = 0, dev = 0;
    if (device && cudaGetDeviceCount(&ndev) != cudaSuccess) ndev = 0;
    int have_gpu = ndev > 0, all_have_gpu = 0;
    MPI_CHECK(MPI_Allreduce(&have_gpu, &all_have_gpu, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD));
    if (device && !all_have_gpu) {
        if (rank == 0) std::printf("gpucoll-bench: no GPU on some rank; skipping (use --host for host buffers)\n");
        MPI_Finalize();
        return 77;   // ctest "skipped"
    }
    if (device) {
        dev = local_rank % ndev;
        CUDA_CHECK(cudaSetDevice(dev));
    }
    std::vector<std::string> where = describe_ranks(device, dev, MPI_COMM_WORLD, rank, nranks);

    // The HBM bound needs every rank in one GPU's memory. Rank 0 measures the
    // copy rate before the benchmark's own buffers take their room.
    const size_t copy_bytes = size_t(256) << 20;
    double copy_rate = 0;
    std::string hbm_note;
    if (!device) {
        hbm_note = "off (host buffers)";
    } else if (!all_on_one_gpu(dev, local_size, nranks)) {
        hbm_note = "off (ranks on different GPUs)";
    } else {
        if (rank == 0) copy_rate = device_copy_rate(copy_bytes);
        MPI_CHECK(MPI_Bcast(&copy_rate, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD));
        hbm_note = copy_rate > 0 ? "on (" + std::to_string(nranks) + (nranks == 1 ? " rank" : " ranks") +
                                       " on one GPU): bound_us = least HBM bytes / (2 x copy rate)"
                                 : "off (no room on the GPU for the copy test)";
    }
    bench_mpi_types_init();

    // Path (b): the staged path, forced through communicator info.
    MPI_Info info;
    MPI_Comm staged;
    MPI_CHECK(MPI_Info_create(&info));
    MPI_CHECK(MPI_Info_set(info, "coll_gpu_path", "staged"));
    MPI_CHECK(MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &staged));
    MPI_Info_free(&info);
    MPI_Comm_set_errhandler(staged, MPI_ERRORS_RETURN);

    // Path (c): NCCL needs a GPU of its own per rank.
    std::string nccl_note;
    bool use_nccl = opt.run_nccl || opt.nccl_nosync;
    int crowded = device && local_size > ndev, any_crowded = 0;
    MPI_CHECK(MPI_Allreduce(&crowded, &any_crowded, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD));
    if (!use_nccl) nccl_note = "off";
    else if (!device) nccl_note = "off (host buffers)";
    else if (!nccl_compiled()) nccl_note = "off (built without NCCL)";
    else if (any_crowded) nccl_note = "off (more ranks than GPUs on a node: NCCL needs one GPU per rank)";
    if (!nccl_note.empty()) use_nccl = false;
    NcclPath *nccl = use_nccl ? nccl_create(MPI_COMM_WORLD) : nullptr;
    if (use_nccl) nccl_note = "NCCL " + nccl_version();

    // The enqueue and graph modes of the mpi path: coll/gpu's stream-ordered
    // calls (include/coll_gpu_ext.h) on a stream of the bench's own, set up
    // once by coll_gpu_stream_init. NCCL queues on its own stream.
    const bool want_stream = std::any_of(opt.modes.begin(), opt.modes.end(), mode_on_stream);
    cudaStream_t stream = nullptr;
    bool stream_ok = false;
    std::string stream_note;
    if (want_stream) {
        char graphs[96];
        std::snprintf(graphs, sizeof graphs, "; graphs of %d calls (fewer when fewer iterations fit)", opt.graph_calls);
        if (!device) {
            stream_note = "off (host buffers): no enqueue or graph rows";
        } else if (!opt.run_mpi) {
            stream_note = std::string("mpi path off; nccl-enqueue, nccl-graph rows") + graphs;
        } else {
            CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
            const int rc = mpi_stream_init(MPI_COMM_WORLD);
            int failed = rc != MPI_SUCCESS, nfailed = 0;
            MPI_CHECK(MPI_Allreduce(&failed, &nfailed, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
            stream_ok = nfailed == 0;
            if (stream_ok) {
                stream_note = std::string("coll_gpu_stream_init ok: mpi rows on a CUDA stream") + graphs;
            } else {
                char err[MPI_MAX_ERROR_STRING] = "", msg[MPI_MAX_ERROR_STRING + 256];
                int len = 0, cls = rc;
                if (rc != MPI_SUCCESS) {
                    MPI_Error_string(rc, err, &len);
                    if (MPI_Error_class(rc, &cls) != MPI_SUCCESS) cls = rc;
                }
                std::snprintf(msg, sizeof msg,
                              "no mpi enqueue or graph rows: coll_gpu_stream_init failed on %d of %d ranks "
                              "(rank 0: %s)%s", nfailed, nranks, rc == MPI_SUCCESS ? "ok" : err,
                              cls == MPI_ERR_UNSUPPORTED_OPERATION
                                  ? ": coll/gpu is not loaded, or has no stream-ordered collectives" : "");
                stream_note = msg;
                if (rank == 0) std::fprintf(stderr, "gpucoll-bench: %s\n", msg);
            }
        }
    }

    std::vector<Path> paths;
    if (opt.run_mpi) paths.push_back({"mpi", Kind::Mpi, MPI_COMM_WORLD, stream_ok});
    if (opt.run_staged) paths.push_back({"staged", Kind::Mpi, staged, false});
    if (use_nccl && opt.run_nccl) paths.push_back({"nccl", Kind::Nccl, MPI_COMM_NULL, true});
    if (use_nccl && opt.nccl_nosync) paths.push_back({"nccl-nosync", Kind::NcclNoSync, MPI_COMM_NULL, false});

    const std::string gpu_status = coll_gpu_status();
    std::unique_ptr<Report> report;
    if (rank == 0) {
        char lib[MPI_MAX_LIBRARY_VERSION_STRING];
        int len;
        MPI_Get_library_version(lib, &len);
        char iterations[128];
        std::snprintf(iterations, sizeof iterations, "%d timed, %d warm-up, time limit %g s per size, path and mode",
                      opt.iters, opt.warmup, opt.time_limit);
        std::string modes;
        for (Mode m : opt.modes) modes += (modes.empty() ? "" : ",") + std::string(mode_name(m));
        if (opt.overlap) modes += " (overlap measured for nonblocking)";
        std::string libs(lib);
        libs = libs.substr(0, libs.find_first_of("\n,"));
        std::vector<std::pair<std::string, std::string>> meta = {
            {"gpucoll-bench", "MPI collectives on " + std::string(device ? "device" : "host") + " buffers"},
            {"ranks", std::to_string(nranks) + " (" + std::to_string(local_size) + " on this node)"},
            {"mpi", libs},
            {"coll/gpu", gpu_status},
            {"nccl", nccl_note},
            {"iterations", iterations},
            {"modes", modes},
            {"check", opt.check ? "on" : "off"}};
        if (want_stream) meta.push_back({"enqueue, graph", stream_note});
        std::string cmd;
        for (int i = 0; i < argc; i++) cmd += (i ? " " : "") + std::string(argv[i]);
        meta.push_back({"command", cmd});
        for (int r = 0; r < nranks && r < 16; r++) meta.push_back({"rank " + std::to_string(r), where[r]});
        if (copy_rate > 0) {
            char copy[96];
            std::snprintf(copy, sizeof copy, "%.0f GB/s (cudaMemcpy device to device, %s)", copy_rate / 1e9,
                          format_size(copy_bytes).c_str());
            meta.push_back({"hbm copy", copy});
        }
        meta.push_back({"hbm bound", hbm_note});
        Columns cols;
        cols.overlap = opt.overlap;
        cols.bound = copy_rate > 0;
        report.reset(new Report(opt.csv_file, opt.json_file, meta, !device, cols));
    }

    Buffers buf(device, opt.max_bytes);
    Host host(opt.max_bytes);
    Skips skips;
    Context x{opt, rank, nranks, buf, host, nccl, copy_rate, stream, &skips};
    const std::vector<size_t> sizes = sweep_sizes(opt);
    unsigned long long total_errors = 0;
    const double start = MPI_Wtime();

    for (Coll coll : opt.colls)
        for (DType dt : opt.dtypes)
            for (size_t oi = 0; oi < (coll_is_reduction(coll) ? opt.ops.size() : 1); oi++)
                for (size_t pi = 0; pi < opt.places.size(); pi++) {
                    if (coll == Coll::Bcast && pi > 0) break;   // bcast has one mode only
                    bool grouped = false;
                    for (size_t si = 0; si < sizes.size(); si++) {
                        Case c;
                        if (!make_case(coll, dt, opt.ops[oi], opt.places[pi], opt.root, nranks, rank, sizes[si], &c))
                            continue;   // smaller than one element per rank
                        if (rank == 0 && !grouped) report->group(c);
                        grouped = true;
                        const std::string label = std::string(coll_name(coll)) + " " + dtype_name(dt) + " " +
                            (coll_is_reduction(coll) ? std::string(op_name(c.op)) + " " : "") +
                            (c.inplace ? "in-place " : "") + format_size(c.size_bytes()) + " (" +
                            std::to_string(si + 1) + "/" + std::to_string(sizes.size()) + ")";
                        std::vector<Row> rows = measure_size(x, paths, c, label, start, &total_errors);
                        if (rank == 0) for (const Row &r : rows) report->add(r);
                    }
                }
    progress(opt, rank, "", MPI_Wtime() - start, false, true);
    if (rank == 0) {
        std::printf("#\n# %s: %llu wrong result elements in %.1f s\n", total_errors ? "FAILED" : "all results valid",
                    total_errors, MPI_Wtime() - start);
        if (!opt.check) std::printf("# (results were not checked: -c 0)\n");
        if (skips.rows)
            std::printf("# %llu enqueue/graph rows not made: enqueued calls refused (the '# skipped' lines)\n",
                        skips.rows);
        report.reset();   // closes the files
    }

    nccl_destroy(nccl);
    if (stream) cudaStreamDestroy(stream);
    MPI_Comm_free(&staged);
    MPI_Comm_free(&node);
    bench_mpi_types_free();
    MPI_Finalize();
    return total_errors ? 1 : 0;
}
