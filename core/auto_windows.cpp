#include "auto_windows.hpp"

#include <cstdio>

#include "device_guard.hpp"
#include "gpu_error.hpp"
#include "team_state.hpp"
#include "windows.hpp"

namespace gpucoll {

int ExportSlots::find(unsigned long long id) const
{
    for (int s = 0; s < kMaxExports; s++)
        if (seq_[s] && id_[s] == id) return s;
    return -1;
}

int ExportSlots::free_slot() const
{
    for (int s = 0; s < kMaxExports; s++)
        if (!seq_[s]) return s;
    return -1;
}

uint64_t ExportSlots::add(int s, unsigned long long id, uintptr_t base, uint64_t bytes)
{
    seq_[s] = next_seq_++;
    id_[s] = id;
    base_[s] = base;
    bytes_[s] = bytes;
    return seq_[s];
}

void ExportSlots::retire(int s)
{
    if (s >= 0 && s < kMaxExports) seq_[s] = 0;
}

int ExportSlots::next_to_check()
{
    for (int i = 0; i < kMaxExports; i++) {
        const int s = check_;
        check_ = (check_ + 1) % kMaxExports;
        if (seq_[s]) return s;
    }
    return -1;
}

void ExportSlots::refuse(unsigned long long id)
{
    refused_[next_refused_] = id;
    next_refused_ = (next_refused_ + 1) % kRefused;
}

bool ExportSlots::refused(unsigned long long id) const
{
    for (unsigned long long r : refused_)
        if (r && r == id) return true;
    return false;
}

void publish_export(ShmExports &x, int s, uint64_t seq, const IpcDesc &d)
{
    ShmExport &e = x.slot[s];
    e.seq.store(0, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_release); // a reader that sees the new desc sees seq 0 or the new one
    e.desc = d;
    e.seq.store(seq, std::memory_order_release);
    x.changes.fetch_add(1, std::memory_order_release);
}

void retire_export(ShmExports &x, int s)
{
    x.slot[s].seq.store(0, std::memory_order_release);
    x.changes.fetch_add(1, std::memory_order_release);
}

bool read_export(const ShmExports &x, int s, uint64_t *seq, IpcDesc *d)
{
    const ShmExport &e = x.slot[s];
    const uint64_t before = e.seq.load(std::memory_order_acquire);
    if (!before) {
        *seq = 0;
        return true;
    }
    *d = e.desc;
    std::atomic_thread_fence(std::memory_order_acquire);
    if (e.seq.load(std::memory_order_relaxed) != before) return false;
    *seq = before;
    return true;
}

namespace {

// Rows of rank r's exports changed in the host mirror: the device table
// gets the rows, then (ordered on the same stream) their numbers, so that
// a kernel that reads a number finds its row (kernels/windows.cuh).
gpucoll_status_t upload_exports(TeamWindows *ws, int r)
{
    AutoWindows &aw = ws->autow;
    gpuError_t e = gpuMemcpyAsync(&ws->device->xbase[r], &ws->host.xbase[r], sizeof ws->host.xbase[r],
                                  gpuMemcpyHostToDevice, aw.upload);
    if (e == gpuSuccess)
        e = gpuMemcpyAsync(&ws->device->xbytes[r], &ws->host.xbytes[r], sizeof ws->host.xbytes[r],
                           gpuMemcpyHostToDevice, aw.upload);
    if (e == gpuSuccess)
        e = gpuMemcpyAsync(&ws->device->xseq[r], &ws->host.xseq[r], sizeof ws->host.xseq[r], gpuMemcpyHostToDevice,
                           aw.upload);
    if (e == gpuSuccess) e = gpuStreamSynchronize(aw.upload);
    return e == gpuSuccess ? GPUCOLL_SUCCESS : gpu_error("writing the exports of the window table", e);
}

void set_row(TeamWindows *ws, int r, int s, char *base, uint64_t bytes, uint64_t seq)
{
    ws->host.xbase[r][s] = base;
    ws->host.xbytes[r][s] = base ? bytes : 0;
    ws->host.xseq[r][s] = seq;
}

// Lets go of this rank's mapping of peer r's export in slot s. Its owner
// emptied or reused the slot only because the allocation was freed: the
// cache closes the mapping once unpinned.
void drop_import(gpucoll_team *home, TeamWindows *ws, int r, int s)
{
    AutoWindows::Import &im = ws->autow.imports[r][s];
    if (im.pinned) {
        const std::vector<uint64_t> ids{im.buffer_id};
        home->ipc->forget(im.pid, &ids);
        home->ipc->unpin(im.pid, im.buffer_id, home->device);
    }
    im = AutoWindows::Import{};
    set_row(ws, r, s, nullptr, 0, 0);
}

// Maps what peer r exported since this rank last looked; true if a row changed.
bool import_from(gpucoll_team *home, TeamWindows *ws, int r)
{
    AutoWindows &aw = ws->autow;
    const ShmExports &x = home->shm->ranks[r].exports;
    const uint64_t changes = x.changes.load(std::memory_order_acquire);
    if (changes == aw.changes_seen[r]) return false;
    bool changed = false, whole = true;
    for (int s = 0; s < kMaxExports; s++) {
        uint64_t seq = 0;
        IpcDesc d{};
        if (!read_export(x, s, &seq, &d)) {
            whole = false; // being written: next time
            continue;
        }
        AutoWindows::Import &im = aw.imports[r][s];
        if (seq == im.seq) continue;
        changed = true;
        drop_import(home, ws, r, s);
        if (!seq) continue;
        im.pid = home->shm->ranks[r].pid;
        char *p = home->ipc->map(im.pid, d, home->device);
        im.seq = seq; // mapped or not: not tried again (the peer's calls on it run through scratch)
        im.buffer_id = d.buffer_id;
        im.pinned = p != nullptr;
        if (p) set_row(ws, r, s, p, d.alloc_bytes, seq);
    }
    if (whole) aw.changes_seen[r] = changes;
    return changed;
}

// Empties this rank's slot s: its allocation was freed.
void end_export(gpucoll_team *home, TeamWindows *ws, int s)
{
    ws->autow.mine.retire(s);
    retire_export(home->shm->ranks[home->rank].exports, s);
    set_row(ws, home->rank, s, nullptr, 0, 0);
}

bool still_ours(const ExportSlots &m, int s) { return still_allocated(m.id(s), m.base(s)); }

// Exports the allocation `info` describes into a free slot (after emptying
// those whose allocations are gone); -1 if it cannot be.
int export_new(gpucoll_team *home, TeamWindows *ws, const void *p, const gpu_port_ptr_info_t &info, bool *changed)
{
    ExportSlots &m = ws->autow.mine;
    for (int s = 0; s < kMaxExports; s++)
        if (m.live(s) && !still_ours(m, s)) {
            end_export(home, ws, s);
            *changed = true;
        }
    const int s = m.free_slot();
    IpcDesc d{};
    if (s < 0) return -1;
    if (!home->ipc->describe(p, info, &d)) {
        m.refuse(info.buffer_id);
        return -1;
    }
    d.offset = 0;
    const uint64_t seq = m.add(s, info.buffer_id, (uintptr_t)info.base, info.size);
    publish_export(home->shm->ranks[home->rank].exports, s, seq, d);
    set_row(ws, home->rank, s, static_cast<char *>(info.base), info.size, seq);
    *changed = true;
    if (config().verbose >= 20)
        fprintf(stderr, "coll:gpu: rank %d: exported %zu bytes at %p for zero-copy calls (slot %d)\n", home->rank,
                info.size, info.base, s);
    return s;
}

// This rank's slot of the allocation `info` describes (exported now if
// new), or -1.
int own_slot(gpucoll_team *home, TeamWindows *ws, const void *p, const gpu_port_ptr_info_t &info, bool *changed)
{
    ExportSlots &m = ws->autow.mine;
    // One slot checked per call, so that a freed allocation that is never
    // followed by a new one is let go of too.
    const int check = m.next_to_check();
    if (check >= 0 && m.id(check) != info.buffer_id && !still_ours(m, check)) {
        end_export(home, ws, check);
        *changed = true;
    }
    const int s = m.find(info.buffer_id);
    // Pool and VMM memory has no legacy IPC handle: such calls stay on scratch.
    if (s >= 0 || !info.ipc_capable || m.refused(info.buffer_id)) return s;
    return export_new(home, ws, p, info, changed);
}

// Maps every peer's new exports (under aw.mu); false if the table could not be written.
bool import_all(gpucoll_team *home, TeamWindows *ws)
{
    for (int r = 0; r < home->size; r++)
        if (r != home->rank && import_from(home, ws, r) && upload_exports(ws, r) != GPUCOLL_SUCCESS) return false;
    return true;
}

} // namespace

uint64_t auto_window_desc(gpucoll_team *home, TeamWindows *ws, const void *p, size_t bytes)
{
    AutoWindows &aw = ws->autow;
    if (!aw.upload || !p || (uintptr_t)p % 16) return 0;
    gpu_port_ptr_info_t info{};
    if (gpu_port_query_pointer(p, &info) != 0 || info.kind != GPU_PORT_MEM_DEVICE || info.device != home->device ||
        !info.base)
        return 0;
    std::lock_guard<std::mutex> lock(aw.mu);
    CaptureRelaxed relaxed; // a captured call exports and maps too: its graph's replays run zero-copy
    if (!import_all(home, ws)) return 0;
    bool changed = false;
    const int s = own_slot(home, ws, p, info, &changed);
    if (changed && upload_exports(ws, home->rank) != GPUCOLL_SUCCESS) return 0;
    if (s < 0) return 0;
    const uint64_t off = (uint64_t)((const char *)p - (const char *)info.base);
    if (off > aw.mine.bytes(s) || bytes > aw.mine.bytes(s) - off) return 0;
    return export_desc(s, aw.mine.seq(s), off);
}

void auto_windows_catch_up(gpucoll_team *t, TeamWindows *ws)
{
    AutoWindows &aw = ws->autow;
    std::unique_lock<std::mutex> lock(aw.mu, std::try_to_lock);
    if (!lock.owns_lock() || !aw.upload) return; // a call is mapping them now
    bool news = false;
    for (int r = 0; r < t->size; r++)
        news |= r != t->rank && t->shm->ranks[r].exports.changes.load(std::memory_order_acquire) != aw.changes_seen[r];
    if (!news) return;
    DeviceGuard g(t->device);
    CaptureRelaxed relaxed; // the application may be capturing on another thread
    (void)import_all(t, ws);
}

void auto_windows_release(gpucoll_team *home, TeamWindows *ws)
{
    AutoWindows &aw = ws->autow;
    std::lock_guard<std::mutex> lock(aw.mu);
    for (int r = 0; r < kWindowPeers; r++)
        for (int s = 0; s < kMaxExports; s++) {
            AutoWindows::Import &im = aw.imports[r][s];
            if (im.pinned) unpin_process_ipc(im.pid, im.buffer_id, home->device);
            im = AutoWindows::Import{};
        }
    if (aw.upload) gpuStreamDestroy(aw.upload);
    aw.upload = nullptr;
}

} // namespace gpucoll
