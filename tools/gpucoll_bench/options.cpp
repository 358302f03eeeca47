#include "options.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>

static const char kUsage[] =
    "usage: gpucoll-bench [options]\n"
    "Times MPI collectives on GPU buffers through coll/gpu, the forced staged path\n"
    "and NCCL, on the same buffers, and checks every result.\n"
    "\n"
    "  -b, --minbytes SIZE   smallest size (default 8; K/M/G suffixes are binary)\n"
    "  -e, --maxbytes SIZE   largest size (default 1G)\n"
    "  -f, --stepfactor F    multiply the size by F each step (default 2)\n"
    "  -C, --coll LIST       allreduce,reduce_scatter,allgather,bcast,reduce,alltoall\n"
    "                        or all (default allreduce)\n"
    "  -d, --dtype LIST      fp32,fp64,fp16,bf16,int32 or all (default fp32)\n"
    "  -o, --op LIST         sum,max,min or all (default sum; reductions only)\n"
    "  -p, --place MODE      out, in or both: out-of-place / in-place (default out)\n"
    "  -r, --root N          root of bcast and reduce (default 0)\n"
    "      --mode LIST       blocking,nonblocking,persistent,enqueue,graph or all: how\n"
    "                        the mpi and staged paths call MPI (MPI_<coll>; MPI_I<coll>\n"
    "                        + MPI_Wait; a request made once per size, MPI_Start +\n"
    "                        MPI_Wait). One row each (default blocking; nccl: one\n"
    "                        blocking row for these three). Device buffers, mpi and\n"
    "                        nccl paths only (rows nccl-enqueue, nccl-graph):\n"
    "                        enqueue: N calls queued back to back on a CUDA stream\n"
    "                        (coll_gpu_<coll>_enqueue; ncclAllReduce, ...), one\n"
    "                        cudaStreamSynchronize, time / N;\n"
    "                        graph: K calls captured into one CUDA graph, R launches\n"
    "                        back to back, one sync, time / (R*K)\n"
    "      --graph-calls K   calls captured per graph (default 10, at most 100;\n"
    "                        fewer when the time limit allows fewer iterations)\n"
    "      --overlap         nonblocking rows: also measure how much of the call\n"
    "                        hides behind host computation (OSU overlap%)\n"
    "  -n, --iters N         timed iterations per size (default 50)\n"
    "  -w, --warmup N        warm-up iterations per size (default 5)\n"
    "  -t, --time-limit SEC  time budget of one size on one path and mode; fewer\n"
    "                        iterations are run when they would take longer\n"
    "                        (default 1.0)\n"
    "      --paths LIST      mpi,staged,nccl (default all three)\n"
    "      --no-mpi, --no-staged, --no-nccl   leave one path out\n"
    "      --nccl-nosync     also time NCCL back to back, one sync at the end\n"
    "                        (as nccl-tests does), reported as path nccl-nosync\n"
    "                        (the nccl-enqueue row of --mode enqueue times the same)\n"
    "  -c, --check 0|1       validate results (default 1)\n"
    "      --host            host buffers, no GPU needed (NCCL off)\n"
    "      --register        register both buffers as coll/gpu windows of\n"
    "                        MPI_COMM_WORLD (coll_gpu_register): nonblocking,\n"
    "                        persistent, enqueued and graph calls on them then\n"
    "                        run zero-copy\n"
    "      --csv FILE        write results as CSV\n"
    "      --json FILE       write results as JSON\n"
    "  -h, --help            this text\n"
    "\n"
    "When every rank runs on one GPU (several ranks under MPS), device rows also\n"
    "get bound_us and vs_bound: the least HBM traffic of the call over the\n"
    "measured device copy rate (docs/benchmark.md).\n"
    "\n"
    "Exit status: 0 all results valid, 1 a result was wrong, 2 bad arguments,\n"
    "77 no GPU (and no --host).\n";

std::string format_size(size_t b)
{
    static const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    double v = (double)b;
    while (v >= 1024 && u < 4 && std::fmod(v, 1024) == 0) { v /= 1024; u++; }
    char s[32];
    std::snprintf(s, sizeof s, "%.0f %s", v, units[u]);
    return s;
}

static bool parse_size(const char *s, size_t *out)
{
    char *end = nullptr;
    double v = std::strtod(s, &end);
    if (end == s || v < 0) return false;
    switch (*end) {
    case 'k': case 'K': v *= 1024; end++; break;
    case 'm': case 'M': v *= 1024.0 * 1024; end++; break;
    case 'g': case 'G': v *= 1024.0 * 1024 * 1024; end++; break;
    default: break;
    }
    if (*end == 'i') end++;               // accept "64Ki"
    if (*end == 'B' || *end == 'b') end++; // and "64KB"
    if (*end) return false;
    *out = (size_t)v;
    return true;
}

static std::vector<std::string> split(const std::string &s)
{
    std::vector<std::string> out;
    std::stringstream ss(s);
    std::string item;
    while (std::getline(ss, item, ','))
        if (!item.empty()) out.push_back(item);
    return out;
}

template <typename T, typename Parse>
static bool parse_list(const std::string &s, const std::vector<T> &all, Parse parse, std::vector<T> *out)
{
    if (s == "all") { *out = all; return true; }
    out->clear();
    for (const auto &item : split(s)) {
        T v;
        if (!parse(item, &v)) return false;
        out->push_back(v);
    }
    return !out->empty();
}

// Options without a value. Returns false where `a` is not one.
static bool take_flag(const std::string &a, Options *o)
{
    if (a == "--host") o->host = true;
    else if (a == "--register") o->register_windows = true;
    else if (a == "--no-mpi") o->run_mpi = false;
    else if (a == "--no-staged") o->run_staged = false;
    else if (a == "--no-nccl") o->run_nccl = false;
    else if (a == "--nccl-nosync") o->nccl_nosync = true;
    else if (a == "--overlap") o->overlap = true;
    else return false;
    return true;
}

// What the sweep covers: sizes, collectives, types, ops, places, modes,
// root, paths. Returns what is wrong with `v`, "" if nothing; *known: `a`
// is one of these options.
static std::string take_sweep_value(const std::string &a, const char *v, Options *o, bool *known)
{
    *known = true;
    if (a == "-b" || a == "--minbytes") {
        if (!parse_size(v, &o->min_bytes)) return "bad size: " + std::string(v);
    } else if (a == "-e" || a == "--maxbytes") {
        if (!parse_size(v, &o->max_bytes)) return "bad size: " + std::string(v);
    } else if (a == "-f" || a == "--stepfactor") {
        o->factor = std::atof(v);
    } else if (a == "-C" || a == "--coll") {
        if (!parse_list<Coll>(v, {Coll::Allreduce, Coll::ReduceScatter, Coll::Allgather,
                                  Coll::Bcast, Coll::Reduce, Coll::Alltoall},
                              parse_coll, &o->colls))
            return "bad collective list: " + std::string(v);
    } else if (a == "-d" || a == "--dtype") {
        if (!parse_list<DType>(v, {DType::F32, DType::F64, DType::F16, DType::BF16, DType::I32},
                               parse_dtype, &o->dtypes))
            return "bad datatype list: " + std::string(v);
    } else if (a == "-o" || a == "--op") {
        if (!parse_list<Op>(v, {Op::Sum, Op::Max, Op::Min}, parse_op, &o->ops))
            return "bad op list: " + std::string(v);
    } else if (a == "-p" || a == "--place") {
        std::string m = v;
        if (m == "out") o->places = {false};
        else if (m == "in") o->places = {true};
        else if (m == "both") o->places = {false, true};
        else return "bad --place (out, in or both): " + m;
    } else if (a == "--mode") {
        if (!parse_list<Mode>(v, {Mode::Blocking, Mode::Nonblocking, Mode::Persistent, Mode::Enqueue,
                                  Mode::Graph},
                              parse_mode, &o->modes))
            return "bad mode list (blocking, nonblocking, persistent, enqueue, graph): " + std::string(v);
    } else if (a == "-r" || a == "--root") {
        o->root = std::atoi(v);
    } else if (a == "--paths") {
        o->run_mpi = o->run_staged = o->run_nccl = false;
        for (const auto &p : split(v)) {
            if (p == "mpi") o->run_mpi = true;
            else if (p == "staged") o->run_staged = true;
            else if (p == "nccl") o->run_nccl = true;
            else return "bad path (mpi, staged, nccl): " + p;
        }
    } else {
        *known = false;
    }
    return "";
}

// How each row runs and where results go. Returns false where `a` is not
// one of these options.
static bool take_run_value(const std::string &a, const char *v, Options *o)
{
    if (a == "--graph-calls") o->graph_calls = std::atoi(v);
    else if (a == "-n" || a == "--iters") o->iters = std::atoi(v);
    else if (a == "-w" || a == "--warmup") o->warmup = std::atoi(v);
    else if (a == "-t" || a == "--time-limit") o->time_limit = std::atof(v);
    else if (a == "-c" || a == "--check") o->check = std::atoi(v) != 0;
    else if (a == "--csv") o->csv_file = v;
    else if (a == "--json") o->json_file = v;
    else if (a == "--debug-corrupt-rank") o->corrupt_rank = std::atoi(v);   // undocumented: proves checks can fail
    else return false;
    return true;
}

// The options together. Returns what is wrong, "" if nothing.
static std::string check_options(Options *o)
{
    if (o->min_bytes == 0) o->min_bytes = 1;
    if (o->max_bytes < o->min_bytes) return "--maxbytes is below --minbytes";
    // element counts are passed to MPI as int: 2 GiB of fp16 is 2^30 of them
    if (o->max_bytes > (size_t(2) << 30)) return "--maxbytes above 2G is not supported";
    if (o->factor <= 1.0) return "--stepfactor must be > 1";
    if (o->iters < 1 || o->warmup < 0) return "--iters must be >= 1, --warmup >= 0";
    if (o->time_limit <= 0) return "--time-limit must be > 0";
    if (o->root < 0) return "--root must be >= 0";
    if (o->graph_calls < 1 || o->graph_calls > 100) return "--graph-calls must be in 1..100";
    auto has_mode = [&](Mode m) { return std::find(o->modes.begin(), o->modes.end(), m) != o->modes.end(); };
    if (has_mode(Mode::Persistent) && !mpi_persistent_supported())
        return "--mode persistent: this MPI library has no persistent collectives "
               "(neither MPI-4's MPI_<coll>_init nor Open MPI's MPIX_<coll>_init in mpi-ext.h)";
    if (o->overlap && !has_mode(Mode::Nonblocking))
        return "--overlap measures nonblocking calls: add nonblocking to --mode";
    return "";
}

bool parse_options(int argc, char **argv, Options *o, bool quiet, int *exit_code)
{
    auto fail = [&](const std::string &msg) {
        if (!quiet) std::fprintf(stderr, "gpucoll-bench: %s\n(see --help)\n", msg.c_str());
        *exit_code = 2;
        return false;
    };
    for (int i = 1; i < argc; i++) {
        const std::string a = argv[i];
        if (a == "-h" || a == "--help") {
            if (!quiet) std::fputs(kUsage, stdout);
            *exit_code = 0;
            return false;
        }
        if (take_flag(a, o)) continue;
        if (i + 1 >= argc) return fail("unknown option or missing value: " + a);
        const char *v = argv[++i];
        bool known = false;
        const std::string err = take_sweep_value(a, v, o, &known);
        if (!err.empty()) return fail(err);
        if (!known && !take_run_value(a, v, o)) return fail("unknown option: " + a);
    }
    const std::string err = check_options(o);
    return err.empty() ? true : fail(err);
}
