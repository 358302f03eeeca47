/* Reduce_scatter (block): the ring reduce-scatter of allreduce, shifted so
 * that rank r ends up with block r. The ring reduces in place, so a
 * non-in-place call works on a scratch copy of sendbuf. */
#include "schedule_util.h"

namespace gpucoll_ucx {

namespace {
constexpr size_t kScratchAlign = 256;
size_t aligned(size_t n) { return (n + kScratchAlign - 1) / kScratchAlign * kScratchAlign; }
} // namespace

gpucoll_status_t schedule_reduce_scatter(Group &g, const void *sendbuf, void *recvbuf, size_t recvcount,
                                         gpucoll_dtype_t dtype, gpucoll_op_t op, const gpucoll_ucx_reducer_t *reducer)
{
    const uint32_t seq = g.next_collective_seq();
    gpucoll_status_t st = check_reduction(dtype, op, "reduce_scatter");
    if (st != GPUCOLL_SUCCESS || recvcount == 0) return st;
    if (!recvbuf) return gpucoll_fail(GPUCOLL_ERR_INVALID, "ucx reduce_scatter: NULL recvbuf");
    Collective c{g, seq, dtype, gpucoll_dtype_size(dtype), op, reducer};
    const bool in_place = is_in_place(sendbuf, recvbuf);
    const size_t block_bytes = recvcount * c.esize;
    const size_t total_bytes = block_bytes * size_t(g.size());
    char *out = static_cast<char *>(recvbuf);
    if (g.size() == 1) return in_place ? GPUCOLL_SUCCESS : g.local_copy(out, sendbuf, block_bytes);

    const BufferKind kind = g.classify(out);
    const size_t slot_bytes = size_t(g.depth()) * g.chunk_bytes();
    char *scratch = nullptr;
    st = g.scratch(kind, in_place ? slot_bytes : aligned(total_bytes) + slot_bytes, &scratch);
    if (st != GPUCOLL_SUCCESS) return st;
    char *work = out, *slots = scratch;
    if (!in_place) {
        work = scratch;
        slots = scratch + aligned(total_bytes);
        st = g.local_copy(work, sendbuf, total_bytes);
        if (st != GPUCOLL_SUCCESS) return st;
    }
    st = ring_reduce_scatter(c, work, kind, Blocks{recvcount * size_t(g.size()), g.size()}, -1, slots);
    if (st != GPUCOLL_SUCCESS) return st;
    /* Block r is at work + r * block_bytes; it never overlaps out[0, block)
     * unless it is already there (r == 0 in place). */
    return g.local_copy(out, work + size_t(g.rank()) * block_bytes, block_bytes);
}

} // namespace gpucoll_ucx
