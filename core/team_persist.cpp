// Persistent plans switch to zero-copy once every rank has mapped every
// other's buffers (rule 6 of docs/nonblocking.md): the buffers published in
// the plan's slot of the team's shared memory, mapped by the peers, and the
// launch from which every rank runs the zero-copy plan.
#include <cstdio>
#include <mutex>
#include <new>

#include "persist_switch.hpp"
#include "queued_plan.hpp"

namespace gpucoll {

namespace {

// Maps every peer's published buffers of the plan (held until it is freed).
bool map_peers(gpucoll_plan *p)
{
    gpucoll_team *t = p->team;
    const size_t elt = gpucoll_dtype_size(p->a.dtype);
    for (int r = 0; r < t->size; r++) {
        if (r == t->rank) continue;
        const ShmRank &peer = t->shm->ranks[r];
        const PersistSlot &ps = peer.persist[p->slot];
        if (!(p->peer_src[r] = p->pins->map(peer.pid, ps.src)) || !(p->peer_dst[r] = p->pins->map(peer.pid, ps.dst)))
            return false;
        if (!peer_ranges_fit(t, p->a, r, elt, ps.src, ps.dst))
            return gpucoll_fail(GPUCOLL_ERR_INVALID, "rank %d's buffer is smaller than this call reaches into", r),
                   false;
    }
    return true;
}

} // namespace

// A persistent plan's buffers, published in its slot for the peers to map:
// where the call may run zero-copy at all and both buffers are the
// caller's own, on the team's GPU, aligned for 16-byte accesses and
// exportable. A rank that does not publish keeps every rank on scratch.
void publish_buffers(gpucoll_plan *p)
{
    gpucoll_team *t = p->team;
    const gpucoll_config_t &cfg = config();
    const char *out = exported_output(t, p->a, p->src, p->dst);
    if (p->sbuf.temp || p->rbuf.temp || !out) return;
    if (p->number == UINT32_MAX) return; // its tag would read as a free slot
    if (!zero_copy_candidate(p->a, cfg, t->size)) return;
    if ((uintptr_t)p->src % 16 || (uintptr_t)out % 16) return;
    if (!make_plan(p->a, t->rank, t->size, cfg, true, &p->zc, t->share, true) || !is_direct(p->zc.algo)) return;
    // Everything that can fail first, so that taking the slot is the last step.
    IpcDesc src{}, dst{};
    gpu_port_ptr_info_t si{}, di{};
    gpu_port_query_pointer(p->src, &si);
    gpu_port_query_pointer(out, &di);
    if (!t->ipc->describe(p->src, si, &src) || !t->ipc->describe(out, di, &dst)) return;
    p->pins.reset(new (std::nothrow) IpcPins(t->ipc, t->device));
    if (!p->pins) return;
    const int slot = (int)(p->number % kPersistSlots);
    {
        std::lock_guard<std::mutex> lock(t->temps_mu);
        if (t->persist_slot_busy[slot]) return; // an older plan of ours holds it
        t->persist_slot_busy[slot] = true;
    }
    PersistSlot &mine = t->shm->ranks[t->rank].persist[slot];
    mine.src = src;
    mine.dst = dst;
    p->zc_blocks = blocks_for(p->zc, gpucoll_dtype_size(p->a.dtype), cfg, t->size, t->share);
    p->slot = slot;
    mine.word.store(persist::tag_of(p->number), std::memory_order_release);
}

void unpublish_buffers(gpucoll_plan *p)
{
    if (p->slot < 0) return;
    gpucoll_team *t = p->team;
    t->shm->ranks[t->rank].persist[p->slot].word.store(0, std::memory_order_release);
    std::lock_guard<std::mutex> lock(t->temps_mu);
    t->persist_slot_busy[p->slot] = false;
    p->slot = -1;
}

// Whether a persistent plan runs zero-copy from this launch (p->launches)
// on, decided alike on every rank without waiting. A rank announces, in its
// slot's word, the launch at which it had mapped every peer's buffers;
// launch n runs zero-copy if every rank announced at a launch before n.
// Every rank sees the same announcements: when a rank starts launch n its
// launch n-1 is over, so every rank's kernel n-1 has started, after that
// rank's host wrote whatever it announced up to launch n-1; what it
// announces later says n or more and fails the test anyway. A slot holds
// the plan's number until every rank has stopped launching the plan (MPI:
// every rank starts it as often), so no rank reads another plan's word.
void zero_copy_from_now(gpucoll_plan *p)
{
    gpucoll_team *t = p->team;
    const uint64_t tag = persist::tag_of(p->number), n = p->launches;
    auto word_of = [&](int r) { return t->shm->ranks[r].persist[p->slot].word.load(std::memory_order_acquire); };
    if (!p->announced) {
        if (!persist::all_published(word_of, t->size, tag)) return; // not (yet, or ever)
        if (n > 0xffffffffull) return;
        if (!map_peers(p)) {
            if (config().verbose >= 10)
                fprintf(stderr, "coll:gpu: rank %d: persistent plan %u stays on scratch: %s\n", t->rank, p->number,
                        gpucoll_last_error());
            unpublish_buffers(p); // never announced: no rank switches
            return;
        }
        t->shm->ranks[t->rank].persist[p->slot].word.store(persist::announced_at(tag, n), std::memory_order_release);
        p->announced = true;
        return;
    }
    if (!persist::switch_at(word_of, t->size, tag, n)) return;
    p->zero_copy = true;
    if (config().verbose >= 20)
        fprintf(stderr, "coll:gpu: rank %d: persistent plan %u runs zero-copy (%s) from its launch %llu\n", t->rank,
                p->number, algo_name(p->zc.algo), (unsigned long long)n);
}

} // namespace gpucoll
