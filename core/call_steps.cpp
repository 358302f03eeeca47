// The steps that blocking, queued (nonblocking, persistent) and
// stream-ordered calls share, so that each mode composes them instead of
// repeating them: preparing a call that runs without a host agreement
// (validation, plan, chunk, grid) and starting a kernel (launch, the
// "no kernel" and launch errors, and what a failed launch leaves behind).
#include <algorithm>

#include "device_guard.hpp"
#include "gpu_error.hpp"
#include "team_state.hpp"

namespace gpucoll {

bool fit_chunk(const gpucoll_team *t, Plan *plan, size_t elt)
{
    if (!is_direct(plan->algo) && !is_ll(plan->algo))
        plan->chunk = even_chunk_elems(plan->chunk, max_chunk_elems(*plan, t->half_bytes, elt), elt);
    return plan->chunk != 0 || is_direct(plan->algo);
}

gpucoll_status_t prepare_unagreed(const gpucoll_team *t, const gpucoll_coll_args_t &args, const gpucoll_config_t &cfg,
                                  UnagreedCall *c)
{
    c->a = args;
    gpucoll_coll_args_t &a = c->a;
    if (!queueable(a)) return GPUCOLL_ERR_UNSUPPORTED;
    const bool rooted = a.kind == GPUCOLL_COLL_BCAST || a.kind == GPUCOLL_COLL_REDUCE;
    if (rooted && (a.root < 0 || a.root >= t->size))
        return gpucoll_fail(GPUCOLL_ERR_INVALID, "root %d of a communicator of %d ranks", a.root, t->size);
    c->elt = gpucoll_dtype_size(a.dtype);
    if (c->elt == 0 || a.count == 0) return GPUCOLL_ERR_UNSUPPORTED;
    if (a.kind == GPUCOLL_COLL_BCAST) a.sbuf = nullptr; // the root's buffer is its input
    // No kernel for the type and op, or no chunk that fits: alike everywhere.
    if (!make_plan(a, t->rank, t->size, cfg, false, &c->plan, t->share, true) ||
        !fit_chunk(t, &c->plan, c->elt))
        return GPUCOLL_ERR_UNSUPPORTED;
    c->blocks = blocks_for(c->plan, c->elt, cfg, t->size, t->share);
    return GPUCOLL_SUCCESS;
}

void give_up_peers(gpucoll_team *t)
{
    // Every rank's kernel of this call waits for ours, which will not come:
    // their give-up words end them with kErrorPeerGaveUp (peer_sync.cuh).
    static const uint64_t one = 1;
    for (int r = 0; r < t->size; r++)
        if (t->scratch[r]) (void)gpuMemcpy(t->scratch[r] + kGiveUpOffset, &one, sizeof one, gpuMemcpyHostToDevice);
}

gpucoll_status_t abandon_call(gpucoll_team *t, gpucoll_status_t st)
{
    give_up_peers(t);
    t->broken = true;
    return st;
}

int launch_threads(const PeerArgs &k, gpucoll_dtype_t dtype, int blocks)
{
    // The move kernels count bytes; the reductions count elements.
    const size_t bytes = k.count * (moves_bytes(k.algo) ? 1 : gpucoll_dtype_size(dtype));
    return threads_for(k.algo, bytes, blocks, config());
}

gpucoll_status_t launch_step(gpucoll_team *t, const Launch &l, int *threads)
{
    // An error left in the thread's last-error slot by an earlier call
    // (non-sticky: an allocation that failed) would read as this launch's:
    // the launch is checked on a clean slot.
    (void)gpuGetLastError();
    bool launched = launch_peer_kernel(*l.k, l.dtype, l.op, l.blocks, launch_threads(*l.k, l.dtype, l.blocks), l.stream,
                                       threads, l.graph);
    gpuError_t e = gpuGetLastError();
    if (launched && e == gpuSuccess) return GPUCOLL_SUCCESS;
    // Agreed, or queued where every rank queues alike: the peers' kernels
    // are on their way, and the barrier epochs of this team are now out of
    // step with theirs.
    if (t->gpu == gpucoll_team::GpuReady && l.blocking) t->gpu = gpucoll_team::GpuFailed;
    if (!launched)
        return abandon_call(t, gpucoll_fail(GPUCOLL_ERR_INTERNAL, "%s: no kernel for %s/%s", l.what,
                                            gpucoll_dtype_name(l.dtype), gpucoll_op_name(l.op)));
    return abandon_call(t, gpu_error(l.what, e));
}

} // namespace gpucoll
