/* Building blocks shared by the inter-node collective schedules. */
#ifndef GPUCOLL_UCX_SCHEDULE_UTIL_H
#define GPUCOLL_UCX_SCHEDULE_UTIL_H

#include <algorithm>
#include <cstddef>
#include <vector>

#include "gpucoll_ucx.h"
#include "ucx_group.h"

namespace gpucoll_ucx {

inline int mod(long a, int n) { return int(((a % n) + n) % n); }

/* `count` elements split into `n` nearly equal blocks, the first count % n
 * of them one element larger. Blocks may be empty when count < n. */
struct Blocks {
    size_t count;
    int n;
    size_t size(int b) const { return count / size_t(n) + (size_t(b) < count % size_t(n) ? 1 : 0); }
    size_t offset(int b) const
    {
        return size_t(b) * (count / size_t(n)) + std::min<size_t>(size_t(b), count % size_t(n));
    }
};

/* One collective call: its group, its own tag sequence number and its element
 * type and reduction. Counts below are in elements. */
struct Collective {
    Group &g;
    uint32_t seq;
    gpucoll_dtype_t dtype;
    size_t esize;
    gpucoll_op_t op;
    const gpucoll_ucx_reducer_t *reducer;

    int rank() const { return g.rank(); }
    int size() const { return g.size(); }
    /* Segments are one chunk: chunk_bytes is a multiple of every element size. */
    size_t seg_elems() const { return g.chunk_bytes() / esize; }
    gpucoll_status_t send(int peer, const void *buf, size_t count, uint32_t step, Transfer **t)
    {
        return g.start_send(peer, buf, count * esize, TagClass::Collective, seq, step, t);
    }
    gpucoll_status_t recv(int peer, void *buf, size_t count, uint32_t step, Transfer **t)
    {
        return g.start_recv(peer, buf, count * esize, TagClass::Collective, seq, step, t);
    }
    gpucoll_status_t reduce(const BufferKind &kind, void *inout, const void *in, size_t count)
    {
        return g.reduce(kind, reducer, inout, in, count, dtype, op);
    }
};

/* The transfers of one scope. Whatever is still held when the scope ends
 * (an early return on error) is released, which aborts unfinished ones:
 * no schedule leaves a request behind that references a user buffer. */
class TransferScope {
public:
    explicit TransferScope(Group &g) : g_(g) {}
    ~TransferScope()
    {
        for (Transfer *t : held_) g_.release(t);
    }
    TransferScope(const TransferScope &) = delete;
    TransferScope &operator=(const TransferScope &) = delete;

    /* Takes ownership of *t, written by the call that produced `started`:
     * `scope.hold(c.send(..., &t), &t)`. A pointer, because the arguments
     * of one call are evaluated in no fixed order. */
    gpucoll_status_t hold(gpucoll_status_t started, Transfer *const *t)
    {
        if (*t) held_.push_back(*t);
        return started;
    }
    /* Waits for `t` (null: nothing to do) and releases it. */
    gpucoll_status_t wait(Transfer *&t)
    {
        if (!t) return GPUCOLL_SUCCESS;
        gpucoll_status_t st = g_.wait(&t, 1);
        if (st != GPUCOLL_SUCCESS) return st;
        auto it = std::find(held_.begin(), held_.end(), t);
        if (it != held_.end()) held_.erase(it);
        g_.release(t);
        t = nullptr;
        return GPUCOLL_SUCCESS;
    }
    gpucoll_status_t wait_all()
    {
        gpucoll_status_t st = g_.wait(held_.data(), held_.size());
        if (st != GPUCOLL_SUCCESS) return st;
        for (Transfer *t : held_) g_.release(t);
        held_.clear();
        return GPUCOLL_SUCCESS;
    }

private:
    Group &g_;
    std::vector<Transfer *> held_;
};

/* Receives `count` elements from `peer` as chunk-sized segments, `window` of
 * them in flight, and hands each, in order, to
 *     consume(index, element_offset, elements, data, Transfer **hold).
 * Segment j lands at dest(j). When dest() cycles through `slots` scratch
 * slots, a `hold` set by consume (e.g. forwarding the slot) keeps slot j busy
 * until that transfer completes; slots >= window. Segment boundaries match
 * the chunking of a single message, so the sender may send it whole. */
template <class Dest, class Consume>
gpucoll_status_t receive_segments(Collective &c, TransferScope &scope, int peer, uint32_t step, size_t count,
                                  int window, int slots, Dest dest, Consume consume)
{
    const size_t seg = c.seg_elems();
    const size_t nseg = (count + seg - 1) / seg;
    auto seg_len = [&](size_t j) { return std::min(seg, count - j * seg); };
    std::vector<Transfer *> recvs(size_t(slots), nullptr), holds(size_t(slots), nullptr);
    auto post = [&](size_t j) -> gpucoll_status_t {
        size_t k = j % size_t(slots);
        gpucoll_status_t st = scope.wait(holds[k]); /* the slot's previous user */
        if (st != GPUCOLL_SUCCESS) return st;
        return scope.hold(c.recv(peer, dest(j), seg_len(j), step, &recvs[k]), &recvs[k]);
    };
    gpucoll_status_t st = GPUCOLL_SUCCESS;
    for (size_t j = 0; j < std::min(nseg, size_t(window)) && st == GPUCOLL_SUCCESS; ++j) st = post(j);
    for (size_t j = 0; j < nseg && st == GPUCOLL_SUCCESS; ++j) {
        size_t k = j % size_t(slots);
        st = scope.wait(recvs[k]);
        if (st == GPUCOLL_SUCCESS) {
            Transfer *hold = nullptr;
            st = consume(j, j * seg, seg_len(j), dest(j), &hold);
            if (hold) scope.hold(GPUCOLL_SUCCESS, &hold);
            holds[k] = hold;
        }
        if (st == GPUCOLL_SUCCESS && j + size_t(window) < nseg) st = post(j + size_t(window));
    }
    return st;
}

/* Ring reduce-scatter in place on `work` (count elements in `blocks`): in
 * step s rank r sends block (r - s + shift) to its right neighbour and
 * reduces block (r - s - 1 + shift) from its left one into `work`, segment by
 * segment through `slots` (depth chunks of scratch like `work`). Afterwards
 * rank r holds the fully reduced block (r + 1 + shift). Steps 0..n-2. */
gpucoll_status_t ring_reduce_scatter(Collective &c, char *work, const BufferKind &work_kind, const Blocks &blocks,
                                     int shift, char *slots);

/* Ring allgather in place on `work`: rank r starts owning block (r + own)
 * and, after n-1 steps numbered from `first_step`, has them all. */
gpucoll_status_t ring_allgather(Collective &c, char *work, const Blocks &blocks, int own, uint32_t first_step);

/* ---- the schedules (sched_*.cpp) ---- */
gpucoll_status_t schedule_allreduce(Group &g, const void *sendbuf, void *recvbuf, size_t count, gpucoll_dtype_t dtype,
                                    gpucoll_op_t op, const gpucoll_ucx_reducer_t *reducer);
gpucoll_status_t schedule_allgather(Group &g, const void *sendbuf, void *recvbuf, size_t count, gpucoll_dtype_t dtype);
gpucoll_status_t schedule_bcast(Group &g, void *buf, size_t count, gpucoll_dtype_t dtype, int root);
gpucoll_status_t schedule_reduce_scatter(Group &g, const void *sendbuf, void *recvbuf, size_t recvcount,
                                         gpucoll_dtype_t dtype, gpucoll_op_t op, const gpucoll_ucx_reducer_t *reducer);
gpucoll_status_t schedule_reduce(Group &g, const void *sendbuf, void *recvbuf, size_t count, gpucoll_dtype_t dtype,
                                 gpucoll_op_t op, int root, const gpucoll_ucx_reducer_t *reducer);

/* Argument checks shared by the schedules. */
gpucoll_status_t check_dtype(gpucoll_dtype_t dtype, const char *who);
gpucoll_status_t check_reduction(gpucoll_dtype_t dtype, gpucoll_op_t op, const char *who);
gpucoll_status_t check_root(const Group &g, int root, const char *who);
inline bool is_in_place(const void *sendbuf, const void *recvbuf)
{
    return sendbuf == GPUCOLL_UCX_IN_PLACE || sendbuf == recvbuf;
}

} // namespace gpucoll_ucx
#endif
