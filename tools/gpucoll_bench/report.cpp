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
               const std::vector<std::pair<std::string, std::string>> &meta, bool host)
    : host_(host)
{
    for (const auto &m : meta) std::printf("# %-18s %s\n", m.first.c_str(), m.second.c_str());
    std::printf("#\n# latency: blocking call, mean over the timed iterations of each rank; avg of\n"
                "# those means over ranks, then their min and max. algbw = size/avg,\n"
                "# busbw = algbw * nccl-tests factor. vs_nccl / vs_staged: latency of\n"
                "# the mpi path divided by that path's (below 1: mpi is faster).\n");
    std::fflush(stdout);
    csv_ = open_or_warn(csv);
    if (csv_)
        std::fprintf(csv_, "coll,dtype,op,inplace,mem,nranks,root,size_bytes,count,path,iters,"
                           "avg_us,min_us,max_us,algbw_gbs,busbw_gbs,valid,errors,"
                           "ratio_vs_nccl,ratio_vs_staged\n");
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
    std::printf("\n# %12s %12s  %-11s %6s %10s %10s %10s %11s %11s %6s %8s %9s\n", "size(B)",
                "count", "path", "iters", "avg(us)", "min(us)", "max(us)", "algbw(GB/s)",
                "busbw(GB/s)", "valid", "vs_nccl", "vs_staged");
    std::fflush(stdout);
}

static std::string ratio(double r)
{
    if (r <= 0) return "-";
    char s[32];
    std::snprintf(s, sizeof s, "%.3f", r);
    return s;
}

void Report::add(const Row &r)
{
    const Case &c = r.c;
    std::printf("  %12zu %12zu  %-11s %6d %10.2f %10.2f %10.2f %11.3f %11.3f %6s %8s %9s\n",
                c.size_bytes(), c.count(), r.path.c_str(), r.iters, r.avg_us, r.min_us, r.max_us,
                r.algbw, r.busbw, r.valid.c_str(), ratio(r.vs_nccl).c_str(),
                ratio(r.vs_staged).c_str());
    std::fflush(stdout);
    const char *op = coll_is_reduction(c.coll) ? op_name(c.op) : "none";
    if (csv_) {
        std::fprintf(csv_, "%s,%s,%s,%d,%s,%d,%d,%zu,%zu,%s,%d,%.3f,%.3f,%.3f,%.4f,%.4f,%s,%zu,%s,%s\n",
                     coll_name(c.coll), dtype_name(c.dtype), op, c.inplace ? 1 : 0,
                     host_ ? "host" : "device", c.nranks, c.root, c.size_bytes(), c.count(),
                     r.path.c_str(), r.iters, r.avg_us, r.min_us, r.max_us, r.algbw, r.busbw,
                     r.valid.c_str(), r.errors, r.vs_nccl > 0 ? ratio(r.vs_nccl).c_str() : "",
                     r.vs_staged > 0 ? ratio(r.vs_staged).c_str() : "");
        std::fflush(csv_);
    }
    if (json_) {
        std::fprintf(json_,
                     "%s\n    {\"coll\": \"%s\", \"dtype\": \"%s\", \"op\": \"%s\", \"inplace\": %s, "
                     "\"mem\": \"%s\", \"nranks\": %d, \"root\": %d, \"size_bytes\": %zu, "
                     "\"count\": %zu, \"path\": \"%s\", \"iters\": %d, \"avg_us\": %.3f, "
                     "\"min_us\": %.3f, \"max_us\": %.3f, \"algbw_gbs\": %.4f, \"busbw_gbs\": %.4f, "
                     "\"valid\": \"%s\", \"errors\": %zu, \"ratio_vs_nccl\": %s, "
                     "\"ratio_vs_staged\": %s}",
                     first_json_ ? "" : ",", coll_name(c.coll), dtype_name(c.dtype), op,
                     c.inplace ? "true" : "false", host_ ? "host" : "device", c.nranks, c.root,
                     c.size_bytes(), c.count(), r.path.c_str(), r.iters, r.avg_us, r.min_us,
                     r.max_us, r.algbw, r.busbw, r.valid.c_str(), r.errors,
                     r.vs_nccl > 0 ? ratio(r.vs_nccl).c_str() : "null",
                     r.vs_staged > 0 ? ratio(r.vs_staged).c_str() : "null");
        first_json_ = false;
        std::fflush(json_);
    }
}
