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

#include "bench_call.hpp"
#include "environment.hpp"
#include "measure.hpp"
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

// Where this process runs: its rank and its node's share of the job.
struct Place {
    int rank = 0, nranks = 1;
    MPI_Comm node = MPI_COMM_NULL;   // the processes of this node
    int local_rank = 0, local_size = 1;
    bool device = true;              // device buffers (not --host)
    int dev = 0, ndev = 0;           // this rank's GPU, the node's GPU count
};

// Text for the header, one line per topic.
struct Notes {
    std::string hbm, nccl, stream;
};

// One process per GPU: local rank among the processes of this node. The CUDA
// runtime is first touched here, after MPI_Init, as coll/gpu expects.
// Returns 0, or the exit code (77, ctest's "skipped", without a GPU).
int place_rank(const Options &opt, Place *p)
{
    MPI_Comm_rank(MPI_COMM_WORLD, &p->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &p->nranks);
    MPI_CHECK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, p->rank, MPI_INFO_NULL, &p->node));
    MPI_Comm_rank(p->node, &p->local_rank);
    MPI_Comm_size(p->node, &p->local_size);
    p->device = !opt.host;
    if (p->device && cudaGetDeviceCount(&p->ndev) != cudaSuccess) p->ndev = 0;
    int have_gpu = p->ndev > 0, all_have_gpu = 0;
    MPI_CHECK(MPI_Allreduce(&have_gpu, &all_have_gpu, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD));
    if (p->device && !all_have_gpu) {
        if (p->rank == 0) std::printf("gpucoll-bench: no GPU on some rank; skipping (use --host for host buffers)\n");
        return 77;
    }
    if (p->device) {
        p->dev = p->local_rank % p->ndev;
        CUDA_CHECK(cudaSetDevice(p->dev));
    }
    return 0;
}

// The HBM bound needs every rank in one GPU's memory. Rank 0 measures the
// copy rate before the benchmark's own buffers take their room. Returns the
// rate (0: no bound).
double hbm_copy_rate(const Place &p, size_t copy_bytes, std::string *note)
{
    if (!p.device) {
        *note = "off (host buffers)";
        return 0;
    }
    if (!all_on_one_gpu(p.dev, p.local_size, p.nranks)) {
        *note = "off (ranks on different GPUs)";
        return 0;
    }
    double copy_rate = 0;
    if (p.rank == 0) copy_rate = device_copy_rate(copy_bytes);
    MPI_CHECK(MPI_Bcast(&copy_rate, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD));
    *note = copy_rate > 0 ? "on (" + std::to_string(p.nranks) + (p.nranks == 1 ? " rank" : " ranks") +
                                " on one GPU): bound_us = least HBM bytes / (2 x copy rate)"
                          : "off (no room on the GPU for the copy test)";
    return copy_rate;
}

// Path (b): the staged path, forced through communicator info.
MPI_Comm staged_comm()
{
    MPI_Info info;
    MPI_Comm staged;
    MPI_CHECK(MPI_Info_create(&info));
    MPI_CHECK(MPI_Info_set(info, "coll_gpu_path", "staged"));
    MPI_CHECK(MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &staged));
    MPI_Info_free(&info);
    MPI_Comm_set_errhandler(staged, MPI_ERRORS_RETURN);
    return staged;
}

// Path (c): NCCL needs a GPU of its own per rank. Null where it is off (*note says why).
NcclPath *open_nccl(const Options &opt, const Place &p, std::string *note)
{
    bool use_nccl = opt.run_nccl || opt.nccl_nosync;
    int crowded = p.device && p.local_size > p.ndev, any_crowded = 0;
    MPI_CHECK(MPI_Allreduce(&crowded, &any_crowded, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD));
    if (!use_nccl) *note = "off";
    else if (!p.device) *note = "off (host buffers)";
    else if (!nccl_compiled()) *note = "off (built without NCCL)";
    else if (any_crowded) *note = "off (more ranks than GPUs on a node: NCCL needs one GPU per rank)";
    if (!note->empty()) return nullptr;
    *note = "NCCL " + nccl_version();
    return nccl_create(MPI_COMM_WORLD);
}

// Whether the mpi and staged paths can take device buffers: coll/gpu loaded,
// or an MPI that is CUDA-aware itself; otherwise they would crash, so they
// are left out (rank 0 says why). Alike on every rank.
bool mpi_paths_usable(const Place &p)
{
    if (!p.device) return true;
    int ok = coll_gpu_status().rfind("loaded", 0) == 0 || mpi_cuda_aware(), all = 0;
    MPI_CHECK(MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD));
    if (!all && p.rank == 0)
        std::fprintf(stderr, "gpucoll-bench: coll/gpu is not loaded and this MPI is not CUDA-aware: the mpi and "
                             "staged paths would crash on device buffers, so they do not run (put coll/gpu's folder "
                             "first on OMPI_MCA_mca_base_component_path: Open MPI 4.1 stops at a missing folder)\n");
    return all != 0;
}

// Why coll_gpu_stream_init failed, for the header and stderr.
std::string stream_init_failure(int rc, int nfailed, int nranks)
{
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
    return msg;
}

// The enqueue and graph modes of the mpi path: coll/gpu's stream-ordered
// calls (include/coll_gpu_ext.h) on a stream of the bench's own, set up
// once by coll_gpu_stream_init. NCCL queues on its own stream. Returns
// whether the mpi path takes those modes; *stream stays null where unused.
bool open_stream(const Options &opt, const Place &p, cudaStream_t *stream, std::string *note)
{
    if (!std::any_of(opt.modes.begin(), opt.modes.end(), mode_on_stream)) return false;
    char graphs[96];
    std::snprintf(graphs, sizeof graphs, "; graphs of %d calls (fewer when fewer iterations fit)", opt.graph_calls);
    if (!p.device) {
        *note = "off (host buffers): no enqueue or graph rows";
        return false;
    }
    if (!opt.run_mpi) {
        *note = std::string("mpi path off; nccl-enqueue, nccl-graph rows") + graphs;
        return false;
    }
    CUDA_CHECK(cudaStreamCreateWithFlags(stream, cudaStreamNonBlocking));
    const int rc = mpi_stream_init(MPI_COMM_WORLD);
    int failed = rc != MPI_SUCCESS, nfailed = 0;
    MPI_CHECK(MPI_Allreduce(&failed, &nfailed, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    if (nfailed == 0) {
        *note = std::string("coll_gpu_stream_init ok: mpi rows on a CUDA stream") + graphs;
        return true;
    }
    *note = stream_init_failure(rc, nfailed, p.nranks);
    if (p.rank == 0) std::fprintf(stderr, "gpucoll-bench: %s\n", note->c_str());
    return false;
}

// The header's lines: the run's settings and what it runs on.
std::vector<std::pair<std::string, std::string>> header(const Options &opt, const Place &p, const Notes &n,
                                                        int argc, char **argv)
{
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
        {"gpucoll-bench", "MPI collectives on " + std::string(p.device ? "device" : "host") + " buffers"},
        {"ranks", std::to_string(p.nranks) + " (" + std::to_string(p.local_size) + " on this node)"},
        {"mpi", libs},
        {"coll/gpu", coll_gpu_status()},
        {"nccl", n.nccl},
        {"iterations", iterations},
        {"modes", modes},
        {"check", opt.check ? "on" : "off"}};
    if (std::any_of(opt.modes.begin(), opt.modes.end(), mode_on_stream)) meta.push_back({"enqueue, graph", n.stream});
    std::string cmd;
    for (int i = 0; i < argc; i++) cmd += (i ? " " : "") + std::string(argv[i]);
    meta.push_back({"command", cmd});
    return meta;
}

// Rank 0's report: the header, each rank's GPU, the HBM bound's basis.
std::unique_ptr<Report> open_report(const Options &opt, const Place &p, const Notes &n, int argc, char **argv,
                                    const std::vector<std::string> &where, double copy_rate, size_t copy_bytes)
{
    std::vector<std::pair<std::string, std::string>> meta = header(opt, p, n, argc, argv);
    for (int r = 0; r < p.nranks && r < 16; r++) meta.push_back({"rank " + std::to_string(r), where[r]});
    if (copy_rate > 0) {
        char copy[96];
        std::snprintf(copy, sizeof copy, "%.0f GB/s (cudaMemcpy device to device, %s)", copy_rate / 1e9,
                      format_size(copy_bytes).c_str());
        meta.push_back({"hbm copy", copy});
    }
    meta.push_back({"hbm bound", n.hbm});
    Columns cols;
    cols.overlap = opt.overlap;
    cols.bound = copy_rate > 0;
    return std::unique_ptr<Report>(new Report(opt.csv_file, opt.json_file, meta, !p.device, cols));
}

// Every case of the options at every size; rows go to the report (rank 0).
// Returns the wrong result elements over all ranks.
unsigned long long run_sweep(const Context &x, const std::vector<Path> &paths, Report *report, double start)
{
    const Options &opt = x.opt;
    const std::vector<size_t> sizes = sweep_sizes(opt);
    unsigned long long total_errors = 0;
    for (Coll coll : opt.colls)
        for (DType dt : opt.dtypes)
            for (size_t oi = 0; oi < (coll_is_reduction(coll) ? opt.ops.size() : 1); oi++)
                for (size_t pi = 0; pi < opt.places.size(); pi++) {
                    if (coll == Coll::Bcast && pi > 0) break;   // bcast has one mode only
                    bool grouped = false;
                    for (size_t si = 0; si < sizes.size(); si++) {
                        Case c;
                        if (!make_case(coll, dt, opt.ops[oi], opt.places[pi], opt.root, x.nranks, x.rank, sizes[si], &c))
                            continue;   // smaller than one element per rank
                        if (x.rank == 0 && !grouped) report->group(c);
                        grouped = true;
                        const std::string label = std::string(coll_name(coll)) + " " + dtype_name(dt) + " " +
                            (coll_is_reduction(coll) ? std::string(op_name(c.op)) + " " : "") +
                            (c.inplace ? "in-place " : "") + format_size(c.size_bytes()) + " (" +
                            std::to_string(si + 1) + "/" + std::to_string(sizes.size()) + ")";
                        std::vector<Row> rows = measure_size(x, paths, c, label, start, &total_errors);
                        if (x.rank == 0) for (const Row &r : rows) report->add(r);
                    }
                }
    return total_errors;
}

void summarize(const Options &opt, unsigned long long total_errors, const Skips &skips, double seconds)
{
    std::printf("#\n# %s: %llu wrong result elements in %.1f s\n", total_errors ? "FAILED" : "all results valid",
                total_errors, seconds);
    if (!opt.check) std::printf("# (results were not checked: -c 0)\n");
    if (skips.rows)
        std::printf("# %llu enqueue/graph rows not made: enqueued calls refused (the '# skipped' lines)\n", skips.rows);
}

// The paths the options ask for that can run here.
std::vector<Path> make_paths(const Options &opt, const Place &p, MPI_Comm staged, NcclPath *nccl, bool stream_ok)
{
    std::vector<Path> paths;
    const bool mpi_ok = mpi_paths_usable(p);
    if (opt.run_mpi && mpi_ok) paths.push_back({"mpi", Kind::Mpi, MPI_COMM_WORLD, stream_ok});
    if (opt.run_staged && mpi_ok) paths.push_back({"staged", Kind::Mpi, staged, false});
    if (nccl && opt.run_nccl) paths.push_back({"nccl", Kind::Nccl, MPI_COMM_NULL, true});
    if (nccl && opt.nccl_nosync) paths.push_back({"nccl-nosync", Kind::NcclNoSync, MPI_COMM_NULL, false});
    if (paths.empty() && p.rank == 0) std::fprintf(stderr, "gpucoll-bench: no path left to run\n");
    return paths;
}

// Everything after the options and the GPU are settled. Returns the exit
// code: 1 where a result was wrong, 2 where no path could run.
int run_bench(const Options &opt, const Place &p, int argc, char **argv)
{
    const std::vector<std::string> where = describe_ranks(p.device, p.dev, MPI_COMM_WORLD, p.rank, p.nranks);
    Notes notes;
    const size_t copy_bytes = size_t(256) << 20;
    const double copy_rate = hbm_copy_rate(p, copy_bytes, &notes.hbm);
    bench_mpi_types_init();
    MPI_Comm staged = staged_comm();
    NcclPath *nccl = open_nccl(opt, p, &notes.nccl);
    cudaStream_t stream = nullptr;
    const bool stream_ok = open_stream(opt, p, &stream, &notes.stream);
    const std::vector<Path> paths = make_paths(opt, p, staged, nccl, stream_ok);
    int code = 2;
    if (!paths.empty()) {
        std::unique_ptr<Report> report;
        if (p.rank == 0) report = open_report(opt, p, notes, argc, argv, where, copy_rate, copy_bytes);
        Buffers buf(p.device, opt.max_bytes);
        const Windows windows(opt.register_windows, buf, MPI_COMM_WORLD);
        if (opt.register_windows && p.rank == 0)
            std::printf("# --register: %s\n", windows.status() == MPI_SUCCESS ? "both buffers are coll/gpu windows"
                                                                             : "registration failed: calls as without");
        Host host(opt.max_bytes);
        Skips skips;
        Context x{opt, p.rank, p.nranks, buf, host, nccl, copy_rate, stream, &skips};
        const double start = MPI_Wtime();
        const unsigned long long total_errors = run_sweep(x, paths, report.get(), start);
        progress(opt, p.rank, "", MPI_Wtime() - start, false, true);
        if (p.rank == 0) {
            summarize(opt, total_errors, skips, MPI_Wtime() - start);
            report.reset();   // closes the files
        }
        code = total_errors ? 1 : 0;
    }
    nccl_destroy(nccl);
    if (stream) cudaStreamDestroy(stream);
    MPI_Comm_free(&staged);
    bench_mpi_types_free();
    return code;
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
        code = 2;
    }
    Place p;
    if (!code && (code = place_rank(opt, &p)) == 0) code = run_bench(opt, p, argc, argv);
    if (p.node != MPI_COMM_NULL) MPI_Comm_free(&p.node);
    MPI_Finalize();
    return code;
}
