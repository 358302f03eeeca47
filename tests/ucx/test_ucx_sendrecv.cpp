/* Tagged point-to-point over the transport: sizes from 0 to several MB
 * (crossing chunk boundaries), nonblocking all-pairs traffic, in-order
 * matching of equal tags, blocking helpers, polling with test(), two groups
 * side by side, and the errors of mismatched sizes and configurations. */
#include <cstdio>
#include <cstring>
#include <vector>

#include "ucx_test_util.h"

using namespace ucx_test;

namespace {

uint8_t pattern(int src, size_t i, uint32_t salt)
{
    return uint8_t((i * 131 + size_t(src) * 17 + salt * 7) ^ (i >> 9));
}

std::vector<uint8_t> make_pattern(int src, size_t bytes, uint32_t salt)
{
    std::vector<uint8_t> v(bytes);
    for (size_t i = 0; i < bytes; ++i) v[i] = pattern(src, i, salt);
    return v;
}

bool verify(const Buffer &b, int src, size_t bytes, uint32_t salt, const char *what)
{
    std::vector<uint8_t> got = b.to_host();
    got.resize(bytes);
    std::vector<uint8_t> want = make_pattern(src, bytes, salt);
    for (size_t i = 0; i < bytes; ++i)
        if (got[i] != want[i])
            return check(false, "%s: %zu bytes from rank %d: byte %zu is %u, expected %u", what, bytes, src, i, got[i],
                         want[i]);
    return true;
}

void test_ring(gpucoll_ucx_group_t *g, const Options &opt, const std::vector<size_t> &sizes)
{
    const int n = size(), r = rank(), left = (r + n - 1) % n, right = (r + 1) % n;
    for (size_t k = 0; k < sizes.size(); ++k) {
        const size_t bytes = sizes[k];
        Buffer out(bytes, opt.device), in(bytes, opt.device);
        out.upload(make_pattern(r, bytes, uint32_t(k)).data(), bytes);
        in.fill_byte(0);
        gpucoll_ucx_request_t *reqs[2] = {nullptr, nullptr};
        check_status(gpucoll_ucx_irecv(g, left, in.data(), bytes, 1, uint32_t(k), &reqs[0]), "ring irecv");
        check_status(gpucoll_ucx_isend(g, right, out.data(), bytes, 1, uint32_t(k), &reqs[1]), "ring isend");
        if (check_status(gpucoll_ucx_waitall(g, reqs, 2), "ring waitall")) verify(in, left, bytes, uint32_t(k), "ring");
        check(reqs[0] == nullptr && reqs[1] == nullptr, "waitall must clear the handles");
    }
}

void test_all_pairs(gpucoll_ucx_group_t *g, const Options &opt, size_t chunk)
{
    const int n = size(), r = rank();
    const size_t sizes[] = {0, 5, chunk + 3, 300000};
    for (size_t k = 0; k < 4; ++k) {
        const size_t bytes = sizes[k];
        Buffer out(bytes, opt.device);
        out.upload(make_pattern(r, bytes, 100 + uint32_t(k)).data(), bytes);
        std::vector<Buffer *> ins;
        std::vector<gpucoll_ucx_request_t *> reqs;
        for (int p = 0; p < n; ++p) {
            if (p == r) continue;
            ins.push_back(new Buffer(bytes, opt.device));
            reqs.push_back(nullptr);
            check_status(gpucoll_ucx_irecv(g, p, ins.back()->data(), bytes, 2, uint32_t(k), &reqs.back()),
                         "pairs irecv");
        }
        for (int p = 0; p < n; ++p) {
            if (p == r) continue;
            reqs.push_back(nullptr);
            check_status(gpucoll_ucx_isend(g, p, out.data(), bytes, 2, uint32_t(k), &reqs.back()), "pairs isend");
        }
        if (check_status(gpucoll_ucx_waitall(g, reqs.data(), reqs.size()), "pairs waitall")) {
            size_t i = 0;
            for (int p = 0; p < n; ++p)
                if (p != r) verify(*ins[i++], p, bytes, 100 + uint32_t(k), "all pairs");
        }
        for (Buffer *b : ins) delete b;
    }
}

/* Equal tags from one sender match in send order, whatever the sizes. */
void test_same_tag_order(gpucoll_ucx_group_t *g, const Options &opt, size_t chunk)
{
    const int n = size(), r = rank();
    const std::vector<size_t> sizes = {1, 4096, 10, 70000, 0, 3, 2 * chunk + 1, 5};
    const int to = (r + 1) % n, from = (r + n - 1) % n;
    std::vector<Buffer *> outs, ins;
    std::vector<gpucoll_ucx_request_t *> reqs;
    for (size_t k = 0; k < sizes.size(); ++k) {
        ins.push_back(new Buffer(sizes[k], opt.device));
        reqs.push_back(nullptr);
        check_status(gpucoll_ucx_irecv(g, from, ins.back()->data(), sizes[k], 7, 7, &reqs.back()), "order irecv");
    }
    for (size_t k = 0; k < sizes.size(); ++k) {
        outs.push_back(new Buffer(sizes[k], opt.device));
        outs.back()->upload(make_pattern(r, sizes[k], 200 + uint32_t(k)).data(), sizes[k]);
        reqs.push_back(nullptr);
        check_status(gpucoll_ucx_isend(g, to, outs.back()->data(), sizes[k], 7, 7, &reqs.back()), "order isend");
    }
    if (check_status(gpucoll_ucx_waitall(g, reqs.data(), reqs.size()), "order waitall"))
        for (size_t k = 0; k < sizes.size(); ++k) verify(*ins[k], from, sizes[k], 200 + uint32_t(k), "same-tag order");
    for (Buffer *b : outs) delete b;
    for (Buffer *b : ins) delete b;
}

void test_blocking_and_test(gpucoll_ucx_group_t *g, const Options &opt)
{
    const int n = size(), r = rank();
    const size_t bytes = 123457;
    Buffer out(bytes, opt.device), in(bytes, opt.device);
    out.upload(make_pattern(r, bytes, 300).data(), bytes);
    /* Pairs (0,1), (2,3), ...; an odd last rank talks to itself. */
    const int partner = (r ^ 1) < n ? (r ^ 1) : r;
    if (partner == r) {
        gpucoll_ucx_request_t *req = nullptr;
        check_status(gpucoll_ucx_irecv(g, r, in.data(), bytes, 3, 0, &req), "self irecv");
        check_status(gpucoll_ucx_send(g, r, out.data(), bytes, 3, 0), "self send");
        check_status(gpucoll_ucx_wait(g, &req), "self wait");
    } else if (r % 2 == 0) {
        check_status(gpucoll_ucx_send(g, partner, out.data(), bytes, 3, 0), "blocking send");
        check_status(gpucoll_ucx_recv(g, partner, in.data(), bytes, 3, 1), "blocking recv");
    } else {
        check_status(gpucoll_ucx_recv(g, partner, in.data(), bytes, 3, 0), "blocking recv");
        check_status(gpucoll_ucx_send(g, partner, out.data(), bytes, 3, 1), "blocking send");
    }
    verify(in, partner, bytes, 300, "blocking");

    /* test(): poll to completion, bounded by wall time. */
    const int to = (r + 1) % n, from = (r + n - 1) % n;
    gpucoll_ucx_request_t *reqs[2] = {nullptr, nullptr};
    check_status(gpucoll_ucx_irecv(g, from, in.data(), bytes, 4, 0, &reqs[0]), "test irecv");
    check_status(gpucoll_ucx_isend(g, to, out.data(), bytes, 4, 0, &reqs[1]), "test isend");
    const double deadline = now_seconds() + 20;
    int done[2] = {0, 0};
    while ((!done[0] || !done[1]) && now_seconds() < deadline)
        for (int i = 0; i < 2; ++i)
            if (!done[i]) check_status(gpucoll_ucx_test(g, &reqs[i], &done[i]), "test");
    if (check(done[0] && done[1], "test() did not complete within 20 s")) verify(in, from, bytes, 300, "test()");
    else gpucoll_ucx_waitall(g, reqs, 2);
}

/* Same seq/step in two groups: each message lands in its own group. */
void test_two_groups(gpucoll_ucx_group_t *a, const Options &opt)
{
    gpucoll_ucx_group_t *b = make_group(make_config(opt));
    const int n = size(), r = rank(), to = (r + 1) % n, from = (r + n - 1) % n;
    const size_t bytes = 1000;
    Buffer out_a(bytes, opt.device), out_b(bytes, opt.device), in_a(bytes, opt.device), in_b(bytes, opt.device);
    out_a.upload(make_pattern(r, bytes, 401).data(), bytes);
    out_b.upload(make_pattern(r, bytes, 402).data(), bytes);
    gpucoll_ucx_request_t *ra[2] = {nullptr, nullptr}, *rb[2] = {nullptr, nullptr};
    check_status(gpucoll_ucx_irecv(a, from, in_a.data(), bytes, 5, 5, &ra[0]), "group a irecv");
    check_status(gpucoll_ucx_irecv(b, from, in_b.data(), bytes, 5, 5, &rb[0]), "group b irecv");
    check_status(gpucoll_ucx_isend(b, to, out_b.data(), bytes, 5, 5, &rb[1]), "group b isend");
    check_status(gpucoll_ucx_isend(a, to, out_a.data(), bytes, 5, 5, &ra[1]), "group a isend");
    check_status(gpucoll_ucx_waitall(b, rb, 2), "group b waitall");
    check_status(gpucoll_ucx_waitall(a, ra, 2), "group a waitall");
    verify(in_a, from, bytes, 401, "group a");
    verify(in_b, from, bytes, 402, "group b");
    MPI_Barrier(MPI_COMM_WORLD);
    check_status(gpucoll_ucx_group_destroy(b), "destroy group b");
}

void test_errors(gpucoll_ucx_group_t *g, const Options &opt)
{
    const int n = size(), r = rank();
    gpucoll_ucx_request_t *req = nullptr;
    uint8_t byte = 0;
    check(gpucoll_ucx_isend(g, n, &byte, 1, 0, 0, &req) == GPUCOLL_ERR_INVALID && req == nullptr,
          "send to rank %d (out of range) must be GPUCOLL_ERR_INVALID", n);
    if (n < 2) return;

    /* Sizes must match: longer than expected, then shorter. */
    Buffer out(100, opt.device), in(100, opt.device);
    out.upload(make_pattern(r, 100, 500).data(), 100);
    if (r == 1) {
        check_status(gpucoll_ucx_send(g, 0, out.data(), 100, 6, 0), "oversized send");
        check_status(gpucoll_ucx_send(g, 0, out.data(), 50, 6, 1), "undersized send");
    } else if (r == 0) {
        gpucoll_status_t st = gpucoll_ucx_recv(g, 1, in.data(), 50, 6, 0);
        check(st == GPUCOLL_ERR_INVALID, "receiving 100 bytes into 50: got %s (%s), expected invalid argument",
              gpucoll_status_name(st), gpucoll_last_error());
        printf("[rank 0] oversized message: %s\n", gpucoll_last_error());
        st = gpucoll_ucx_recv(g, 1, in.data(), 100, 6, 1);
        check(st == GPUCOLL_ERR_INVALID, "receiving 50 bytes into 100: got %s (%s), expected invalid argument",
              gpucoll_status_name(st), gpucoll_last_error());
        printf("[rank 0] undersized message: %s\n", gpucoll_last_error());
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* Groups need one chunk size everywhere: every rank learns it. */
    gpucoll_ucx_config_t cfg = make_config(opt);
    cfg.chunk_bytes = r == 0 ? 8192 : 4096;
    gpucoll_oob_t oob = world_oob();
    gpucoll_ucx_group_t *bad = nullptr;
    gpucoll_status_t st = gpucoll_ucx_group_create(&cfg, &oob, &bad);
    check(st == GPUCOLL_ERR_INVALID && bad == nullptr, "mismatched chunk_bytes: got %s, expected invalid argument",
          gpucoll_status_name(st));
    if (r == 0) printf("[rank 0] mismatched config: %s\n", gpucoll_last_error());

    /* A rank that cannot set up fails creation everywhere, nobody blocks:
     * rank 0 demands GPUDirect, which a UCX without GPU support lacks. */
    cfg = make_config(opt);
    if (r == 0) cfg.device_path = GPUCOLL_UCX_DEVICE_PATH_DIRECT;
    st = gpucoll_ucx_group_create(&cfg, &oob, &bad);
    int ok = st == GPUCOLL_SUCCESS, all_ok = 0, any_ok = 0;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&ok, &any_ok, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    check(all_ok == any_ok, "group creation succeeded on some ranks only (%s here: %s)", gpucoll_status_name(st),
          gpucoll_last_error());
    if (r <= 1)
        printf("[rank %d] one rank unable: %s %s\n", r, gpucoll_status_name(st), ok ? "" : gpucoll_last_error());
    MPI_Barrier(MPI_COMM_WORLD);
    if (bad) gpucoll_ucx_group_destroy(bad);
}

} // namespace

int main(int argc, char **argv)
{
    Options opt = parse_options(argc, argv);
    if (!init(&argc, &argv, opt)) return finish_skip();
    gpucoll_ucx_config_t cfg = make_config(opt);
    gpucoll_ucx_group_t *g = make_group(cfg);
    if (rank() == 0) {
        char line[512];
        gpucoll_ucx_describe(g, line, sizeof line);
        printf("transport: %s\n", line);
    }
    const size_t chunk = gpucoll_ucx_chunk_bytes(g);
    if (!opt.chunk) // the default follows the device path
        check(chunk == (gpucoll_ucx_device_path(g) == GPUCOLL_UCX_DEVICE_PATH_DIRECT ? GPUCOLL_UCX_DEFAULT_DIRECT_CHUNK_BYTES
                                                                                : GPUCOLL_UCX_DEFAULT_CHUNK_BYTES),
              "default chunk %zu B with device path %s", chunk,
              gpucoll_ucx_device_path_name(gpucoll_ucx_device_path(g)));
    std::vector<size_t> sizes = {0, 1, 7, 64, 4095, 4096, 4097, chunk - 1, chunk, chunk + 1, 3 * chunk + 5, 1000003};
    if (!opt.quick) sizes.push_back(8 * 1024 * 1024 + 3);

    test_ring(g, opt, sizes);
    test_all_pairs(g, opt, chunk);
    test_same_tag_order(g, opt, chunk);
    test_blocking_and_test(g, opt);
    test_two_groups(g, opt);
    test_errors(g, opt);
    if (size() > 1) { // endpoints to every peer are open by now
        char tls[256];
        gpucoll_ucx_transports(g, tls, sizeof tls);
        check(strchr(tls, '/') != nullptr, "transports of the open endpoints: \"%s\"", tls);
        if (rank() == 0) printf("transports in use: %s\n", tls);
    }

    gpucoll_ucx_stats_t stats;
    gpucoll_ucx_get_stats(g, &stats);
    if (opt.stage_host) check(stats.staged_chunks_sent > 0, "stage_host_buffers set but nothing was staged");
    else if (!opt.device) check(stats.staged_chunks_sent == 0, "host buffers were staged");
    MPI_Barrier(MPI_COMM_WORLD);
    check_status(gpucoll_ucx_group_destroy(g), "group_destroy");
    return finish("ucx sendrecv");
}
