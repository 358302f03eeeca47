/* Reduce to a root: a binomial tree for messages up to one chunk, a
 * pipelined chain beyond. In the chain, rank v (numbered from the root)
 * receives the partial result of v+1..n-1 segment by segment, reduces its
 * own contribution into it and forwards it towards the root, so scratch is
 * a few chunks however large the vector. All ops of the table are
 * commutative, so partial results may combine in any order. */
#include "schedule_util.h"

namespace gpucoll_ucx {

namespace {

gpucoll_status_t reduce_binomial(Collective &c, const char *input, char *acc, const BufferKind &acc_kind, char *tmp,
                                 size_t count, int root)
{
    const int n = c.size(), v = mod(c.rank() - root, n);
    auto real = [&](int vr) { return mod(vr + root, n); };
    gpucoll_status_t st = c.g.local_copy(acc, input, count * c.esize);
    uint32_t level = 0;
    for (int mask = 1; mask < n && st == GPUCOLL_SUCCESS; mask <<= 1, ++level) {
        TransferScope scope(c.g);
        Transfer *t = nullptr;
        if (v & mask) { /* hand the partial result up and leave */
            st = scope.hold(c.send(real(v - mask), acc, count, level, &t), &t);
            return st == GPUCOLL_SUCCESS ? scope.wait(t) : st;
        }
        if (v + mask >= n) continue;
        st = scope.hold(c.recv(real(v + mask), tmp, count, level, &t), &t);
        if (st == GPUCOLL_SUCCESS) st = scope.wait(t);
        if (st == GPUCOLL_SUCCESS) st = c.reduce(acc_kind, acc, tmp, count);
    }
    return st;
}

gpucoll_status_t reduce_chain(Collective &c, const char *input, char *recvbuf, size_t count, int root)
{
    const int n = c.size(), v = mod(c.rank() - root, n);
    const int parent = mod(c.rank() - 1, n), child = mod(c.rank() + 1, n);
    const int depth = c.g.depth();
    const size_t chunk = c.g.chunk_bytes();
    TransferScope scope(c.g);
    if (v == n - 1) { /* the far end: its input is the first partial result */
        Transfer *t = nullptr;
        gpucoll_status_t st = scope.hold(c.send(parent, input, count, 0, &t), &t);
        return st == GPUCOLL_SUCCESS ? scope.wait_all() : st;
    }
    if (v == 0) { /* the root reduces into recvbuf */
        gpucoll_status_t st = c.g.local_copy(recvbuf, input, count * c.esize);
        const BufferKind kind = c.g.classify(recvbuf);
        char *slots = nullptr;
        if (st == GPUCOLL_SUCCESS) st = c.g.scratch(kind, size_t(depth) * chunk, &slots);
        if (st != GPUCOLL_SUCCESS) return st;
        st = receive_segments(
            c, scope, child, 0, count, depth, depth, [&](size_t j) { return slots + (j % size_t(depth)) * chunk; },
            [&](size_t, size_t offset, size_t len, char *data, Transfer **) {
                return c.reduce(kind, recvbuf + offset * c.esize, data, len);
            });
        return st == GPUCOLL_SUCCESS ? scope.wait_all() : st;
    }
    /* In between: twice the window of slots, so that forwarding segment j
     * rarely delays posting the receive of segment j + depth. */
    const BufferKind kind = c.g.classify(input);
    const int nslots = 2 * depth;
    char *slots = nullptr;
    gpucoll_status_t st = c.g.scratch(kind, size_t(nslots) * chunk, &slots);
    if (st != GPUCOLL_SUCCESS) return st;
    st = receive_segments(
        c, scope, child, 0, count, depth, nslots, [&](size_t j) { return slots + (j % size_t(nslots)) * chunk; },
        [&](size_t, size_t offset, size_t len, char *data, Transfer **hold) {
            gpucoll_status_t rst = c.reduce(kind, data, input + offset * c.esize, len);
            return rst == GPUCOLL_SUCCESS ? c.send(parent, data, len, 0, hold) : rst;
        });
    return st == GPUCOLL_SUCCESS ? scope.wait_all() : st;
}

} // namespace

gpucoll_status_t schedule_reduce(Group &g, const void *sendbuf, void *recvbuf, size_t count, gpucoll_dtype_t dtype,
                                 gpucoll_op_t op, int root, const gpucoll_ucx_reducer_t *reducer)
{
    const uint32_t seq = g.next_collective_seq();
    gpucoll_status_t st = check_reduction(dtype, op, "reduce");
    if (st == GPUCOLL_SUCCESS) st = check_root(g, root, "reduce");
    if (st != GPUCOLL_SUCCESS || count == 0) return st;
    const bool is_root = g.rank() == root;
    if (is_root && !recvbuf) return gpucoll_fail(GPUCOLL_ERR_INVALID, "ucx reduce: NULL recvbuf at the root");
    if (!is_root && (sendbuf == GPUCOLL_UCX_IN_PLACE || !sendbuf))
        return gpucoll_fail(GPUCOLL_ERR_INVALID, "ucx reduce: in place is only allowed at the root");
    Collective c{g, seq, dtype, gpucoll_dtype_size(dtype), op, reducer};
    const size_t bytes = count * c.esize;
    /* At the root in place, the input is recvbuf itself (local_copy skips it). */
    const char *input = static_cast<const char *>(is_root && is_in_place(sendbuf, recvbuf) ? recvbuf : sendbuf);
    char *out = static_cast<char *>(recvbuf);
    if (g.size() == 1) return g.local_copy(out, input, bytes);
    if (bytes > g.chunk_bytes()) return reduce_chain(c, input, out, count, root);

    /* Small: the accumulator is recvbuf at the root, scratch elsewhere. */
    const BufferKind kind = g.classify(is_root ? static_cast<const void *>(out) : input);
    char *scratch = nullptr;
    st = g.scratch(kind, 2 * g.chunk_bytes(), &scratch);
    if (st != GPUCOLL_SUCCESS) return st;
    char *acc = is_root ? out : scratch;
    return reduce_binomial(c, input, acc, kind, scratch + g.chunk_bytes(), count, root);
}

} // namespace gpucoll_ucx
