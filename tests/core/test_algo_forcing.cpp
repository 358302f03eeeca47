// Forcing an algorithm per kind (config.algorithm[], the glue's
// coll_gpu_<kind>_algorithm), without a GPU: the values name the table's
// rows of the right kind, every row can be forced onto some call, a forced
// row that cannot serve a call leaves it to the automatic choice (and says
// why), and the zero-copy decision follows the forced row's protocol.
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <set>
#include <string>
#include <vector>

#include "algo_select.hpp"
#include "algo_forcing.h"

using namespace gpucoll;

#include "../common/check.h"

namespace {

bool reduces(gpucoll_coll_kind_t k)
{
    return k == GPUCOLL_COLL_ALLREDUCE || k == GPUCOLL_COLL_REDUCE || k == GPUCOLL_COLL_REDUCE_SCATTER_BLOCK ||
           k == GPUCOLL_COLL_REDUCE_SCATTER;
}

gpucoll_coll_args_t call(gpucoll_coll_kind_t kind, size_t bytes, bool in_place, int root = 0)
{
    static const char input[1] = {0};
    static size_t counts[kMaxPeers], displs[kMaxPeers];
    gpucoll_coll_args_t a{};
    a.kind = kind;
    a.dtype = reduces(kind) ? GPUCOLL_FLOAT32 : GPUCOLL_UINT8;
    a.op = reduces(kind) ? GPUCOLL_OP_SUM : GPUCOLL_OP_NONE;
    a.count = bytes / gpucoll_dtype_size(a.dtype);
    a.root = root;
    a.local_ok = 1;
    a.sbuf = in_place ? nullptr : input;
    for (int r = 0; r < kMaxPeers; r++) {
        counts[r] = a.count;
        displs[r] = r * a.count;
    }
    a.counts = a.rcounts = counts;
    a.displs = a.rdispls = displs;
    return a;
}

std::vector<std::string> names_of(gpucoll_coll_kind_t kind)
{
    const char *names[16];
    const int n = gpucoll_algorithm_names(kind, names, 16);
    return std::vector<std::string>(names, names + (n < 16 ? n : 16));
}

// The calls the sweeps below plan: around every threshold, mapped or not,
// queued or not, in place or not.
struct Case {
    size_t bytes;
    int ranks;
    bool direct, queued, in_place;
};
std::vector<Case> cases()
{
    std::vector<Case> out;
    for (size_t bytes : {(size_t)16, (size_t)64 << 10, (size_t)(256u << 10) + 16, (size_t)(1u << 20) + 16,
                         (size_t)8 << 20, (size_t)32 << 20})
        for (int ranks : {1, 2, 3, 4, 8})
            for (bool direct : {false, true})
                for (bool queued : {false, true})
                    for (bool in_place : {false, true})
                        if (!(direct && queued)) out.push_back({bytes, ranks, direct, queued, in_place});
    return out;
}

} // namespace

// One forcing slot per kind with more than one row; the vector kinds have one each.
static void check_forcing_slots()
{
    for (int k = 0; k < GPUCOLL_COLL_KIND_COUNT; k++) {
        const auto kind = (gpucoll_coll_kind_t)k;
        const std::vector<std::string> names = names_of(kind);
        CHECK((int)names.size() == algo_rows(kind, nullptr, 0), "kind %d", k);
        CHECK(k < GPUCOLL_FORCEABLE_KINDS ? names.size() > 1 : names.size() == 1, "kind %d has %zu rows", k,
              names.size());
        PeerAlgo rows[16];
        algo_rows(kind, rows, 16);
        std::set<std::string> seen;
        for (size_t i = 0; i < names.size(); i++) {
            CHECK(!names[i].empty() && seen.insert(names[i]).second, "kind %d row %zu", k, i);
            CHECK(names[i] == algo_name(rows[i]) || rows[i] == PeerAlgo::VectorPush ||
                      rows[i] == PeerAlgo::ReduceScatterDirect,
                  "kind %d: %s against %s", k, names[i].c_str(), algo_name(rows[i]));
        }
    }
}

// Every value of every forcing slot names a row of its own kind; 0 and
// values past the rows are the automatic choice.
static void check_forcing_values(const gpucoll_config_t &base)
{
    for (int k = 0; k < GPUCOLL_FORCEABLE_KINDS; k++) {
        const auto kind = (gpucoll_coll_kind_t)k;
        const std::vector<std::string> names = names_of(kind);
        for (int v = -1; v <= (int)names.size() + 1; v++) {
            gpucoll_config_t c = base;
            c.algorithm[k] = v;
            const char *forced = forced_algorithm(kind, c);
            if (v >= 1 && v <= (int)names.size()) {
                CHECK(forced && names[v - 1] == forced, "kind %d value %d", k, v);
                CHECK(algorithm_value(kind, forced) == v);
            } else {
                CHECK(!forced, "kind %d value %d forces %s", k, v, forced);
            }
            for (int other = 0; other < GPUCOLL_FORCEABLE_KINDS; other++)
                if (other != k) CHECK(!forced_algorithm((gpucoll_coll_kind_t)other, c));
        }
    }
}

// Row i of kind k (names[i]) forced onto every case.
static void check_forced_row(const gpucoll_config_t &base, int k, const std::vector<std::string> &names, size_t i)
{
    const auto kind = (gpucoll_coll_kind_t)k;
    gpucoll_config_t c = base;
    c.algorithm[k] = (int)i + 1;
    int served = 0, refused = 0;
    for (const Case &x : cases())
        for (int share_ranks : {1, x.ranks}) {
            const GpuShare share{132, share_ranks};
            const gpucoll_coll_args_t a = call(kind, x.bytes, x.in_place, x.ranks - 1);
            Plan forced{}, automatic{};
            const bool got = make_plan(a, 0, x.ranks, c, x.direct, &forced, share, x.queued);
            const bool got_auto = make_plan(a, 0, x.ranks, base, x.direct, &automatic, share, x.queued);
            if (!got) {
                CHECK(!got_auto, "%s: no plan where auto has one", names[i].c_str());
                continue;
            }
            if (!forced.forced_refused) {
                served++;
                CHECK(names[i] == forced.name, "%s forced, %s ran", names[i].c_str(), forced.name);
                CHECK(!x.queued || !is_direct(forced.algo), "%s: zero-copy queued", forced.name);
                CHECK(forced.wait_acks == (x.queued && ll_one_way(forced.algo)),
                      "%s: LL acknowledgements waited for %d, queued %d",
                      forced.name, (int)forced.wait_acks, (int)x.queued);
                CHECK(!is_direct(forced.algo) || x.direct, "%s without mapped buffers", forced.name);
                CHECK(!is_ll(forced.algo) || (!x.direct && x.bytes <= c.ll_max_bytes), "%s at %zu bytes",
                      forced.name, x.bytes);
            } else {
                refused++;
                CHECK(got_auto && forced.algo == automatic.algo && !std::strcmp(forced.name, automatic.name) &&
                          forced.chunk == automatic.chunk &&
                          forced.scratch_blocks_per_step == automatic.scratch_blocks_per_step &&
                          forced.strided == automatic.strided,
                      "%s refused (%s): %s, auto %s", names[i].c_str(), forced.forced_refused, forced.name,
                      got_auto ? automatic.name : "none");
            }
            for (int other = 0; other < GPUCOLL_FORCEABLE_KINDS; other++) {
                if (other == k) continue;
                const gpucoll_coll_args_t b = call((gpucoll_coll_kind_t)other, x.bytes, x.in_place);
                Plan p1{}, p2{};
                const bool g1 = make_plan(b, 0, x.ranks, c, x.direct, &p1, share, x.queued);
                const bool g2 = make_plan(b, 0, x.ranks, base, x.direct, &p2, share, x.queued);
                CHECK(g1 == g2 && (!g1 || (p1.algo == p2.algo && !p1.forced_refused)),
                      "forcing %s moved kind %d", names[i].c_str(), other);
            }
        }
    CHECK(served > 0, "%s: no call it serves when forced", names[i].c_str());
    std::printf("%-24s serves %3d calls forced, leaves %3d to the automatic choice\n", names[i].c_str(), served,
                refused);
}

// Every row can be forced onto some call and then serves it; a forced
// row serves exactly where it does not say why it cannot, and where it
// cannot the call gets precisely the automatic plan. Forcing one kind
// leaves the others' plans alone.
static void check_every_row_forced(const gpucoll_config_t &base)
{
    for (int k = 0; k < GPUCOLL_FORCEABLE_KINDS; k++) {
        const std::vector<std::string> names = names_of((gpucoll_coll_kind_t)k);
        for (size_t i = 0; i < names.size(); i++) check_forced_row(base, k, names, i);
    }
}

// The vector kinds' single rows: the automatic choice of a mapped call.
static void check_vector_rows(const gpucoll_config_t &base)
{
    for (auto kind : {GPUCOLL_COLL_ALLGATHERV, GPUCOLL_COLL_REDUCE_SCATTER, GPUCOLL_COLL_ALLTOALLV}) {
        Plan p{};
        CHECK(make_plan(call(kind, 64, false), 0, 4, base, true, &p) && names_of(kind)[0] == p.name);
    }
}

// The reasons, case by case. The forcings pile up in c: each check runs
// with the row last forced for every kind forced before it.
static void check_refusal_reasons(const gpucoll_config_t &base)
{
    Plan p{};
    gpucoll_config_t c = base;
    force_algorithm(&c, GPUCOLL_COLL_BCAST, "bcast_push"); // zero-copy, buffers not mapped
    CHECK(make_plan(call(GPUCOLL_COLL_BCAST, 8u << 20, false), 0, 4, c, false, &p) &&
          p.algo == PeerAlgo::BcastForward && p.forced_refused && std::strstr(p.forced_refused, "mapped"));
    CHECK(make_plan(call(GPUCOLL_COLL_BCAST, 64, false), 0, 4, c, true, &p) && p.algo == PeerAlgo::BcastPush &&
          !p.forced_refused);
    // One-way LL serves queued calls too (their senders wait for acknowledgements), never above ll_max_bytes.
    force_algorithm(&c, GPUCOLL_COLL_BCAST, "bcast_ll");
    CHECK(make_plan(call(GPUCOLL_COLL_BCAST, 64, false), 0, 4, c, false, &p, GpuShare{}, true) &&
          p.algo == PeerAlgo::BcastLL && !p.forced_refused && p.wait_acks);
    CHECK(make_plan(call(GPUCOLL_COLL_BCAST, (256u << 10) + 1, false), 0, 4, c, false, &p) &&
          p.algo == PeerAlgo::Bcast && p.forced_refused && std::strstr(p.forced_refused, "ll_max_bytes"));
    // Forced: through scratch in every mode and size (queued too: every rank waits for
    // every other); the automatic choice takes it only from 4 MiB (test_algo_select).
    force_algorithm(&c, GPUCOLL_COLL_BCAST, "bcast_forward");
    for (bool queued : {false, true})
        for (size_t bytes : {(size_t)64, (size_t)8 << 20})
            CHECK(make_plan(call(GPUCOLL_COLL_BCAST, bytes, false), 0, 4, c, false, &p, GpuShare{}, queued) &&
                  p.algo == PeerAlgo::BcastForward && !p.forced_refused);
    for (bool queued : {false, true})
        for (size_t bytes : {(size_t)64, (size_t)1 << 20})
            CHECK(make_plan(call(GPUCOLL_COLL_BCAST, bytes, false), 0, 4, base, false, &p, GpuShare{}, queued) &&
                  p.algo != PeerAlgo::BcastForward);
    force_algorithm(&c, GPUCOLL_COLL_ALLTOALL, "alltoall_ll"); // in place it could overwrite a block
    CHECK(make_plan(call(GPUCOLL_COLL_ALLTOALL, 64, true), 0, 4, c, false, &p) && p.algo == PeerAlgo::Alltoall &&
          p.forced_refused);
    force_algorithm(&c, GPUCOLL_COLL_ALLREDUCE, "allreduce_direct"); // former "direct": pulls when mapped
    CHECK(make_plan(call(GPUCOLL_COLL_ALLREDUCE, 64, false), 0, 2, c, true, &p) &&
          p.algo == PeerAlgo::AllreduceDirect && !p.forced_refused);
    CHECK(make_plan(call(GPUCOLL_COLL_ALLREDUCE, 64, false), 0, 2, c, false, &p, GpuShare{}, true) &&
          p.algo == PeerAlgo::AllreduceLL && p.forced_refused);
    // A scratch row serves mapped calls too (zero_copy_candidate keeps them unmapped anyway).
    force_algorithm(&c, GPUCOLL_COLL_ALLGATHER, "allgather");
    CHECK(make_plan(call(GPUCOLL_COLL_ALLGATHER, 64, false), 0, 4, c, true, &p) && p.algo == PeerAlgo::Allgather &&
          !p.forced_refused);
}

// Zero-copy candidates: the automatic sizes, or the forced row's
// protocol at every size; the shape rules (alignment, in place) hold
// either way.
static void check_zero_copy_candidates(const gpucoll_config_t &base)
{
    gpucoll_config_t c = base;
    const size_t small = 64, big = 64u << 20;
    CHECK(!zero_copy_candidate(call(GPUCOLL_COLL_ALLREDUCE, small, false), c, 4));
    CHECK(zero_copy_candidate(call(GPUCOLL_COLL_ALLREDUCE, big, false), c, 4));
    CHECK(!zero_copy_candidate(call(GPUCOLL_COLL_ALLREDUCE, c.oneshot_max_bytes, false), c, 4));
    // Reduce: zero-copy (reduce_push) from 3 ranks and direct_min_bytes, in place at the root too.
    CHECK(zero_copy_candidate(call(GPUCOLL_COLL_REDUCE, big, false), c, 4));
    CHECK(zero_copy_candidate(call(GPUCOLL_COLL_REDUCE, big, true), c, 3));
    CHECK(!zero_copy_candidate(call(GPUCOLL_COLL_REDUCE, big, false), c, 2));
    CHECK(zero_copy_candidate(call(GPUCOLL_COLL_REDUCE, c.direct_min_bytes, false), c, 3));
    CHECK(!zero_copy_candidate(call(GPUCOLL_COLL_REDUCE, c.direct_min_bytes - 16, false), c, 4));
    gpucoll_config_t high = c;
    high.direct_min_bytes = 2 * big;
    CHECK(!zero_copy_candidate(call(GPUCOLL_COLL_REDUCE, big, false), high, 4));
    CHECK(!zero_copy_candidate(call(GPUCOLL_COLL_ALLTOALL, big, true), c, 4));
    CHECK(!zero_copy_candidate(call(GPUCOLL_COLL_ALLGATHER, big + 1, false), c, 4));
    CHECK(zero_copy_candidate(call(GPUCOLL_COLL_ALLGATHER, c.direct_min_bytes / 4, false), c, 4));
    CHECK(!zero_copy_candidate(call(GPUCOLL_COLL_ALLGATHER, c.direct_min_bytes / 4 - 16, false), c, 4));
    for (int k = 0; k < GPUCOLL_FORCEABLE_KINDS; k++) {
        const auto kind = (gpucoll_coll_kind_t)k;
        PeerAlgo rows[16];
        const int n = algo_rows(kind, rows, 16);
        for (int i = 0; i < n; i++) {
            gpucoll_config_t f = base;
            f.algorithm[k] = i + 1;
            const bool zc = is_direct(rows[i]);
            for (size_t bytes : {small, big})
                CHECK(zero_copy_candidate(call(kind, bytes, false), f, 4) == zc, "%s at %zu bytes",
                      algo_name(rows[i]), bytes);
            if (kind == GPUCOLL_COLL_ALLTOALL || kind == GPUCOLL_COLL_REDUCE_SCATTER_BLOCK)
                CHECK(!zero_copy_candidate(call(kind, big, true), f, 4), "%s in place", algo_name(rows[i]));
        }
    }
}

int main()
{
    // Every check copies base before it changes anything, so each starts from these values.
    gpucoll_config_t base{};
    gpucoll_config_fill_defaults(&base);
    base.ll_max_bytes = GPUCOLL_DEFAULT_LL_MAX_BYTES; // the MCA default (fill_defaults leaves it off)

    check_forcing_slots();
    check_forcing_values(base);
    check_every_row_forced(base);
    check_vector_rows(base);
    check_refusal_reasons(base);
    check_zero_copy_candidates(base);

    std::printf("algo_forcing: %d failed\n", failures);
    return failures ? 1 : 0;
}
