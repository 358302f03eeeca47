/* Every inter-node schedule against a host reference: many dtype/op pairs,
 * counts 0, 1, 7, 13 (and 1000003 for a selection), in place and not, all
 * roots that matter. Options: see ucx_test_util.h. */
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "ucx_test_util.h"

using namespace ucx_test;

namespace {

struct Ctx {
    gpucoll_ucx_group_t *g;
    Options opt;
    gpucoll_ucx_reducer_t reducer;
    uint64_t reducer_calls = 0;
    uint32_t salt = 1;
    int n, r;
};

const char *name(gpucoll_dtype_t d) { return gpucoll_dtype_name(d); }
const char *name(gpucoll_op_t o) { return gpucoll_op_name(o); }

/* The reducer the core would pass: only device(-like) memory uses it. */
const gpucoll_ucx_reducer_t *reducer_for(Ctx &c) { return c.opt.device || c.opt.stage_host ? &c.reducer : nullptr; }

void test_allreduce(Ctx &c, gpucoll_dtype_t dt, gpucoll_op_t op, size_t count, bool in_place)
{
    const size_t es = gpucoll_dtype_size(dt), bytes = count * es;
    const uint32_t salt = c.salt++;
    std::vector<uint8_t> in;
    fill_input(in, dt, op, c.r, count, salt);
    Buffer send(bytes, c.opt.device), recv(bytes, c.opt.device);
    (in_place ? recv : send).upload(in.data(), bytes);
    if (!in_place) recv.fill_byte(0xa5);
    gpucoll_status_t st = gpucoll_ucx_allreduce(c.g, in_place ? GPUCOLL_UCX_IN_PLACE : send.data(), recv.data(), count,
                                                dt, op, reducer_for(c));
    if (!check_status(st, "allreduce")) return;
    long bad = first_difference(recv.to_host(), reference_reduction(dt, op, c.n, count, salt), es);
    check(bad < 0, "allreduce %s %s count %zu%s: element %ld differs", name(dt), name(op), count,
          in_place ? " in place" : "", bad);
}

void test_reduce_scatter(Ctx &c, gpucoll_dtype_t dt, gpucoll_op_t op, size_t recvcount, bool in_place)
{
    const size_t es = gpucoll_dtype_size(dt), total = recvcount * size_t(c.n);
    const uint32_t salt = c.salt++;
    std::vector<uint8_t> in;
    fill_input(in, dt, op, c.r, total, salt);
    Buffer send(total * es, c.opt.device), recv((in_place ? total : recvcount) * es, c.opt.device);
    (in_place ? recv : send).upload(in.data(), total * es);
    if (!in_place) recv.fill_byte(0xa5);
    gpucoll_status_t st = gpucoll_ucx_reduce_scatter(c.g, in_place ? GPUCOLL_UCX_IN_PLACE : send.data(), recv.data(),
                                                     recvcount, dt, op, reducer_for(c));
    if (!check_status(st, "reduce_scatter")) return;
    std::vector<uint8_t> ref = reference_reduction(dt, op, c.n, total, salt);
    std::vector<uint8_t> mine(ref.begin() + long(size_t(c.r) * recvcount * es),
                              ref.begin() + long(size_t(c.r + 1) * recvcount * es));
    std::vector<uint8_t> got = recv.to_host();
    got.resize(recvcount * es);
    long bad = first_difference(got, mine, es);
    check(bad < 0, "reduce_scatter %s %s recvcount %zu%s: element %ld differs", name(dt), name(op), recvcount,
          in_place ? " in place" : "", bad);
}

void test_reduce(Ctx &c, gpucoll_dtype_t dt, gpucoll_op_t op, size_t count, int root, bool in_place)
{
    const size_t es = gpucoll_dtype_size(dt), bytes = count * es;
    const uint32_t salt = c.salt++;
    const bool is_root = c.r == root;
    in_place = in_place && is_root;
    std::vector<uint8_t> in;
    fill_input(in, dt, op, c.r, count, salt);
    Buffer send(bytes, c.opt.device), recv(bytes, c.opt.device);
    (in_place ? recv : send).upload(in.data(), bytes);
    if (!in_place) recv.fill_byte(0xa5);
    gpucoll_status_t st = gpucoll_ucx_reduce(c.g, in_place ? GPUCOLL_UCX_IN_PLACE : send.data(),
                                             is_root ? recv.data() : nullptr, count, dt, op, root, reducer_for(c));
    if (!check_status(st, "reduce") || !is_root) return;
    long bad = first_difference(recv.to_host(), reference_reduction(dt, op, c.n, count, salt), es);
    check(bad < 0, "reduce %s %s count %zu root %d%s: element %ld differs", name(dt), name(op), count, root,
          in_place ? " in place" : "", bad);
}

void test_allgather(Ctx &c, gpucoll_dtype_t dt, size_t count, bool in_place)
{
    const size_t es = gpucoll_dtype_size(dt), bytes = count * es;
    const uint32_t salt = c.salt++;
    std::vector<uint8_t> in, expect;
    for (int r = 0; r < c.n; ++r) {
        fill_input(in, dt, GPUCOLL_OP_BXOR, r, count, salt);
        expect.insert(expect.end(), in.begin(), in.end());
    }
    fill_input(in, dt, GPUCOLL_OP_BXOR, c.r, count, salt);
    Buffer send(bytes, c.opt.device), recv(bytes * size_t(c.n), c.opt.device);
    recv.fill_byte(0xa5);
    if (in_place) recv.upload(in.data(), bytes, size_t(c.r) * bytes);
    else send.upload(in.data(), bytes);
    const void *src = in_place ? GPUCOLL_UCX_IN_PLACE : send.data();
    gpucoll_status_t st = gpucoll_ucx_allgather(c.g, src, recv.data(), count, dt);
    if (!check_status(st, "allgather")) return;
    long bad = first_difference(recv.to_host(), expect, es);
    check(bad < 0, "allgather %s count %zu%s: element %ld differs", name(dt), count, in_place ? " in place" : "", bad);
}

void test_bcast(Ctx &c, gpucoll_dtype_t dt, size_t count, int root)
{
    const size_t es = gpucoll_dtype_size(dt), bytes = count * es;
    const uint32_t salt = c.salt++;
    std::vector<uint8_t> in;
    fill_input(in, dt, GPUCOLL_OP_BXOR, root, count, salt);
    Buffer buf(bytes, c.opt.device);
    if (c.r == root) buf.upload(in.data(), bytes);
    else buf.fill_byte(0xa5);
    gpucoll_status_t st = gpucoll_ucx_bcast(c.g, buf.data(), count, dt, root);
    if (!check_status(st, "bcast")) return;
    long bad = first_difference(buf.to_host(), in, es);
    check(bad < 0, "bcast %s count %zu root %d: element %ld differs", name(dt), count, root, bad);
}

std::vector<std::pair<gpucoll_dtype_t, gpucoll_op_t>> all_pairs()
{
    std::vector<std::pair<gpucoll_dtype_t, gpucoll_op_t>> pairs;
    for (int d = 0; d < GPUCOLL_DTYPE_COUNT; ++d)
        for (int o = 0; o < GPUCOLL_OP_COUNT; ++o)
            if (gpucoll_op_valid(gpucoll_op_t(o), gpucoll_dtype_t(d)))
                pairs.emplace_back(gpucoll_dtype_t(d), gpucoll_op_t(o));
    return pairs;
}

} // namespace

int main(int argc, char **argv)
{
    Options opt = parse_options(argc, argv);
    if (!init(&argc, &argv, opt)) return finish_skip();
    Ctx c;
    c.opt = opt;
    c.n = size();
    c.r = rank();
    c.g = make_group(make_config(opt));
    c.reducer = copying_reducer(opt.device, &c.reducer_calls);
    if (c.r == 0) {
        char line[512];
        gpucoll_ucx_describe(c.g, line, sizeof line);
        printf("transport: %s\n", line);
        fflush(stdout);
    }

    const int n = c.n;
    const std::vector<size_t> small_counts = {0, 1, 7, 13};
    const size_t big = opt.quick ? 100003 : 1000003;
    const std::vector<int> roots = n > 2 ? std::vector<int>{0, n - 1, n / 2} : std::vector<int>{0, n - 1};

    /* Every valid dtype x op, small counts (count < n included). */
    for (auto [dt, op] : all_pairs()) {
        for (size_t count : small_counts) {
            test_allreduce(c, dt, op, count, false);
            test_reduce_scatter(c, dt, op, count, false);
            test_reduce(c, dt, op, count, roots[(count + size_t(op)) % roots.size()], false);
        }
    }
    /* In place, and a few mid sizes that cross chunk boundaries. */
    for (size_t count : {size_t(7), size_t(4099), size_t(70001)}) {
        test_allreduce(c, GPUCOLL_FLOAT32, GPUCOLL_OP_SUM, count, true);
        test_allreduce(c, GPUCOLL_INT64, GPUCOLL_OP_MAX, count, false);
        test_reduce_scatter(c, GPUCOLL_INT32, GPUCOLL_OP_BXOR, count, true);
        for (int root : roots) {
            test_reduce(c, GPUCOLL_FLOAT64, GPUCOLL_OP_MIN, count, root, true);
            test_reduce(c, GPUCOLL_UINT16, GPUCOLL_OP_PROD, count, root, false);
        }
    }
    /* Large. */
    test_allreduce(c, GPUCOLL_FLOAT32, GPUCOLL_OP_SUM, big, false);
    test_allreduce(c, GPUCOLL_FLOAT16, GPUCOLL_OP_SUM, big, true);
    test_allreduce(c, GPUCOLL_BFLOAT16, GPUCOLL_OP_MAX, big, false);
    test_allreduce(c, GPUCOLL_UINT8, GPUCOLL_OP_PROD, big, false);
    test_allreduce(c, GPUCOLL_INT64, GPUCOLL_OP_BXOR, big, false);
    test_reduce_scatter(c, GPUCOLL_FLOAT32, GPUCOLL_OP_SUM, big, false);
    test_reduce_scatter(c, GPUCOLL_INT16, GPUCOLL_OP_MIN, big, true);
    test_reduce(c, GPUCOLL_FLOAT64, GPUCOLL_OP_SUM, big, n - 1, false);
    test_reduce(c, GPUCOLL_INT32, GPUCOLL_OP_MAX, big, 0, true);

    /* Allgather and bcast carry bytes: every dtype size, every count. */
    for (gpucoll_dtype_t dt : {GPUCOLL_INT8, GPUCOLL_FLOAT16, GPUCOLL_FLOAT32, GPUCOLL_FLOAT64}) {
        for (size_t count : {size_t(0), size_t(1), size_t(7), size_t(13), size_t(4099), big}) {
            test_allgather(c, dt, count, false);
            test_allgather(c, dt, count, count == 7 || count == big);
            for (int root : roots) test_bcast(c, dt, count, root);
        }
    }

    gpucoll_ucx_stats_t stats;
    gpucoll_ucx_get_stats(c.g, &stats);
    if (n > 1 && opt.stage_host) {
        check(stats.staged_chunks_sent > 0 && stats.staged_chunks_received > 0,
              "stage_host_buffers set but no chunk took the staged path");
        check(c.reducer_calls > 0, "stage_host_buffers set but the reducer callback was never called");
        if (opt.rcache && opt.rcache < 4)
            check(stats.rcache_evictions > 0, "rcache bound %zu but no eviction happened", opt.rcache);
    }
    if (n > 1 && !opt.stage_host && !opt.device)
        check(stats.staged_chunks_sent == 0, "host buffers took the staged path");
    printf("[rank %d] sent %llu B (direct %llu, staged %llu chunks), received %llu B; rcache %llu hits %llu misses "
           "%llu evictions; reducer calls %llu\n",
           c.r, (unsigned long long)stats.bytes_sent, (unsigned long long)stats.direct_chunks_sent,
           (unsigned long long)stats.staged_chunks_sent, (unsigned long long)stats.bytes_received,
           (unsigned long long)stats.rcache_hits, (unsigned long long)stats.rcache_misses,
           (unsigned long long)stats.rcache_evictions, (unsigned long long)c.reducer_calls);
    fflush(stdout);

    MPI_Barrier(MPI_COMM_WORLD); /* peers are done with the group before it goes */
    check_status(gpucoll_ucx_group_destroy(c.g), "group_destroy");
    return finish("ucx schedules");
}
