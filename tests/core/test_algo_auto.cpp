// The automatic choice of make_plan, frozen: for every kind, 1-8 ranks and
// sizes on both sides of every threshold (ll_max_bytes, oneshot_max_bytes,
// kWritesMinBytes, bcast_forward's 4 and 64 MiB), with and without mapped buffers, queued or blocking, in
// place or not, every direct_style and both GPU layouts, the algorithm picked
// (or none) must be the one recorded in algo_auto_choices.txt (a line per
// case: the choice for each size of sizes[], runs of one choice as "choice*n";
// "/2" the scratch areas per step, "s" strided). The file was
// written from the selection as it stood before the algorithm registry
// (forcing parameters per kind) replaced its hand-written switch; a change to
// the tuning rewrites it on purpose:
//   test_algo_auto --write tests/core/algo_auto_choices.txt
// and the diff shows which choices moved.
#include <cstdio>
#include <cstring>
#include <fstream>
#include <initializer_list>
#include <sstream>
#include <string>
#include <vector>

#include "algo_select.hpp"

using namespace gpucoll;

#include "../common/check.h"

namespace {

std::vector<std::string> choices()
{
    std::vector<std::string> lines;
    const size_t sizes[] = {4,         64u << 10,         (256u << 10) - 4, 256u << 10,        (256u << 10) + 4,
                            (1u << 20) - 4, 1u << 20,     (1u << 20) + 4,  (4u << 20) - 4,    4u << 20,
                            (16u << 20) - 4, 16u << 20,   (16u << 20) + 4, (64u << 20) - 4,   64u << 20};
    for (int k = 0; k < GPUCOLL_COLL_KIND_COUNT; k++) {
        const auto kind = (gpucoll_coll_kind_t)k;
        const bool reduces = kind == GPUCOLL_COLL_ALLREDUCE || kind == GPUCOLL_COLL_REDUCE ||
                             kind == GPUCOLL_COLL_REDUCE_SCATTER_BLOCK || kind == GPUCOLL_COLL_REDUCE_SCATTER;
        const gpucoll_dtype_t dt = reduces ? GPUCOLL_FLOAT32 : GPUCOLL_UINT8;
        const size_t elt = reduces ? 4 : 1;
        for (int ranks = 1; ranks <= 8; ranks++)
            for (bool direct : {false, true})
                for (bool queued : {false, true})
                    for (size_t ll_max : {(size_t)0, (size_t)GPUCOLL_DEFAULT_LL_MAX_BYTES})
                        for (int style : {GPUCOLL_DIRECT_AUTO, GPUCOLL_DIRECT_PULL, GPUCOLL_DIRECT_PUSH})
                            for (bool one_gpu : {false, true})
                                for (bool in_place : {false, true}) {
                                    // Only what can matter: style and GPU layout pick
                                    // among zero-copy rows, LL and queued calls need
                                    // buffers that are not mapped.
                                    if (!direct && (style != GPUCOLL_DIRECT_AUTO || one_gpu)) continue;
                                    if (direct && (queued || ll_max)) continue;
                                    gpucoll_config_t cfg{};
                                    gpucoll_config_fill_defaults(&cfg);
                                    cfg.ll_max_bytes = ll_max;
                                    cfg.direct_style = style;
                                    std::ostringstream line;
                                    line << "kind " << k << " ranks " << ranks << (direct ? " direct" : "")
                                         << (queued ? " queued" : "") << (ll_max ? " ll" : "")
                                         << (style == GPUCOLL_DIRECT_PULL   ? " pull"
                                             : style == GPUCOLL_DIRECT_PUSH ? " push"
                                                                            : "")
                                         << (one_gpu ? " one_gpu" : "") << (in_place ? " in_place" : "") << ":";
                                    // Runs of one choice as "choice*n": size by size, in the order of sizes[].
                                    std::string run;
                                    int run_length = 0;
                                    auto flush = [&] {
                                        if (run_length) line << ' ' << run << '*' << run_length;
                                    };
                                    for (size_t bytes : sizes) {
                                        gpucoll_coll_args_t a{};
                                        static const char input[1] = {0};
                                        a.kind = kind;
                                        a.count = bytes / elt;
                                        a.dtype = dt;
                                        a.op = reduces ? GPUCOLL_OP_SUM : GPUCOLL_OP_NONE;
                                        a.root = ranks - 1;
                                        a.local_ok = 1;
                                        a.sbuf = in_place ? nullptr : input;
                                        Plan p{};
                                        const bool got = make_plan(a, 0, ranks, cfg, direct, &p,
                                                                   GpuShare{132, one_gpu ? ranks : 1}, queued);
                                        std::string choice = got ? algo_name(p.algo) : "-";
                                        if (got)
                                            choice += "/" + std::to_string(p.scratch_blocks_per_step) +
                                                      (p.strided ? "s" : "");
                                        if (choice != run) {
                                            flush();
                                            run = choice;
                                            run_length = 0;
                                        }
                                        run_length++;
                                    }
                                    flush();
                                    lines.push_back(line.str());
                                }
    }
    return lines;
}

} // namespace

int main(int argc, char **argv)
{
    const std::vector<std::string> now = choices();
    if (argc == 3 && std::strcmp(argv[1], "--write") == 0) {
        std::ofstream out(argv[2]);
        for (const std::string &l : now) out << l << '\n';
        return out ? 0 : 1;
    }
    if (argc != 2) {
        std::printf("usage: %s RECORDED | --write RECORDED\n", argv[0]);
        return 2;
    }
    std::ifstream in(argv[1]);
    CHECK(in.good(), "cannot read %s", argv[1]);
    std::vector<std::string> recorded;
    for (std::string l; std::getline(in, l);) recorded.push_back(l);
    CHECK(recorded.size() == now.size(), "%zu cases recorded, %zu now", recorded.size(), now.size());
    for (size_t i = 0; i < recorded.size() && i < now.size(); i++)
        CHECK(recorded[i] == now[i], "\n  recorded %s\n  now      %s", recorded[i].c_str(), now[i].c_str());
    std::printf("algo_auto: %zu cases, %d differ\n", now.size(), failures);
    return failures ? 1 : 0;
}
