/* Bcast: a binomial tree for messages up to one chunk (log2(n) latency
 * steps), a pipelined chain beyond (each rank forwards segment j to the
 * next while segment j+1 arrives: time ~ (n - 1 + segments) chunks, with
 * every link busy). Ranks are numbered relative to the root. */
#include "schedule_util.h"

namespace gpucoll_ucx {

namespace {

gpucoll_status_t bcast_binomial(Collective &c, char *buf, size_t count, int root)
{
    const int n = c.size(), v = mod(c.rank() - root, n);
    auto real = [&](int vr) { return mod(vr + root, n); };
    TransferScope scope(c.g);
    int mask = 1;
    for (; mask < n; mask <<= 1) {
        if (!(v & mask)) continue;
        Transfer *t = nullptr;
        gpucoll_status_t st = scope.hold(c.recv(real(v - mask), buf, count, 0, &t), &t);
        if (st == GPUCOLL_SUCCESS) st = scope.wait(t);
        if (st != GPUCOLL_SUCCESS) return st;
        break;
    }
    for (mask >>= 1; mask > 0; mask >>= 1) {
        if (v + mask >= n) continue;
        Transfer *t = nullptr;
        gpucoll_status_t st = scope.hold(c.send(real(v + mask), buf, count, 0, &t), &t);
        if (st != GPUCOLL_SUCCESS) return st;
    }
    return scope.wait_all();
}

gpucoll_status_t bcast_chain(Collective &c, char *buf, size_t count, int root)
{
    const int n = c.size(), v = mod(c.rank() - root, n);
    const int parent = mod(c.rank() - 1, n), child = mod(c.rank() + 1, n);
    const bool has_child = v + 1 < n;
    TransferScope scope(c.g);
    if (v == 0) { /* one message: the transport pipelines its chunks */
        Transfer *t = nullptr;
        gpucoll_status_t st = scope.hold(c.send(child, buf, count, 0, &t), &t);
        return st == GPUCOLL_SUCCESS ? scope.wait_all() : st;
    }
    const int depth = c.g.depth();
    gpucoll_status_t st = receive_segments(
        c, scope, parent, 0, count, depth, depth, [&](size_t j) { return buf + j * c.seg_elems() * c.esize; },
        [&](size_t, size_t, size_t len, char *data, Transfer **hold) {
            return has_child ? c.send(child, data, len, 0, hold) : GPUCOLL_SUCCESS;
        });
    return st == GPUCOLL_SUCCESS ? scope.wait_all() : st;
}

} // namespace

gpucoll_status_t schedule_bcast(Group &g, void *buf, size_t count, gpucoll_dtype_t dtype, int root)
{
    const uint32_t seq = g.next_collective_seq();
    gpucoll_status_t st = check_dtype(dtype, "bcast");
    if (st == GPUCOLL_SUCCESS) st = check_root(g, root, "bcast");
    if (st != GPUCOLL_SUCCESS || count == 0 || g.size() == 1) return st;
    if (!buf) return gpucoll_fail(GPUCOLL_ERR_INVALID, "ucx bcast: NULL buffer");
    Collective c{g, seq, dtype, gpucoll_dtype_size(dtype), GPUCOLL_OP_NONE, nullptr};
    char *p = static_cast<char *>(buf);
    /* Same decision on every rank: count, dtype and chunk size agree. */
    return count * c.esize <= g.chunk_bytes() ? bcast_binomial(c, p, count, root) : bcast_chain(c, p, count, root);
}

} // namespace gpucoll_ucx
