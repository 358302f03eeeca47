#include "report.hpp"

#include "options.hpp"

static std::string json_escape(const std::string &s)
{
    std::string o;
    for (char ch : s) {
        if (ch == '"' || ch == '\\') o += '\\';
        if ((unsigned char)ch < 0x20) { o += ' '; continue; }
        o += ch;
    }
    return o;
}

static FILE *open_or_warn(const std::string &name)
{
    if (name.empty()) return nullptr;
    FILE *f = std::fopen(name.c_str(), "w");
    if (!f) std::fprintf(stderr, "gpucoll-bench: cannot write %s\n", name.c_str());
    return f;
}

Report::Report(const std::string &csv, const std::string &json,
               const std::vector<std::pair<std::string, std::string>> &meta, bool host, Columns cols)
    : host_(host), cols_(cols)
{
    for (const auto &m : meta) std::printf("# %-18s %s\n", m.first.c_str(), m.second.c_str());
    std::printf("#\n# latency of one call (blocking: MPI_<coll>; nonblocking: MPI_I<coll> + MPI_Wait;\n"
                "# persistent: MPI_Start + MPI_Wait; enqueue: N calls queued back to back on a\n"
                "# stream, one sync, time / N; graph: R launches of a graph of K captured calls,\n"
                "# one sync, time / (R*K)), mean over the timed iterations of each\n"
                "# rank; avg of those means over ranks, then their min and max. algbw = size/avg,\n"
                "# busbw = algbw * nccl-tests factor. vs_nccl / vs_staged: latency of\n"
                "# the mpi path divided by that path's (staged in the same mode; nccl, or\n"
                "# nccl-enqueue / nccl-graph for enqueue / graph rows; below 1: mpi is faster).\n");
    if (cols_.overlap)
        std::printf("# overlap(%%): nonblocking rows, as OSU: host compute of t_pure (the row's avg)\n"
                    "# between MPI_I<coll> and MPI_Wait; 100 * (1 - (t_total - t_compute) / t_pure).\n");
    if (cols_.bound)
        std::printf("# bound(us): least HBM bytes the call moves / (2 x hbm copy rate);\n"
                    "# vs_bound = bound_us / avg (1.00: at the bound).\n");
    std::fflush(stdout);
    csv_ = open_or_warn(csv);
    if (csv_)
        std::fprintf(csv_, "coll,dtype,op,inplace,mem,nranks,root,size_bytes,count,path,mode,iters,"
                           "avg_us,min_us,max_us,algbw_gbs,busbw_gbs,valid,errors,"
                           "ratio_vs_nccl,ratio_vs_staged,overlap_pct,bound_us,vs_bound\n");
    json_ = open_or_warn(json);
    if (json_) {
        std::fprintf(json_, "{\n  \"meta\": {");
        for (size_t i = 0; i < meta.size(); i++)
            std::fprintf(json_, "%s\n    \"%s\": \"%s\"", i ? "," : "",
                         json_escape(meta[i].first).c_str(), json_escape(meta[i].second).c_str());
        std::fprintf(json_, "\n  },\n  \"results\": [");
    }
}

Report::~Report()
{
    if (csv_) std::fclose(csv_);
    if (json_) {
        std::fprintf(json_, "\n  ]\n}\n");
        std::fclose(json_);
    }
}

void Report::group(const Case &c)
{
    std::printf("#\n# %s %s%s%s, %s, %d ranks, %s buffers", coll_name(c.coll), dtype_name(c.dtype),
                coll_is_reduction(c.coll) ? " " : "", coll_is_reduction(c.coll) ? op_name(c.op) : "",
                c.coll == Coll::Bcast ? "in-place" : c.inplace ? "in-place" : "out-of-place",
                c.nranks, host_ ? "host" : "device");
    if (coll_has_root(c.coll)) std::printf(", root %d", c.root);
    std::printf("\n# %12s %12s  %-12s %-11s %6s %10s %10s %10s %11s %11s %6s %8s %9s", "size(B)",
                "count", "path", "mode", "iters", "avg(us)", "min(us)", "max(us)", "algbw(GB/s)",
                "busbw(GB/s)", "valid", "vs_nccl", "vs_staged");
    if (cols_.overlap) std::printf(" %10s", "overlap(%)");
    if (cols_.bound) std::printf(" %10s %8s", "bound(us)", "vs_bound");
    std::printf("\n");
    std::fflush(stdout);
}

// A value that only some rows have: `none` where a row has not.
static std::string maybe(bool have, double v, const char *fmt, const char *none)
{
    if (!have) return none;
    char s[32];
    std::snprintf(s, sizeof s, fmt, v);
    return s;
}

static std::string ratio(double r, const char *none = "-") { return maybe(r > 0, r, "%.3f", none); }

void Report::add(const Row &r)
{
    const Case &c = r.c;
    const bool overlap = r.overlap_pct >= 0, bound = r.bound_us > 0;
    std::printf("  %12zu %12zu  %-12s %-11s %6d %10.2f %10.2f %10.2f %11.3f %11.3f %6s %8s %9s",
                c.size_bytes(), c.count(), r.path.c_str(), mode_name(r.mode), r.iters, r.avg_us,
                r.min_us, r.max_us, r.algbw, r.busbw, r.valid.c_str(), ratio(r.vs_nccl).c_str(),
                ratio(r.vs_staged).c_str());
    if (cols_.overlap) std::printf(" %10s", maybe(overlap, r.overlap_pct, "%.1f", "-").c_str());
    if (cols_.bound)
        std::printf(" %10s %8s", maybe(bound, r.bound_us, "%.2f", "-").c_str(),
                    maybe(bound, r.vs_bound, "%.3f", "-").c_str());
    std::printf("\n");
    std::fflush(stdout);
    const char *op = coll_is_reduction(c.coll) ? op_name(c.op) : "none";
    if (csv_) {
        std::fprintf(csv_, "%s,%s,%s,%d,%s,%d,%d,%zu,%zu,%s,%s,%d,%.3f,%.3f,%.3f,%.4f,%.4f,%s,%zu,%s,%s,%s,%s,%s\n",
                     coll_name(c.coll), dtype_name(c.dtype), op, c.inplace ? 1 : 0,
                     host_ ? "host" : "device", c.nranks, c.root, c.size_bytes(), c.count(),
                     r.path.c_str(), mode_name(r.mode), r.iters, r.avg_us, r.min_us, r.max_us, r.algbw,
                     r.busbw, r.valid.c_str(), r.errors, ratio(r.vs_nccl, "").c_str(),
                     ratio(r.vs_staged, "").c_str(), maybe(overlap, r.overlap_pct, "%.2f", "").c_str(),
                     maybe(bound, r.bound_us, "%.4g", "").c_str(), maybe(bound, r.vs_bound, "%.4g", "").c_str());
        std::fflush(csv_);
    }
    if (json_) {
        std::fprintf(json_,
                     "%s\n    {\"coll\": \"%s\", \"dtype\": \"%s\", \"op\": \"%s\", \"inplace\": %s, "
                     "\"mem\": \"%s\", \"nranks\": %d, \"root\": %d, \"size_bytes\": %zu, "
                     "\"count\": %zu, \"path\": \"%s\", \"mode\": \"%s\", \"iters\": %d, \"avg_us\": %.3f, "
                     "\"min_us\": %.3f, \"max_us\": %.3f, \"algbw_gbs\": %.4f, \"busbw_gbs\": %.4f, "
                     "\"valid\": \"%s\", \"errors\": %zu, \"ratio_vs_nccl\": %s, "
                     "\"ratio_vs_staged\": %s, \"overlap_pct\": %s, \"bound_us\": %s, \"vs_bound\": %s}",
                     first_json_ ? "" : ",", coll_name(c.coll), dtype_name(c.dtype), op,
                     c.inplace ? "true" : "false", host_ ? "host" : "device", c.nranks, c.root,
                     c.size_bytes(), c.count(), r.path.c_str(), mode_name(r.mode), r.iters, r.avg_us,
                     r.min_us, r.max_us, r.algbw, r.busbw, r.valid.c_str(), r.errors,
                     ratio(r.vs_nccl, "null").c_str(), ratio(r.vs_staged, "null").c_str(),
                     maybe(overlap, r.overlap_pct, "%.2f", "null").c_str(),
                     maybe(bound, r.bound_us, "%.4g", "null").c_str(),
                     maybe(bound, r.vs_bound, "%.4g", "null").c_str());
        first_json_ = false;
        std::fflush(json_);
    }
}
