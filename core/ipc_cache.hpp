// CUDA IPC of user buffers for the zero-copy algorithms.
//
// A rank publishes, per call, a descriptor of each buffer (the allocation's
// IPC handle, its buffer id and the offset into it); its peers map the
// allocation once and keep the mapping in a bounded LRU cache. Keys carry the
// allocation's buffer id, which the driver never reuses in a process, so an
// address freed and allocated again is never served a stale mapping. The
// driver keeps a freed allocation's memory alive while a peer maps it, so
// a freed allocation must not stay mapped: its owner notices the free when
// it next exports a new allocation and posts it to its peers
// (ipc_notices.hpp), which unmap it after their next collective on a team
// with the owner; what escapes that (an owner that never exports again,
// notices read only by blocking calls) is bounded by the cache's byte
// budget (ipc_cache_bytes) per mapping process. Pure bookkeeping is
// separated from the driver calls so that it can be unit-tested without a
// GPU.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <atomic>
#include <iterator>
#include <list>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include "gpu_port.h"
#include "ipc_notices.hpp"
#include "peer_args.h"

namespace gpucoll {

struct IpcDesc {
    gpuIpcMemHandle_t handle;
    unsigned long long buffer_id;
    uint64_t offset;
    uint64_t alloc_bytes; // of the whole allocation: what a peer's mapping covers
};

// LRU map from K to V with a fixed capacity; insert() returns what it evicted.
template <class K, class V> class Lru {
public:
    explicit Lru(size_t capacity) : cap_(capacity ? capacity : 1) {}
    V *find(const K &k)
    {
        auto it = index_.find(k);
        if (it == index_.end()) return nullptr;
        order_.splice(order_.begin(), order_, it->second); // most recent first
        return &it->second->second;
    }
    // Adds k (not present); fills *evicted and returns true if one was pushed out.
    bool insert(const K &k, const V &v, std::pair<K, V> *evicted)
    {
        order_.emplace_front(k, v);
        index_[k] = order_.begin();
        if (order_.size() <= cap_) return false;
        *evicted = order_.back();
        index_.erase(order_.back().first);
        order_.pop_back();
        return true;
    }
    bool erase(const K &k)
    {
        auto it = index_.find(k);
        if (it == index_.end()) return false;
        order_.erase(it->second);
        index_.erase(it);
        return true;
    }
    size_t size() const { return order_.size(); }
    template <class F> void for_each(F f)
    {
        for (auto &e : order_) f(e.first, e.second);
    }
    void clear()
    {
        order_.clear();
        index_.clear();
    }

private:
    size_t cap_;
    std::list<std::pair<K, V>> order_;
    std::map<K, typename std::list<std::pair<K, V>>::iterator> index_;
};

// The mappings of peers' buffers, bounded in number and in bytes: the bytes
// are what the mappings would keep alive of allocations their owners freed.
// A mapping a call still uses is pinned (another thread's call on another
// communicator may read through it): never closed under that call's kernel.
// So the bounds hold except for what is pinned: the least recently used
// unpinned mappings are closed first, at an insert or at the unpin that
// lets them go. One larger than the whole budget is closed at its last
// unpin, and meanwhile counts against no other (closing those could not make
// room for it); so is one its owner freed (forget_if). Pure bookkeeping; the
// caller closes the values it is handed.
template <class K, class V> class PinnedLru {
public:
    PinnedLru(size_t capacity, uint64_t budget_bytes) : cap_(capacity ? capacity : 1), budget_(budget_bytes) {}
    // Pins k, makes it the most recent and returns its value, if held.
    V *pin(const K &k)
    {
        auto it = index_.find(k);
        if (it == index_.end()) return nullptr;
        order_.splice(order_.begin(), order_, it->second);
        it->second->pins++;
        return &it->second->v;
    }
    // Adds k (not held), of `bytes`, with one pin; appends to *closable what
    // it pushes out.
    void insert_pinned(const K &k, const V &v, uint64_t bytes, std::vector<V> *closable)
    {
        order_.push_front(Slot{k, v, bytes, 1, false});
        index_[k] = order_.begin();
        bytes_ += bytes;
        if (bytes > budget_) big_ += bytes;
        trim(closable);
    }
    // Drops one pin of k; appends to *closable what can be closed now.
    void unpin(const K &k, std::vector<V> *closable)
    {
        auto it = index_.find(k);
        if (it == index_.end()) return;
        Slot &s = *it->second;
        if (s.pins && --s.pins) return;
        if (s.freed || s.bytes > budget_) close(it->second, closable);
        else trim(closable);
    }
    // The mappings whose key `freed` says their owner freed: appended to
    // *closable if unpinned, else closed at their last unpin.
    template <class P> void forget_if(P freed, std::vector<V> *closable)
    {
        for (auto it = order_.begin(); it != order_.end();) {
            auto cur = it++;
            if (!freed(cur->k)) continue;
            if (cur->pins) cur->freed = true;
            else close(cur, closable);
        }
    }
    size_t size() const { return order_.size(); }
    uint64_t bytes() const { return bytes_; }
    // Hands every value to f and forgets them all, pinned or not.
    template <class F> void drain(F f)
    {
        for (Slot &s : order_) f(s.v);
        order_.clear();
        index_.clear();
        bytes_ = big_ = 0;
    }

private:
    struct Slot {
        K k;
        V v;
        uint64_t bytes;
        unsigned pins;
        bool freed;
    };
    using Iter = typename std::list<Slot>::iterator;
    void close(Iter it, std::vector<V> *closable)
    {
        closable->push_back(it->v);
        bytes_ -= it->bytes;
        if (it->bytes > budget_) big_ -= it->bytes;
        index_.erase(it->k);
        order_.erase(it);
    }
    // Pinned slots are few (two per peer and call in flight): skipping them is cheap.
    void trim(std::vector<V> *closable)
    {
        for (auto it = order_.end(); (order_.size() > cap_ || bytes_ - big_ > budget_) && it != order_.begin();) {
            auto cur = std::prev(it);
            if (cur->pins) it = cur;
            else close(cur, closable);
        }
    }
    size_t cap_;
    uint64_t budget_;
    uint64_t bytes_ = 0; // of every open mapping
    uint64_t big_ = 0;   // of those larger than the budget (all pinned)
    std::list<Slot> order_; // most recent first
    std::map<K, Iter> index_;
};

// Whether the allocation `id` this process exported at `base` still exists:
// the driver reports another buffer id there (or none) once it is freed. One
// pointer query, in the driver, with no GPU work.
bool still_allocated(unsigned long long id, uintptr_t base);

// This process's exported allocations (a handle is taken once each) and
// which of them have been freed since: the buffer id the driver reports at
// an allocation's base is no longer its own once it is freed (the address
// then belongs to nothing, or to a later allocation). Checked when a new
// allocation is exported, which is when the loops that free buffers
// allocate the next ones; never on a call whose buffers are known. Bounded:
// one that falls out is no longer watched (the peers' byte budget bounds
// what it can hold if freed). Pure bookkeeping.
template <class H> class ExportBook {
public:
    explicit ExportBook(size_t capacity) : lru_(capacity) {}
    const H *find(unsigned long long id)
    {
        Export *e = lru_.find(id);
        return e ? &e->handle : nullptr;
    }
    // Records a new export at `base`; appends to *freed, and forgets, the
    // earlier ones for which alive(id, base) is false.
    template <class Alive>
    void add(unsigned long long id, const H &h, uintptr_t base, Alive alive, std::vector<unsigned long long> *freed)
    {
        const size_t had = freed->size();
        lru_.for_each([&](unsigned long long k, const Export &e) {
            if (!alive(k, e.base)) freed->push_back(k);
        });
        for (size_t i = had; i < freed->size(); i++) lru_.erase((*freed)[i]);
        std::pair<unsigned long long, Export> out;
        lru_.insert(id, Export{h, base}, &out);
    }
    size_t size() const { return lru_.size(); }
    void clear() { lru_.clear(); }

private:
    struct Export {
        H handle;
        uintptr_t base;
    };
    Lru<unsigned long long, Export> lru_;
};

class IpcCache {
public:
    // One mapping: the device it was opened on is the one to close it on.
    struct Mapping {
        char *base;
        int device;
    };
    using Key = std::pair<std::pair<long, unsigned long long>, int>; // (owner pid, buffer id), device

    // At most `capacity` mappings of `budget_bytes` in all, plus what running
    // calls pin (PinnedLru).
    IpcCache(size_t capacity, uint64_t budget_bytes) : exports_(capacity), imports_(capacity, budget_bytes) {}
    ~IpcCache() { release(); }
    // Descriptor of `ptr` (inside the allocation `info` describes). False if
    // the allocation cannot be exported (e.g. VMM or pool memory). A new
    // export posts, into every ring added, the earlier ones found freed.
    bool describe(const void *ptr, const gpu_port_ptr_info_t &info, IpcDesc *out);
    // This process's slot in a team's shared memory, from the team's GPU
    // set-up to its release: where the peers of that team read the notices.
    void add_ring(FreedRing *r);
    void remove_ring(FreedRing *r);
    // The buffer of process `owner_pid` as mapped on `device`, which must be
    // current; NULL (and a reason in gpucoll_last_error) if it cannot be
    // mapped. The mapping is pinned until unpin(): take them through IpcPins.
    char *map(long owner_pid, const IpcDesc &d, int device);
    void unpin(long owner_pid, unsigned long long buffer_id, int device);
    // `owner_pid` freed the allocations `ids` (NULL: any of its allocations
    // may be gone, notices were lost): their mappings leave the cache, to be
    // unmapped by close_unused (a pinned one after its last unpin).
    void forget(long owner_pid, const std::vector<uint64_t> *ids);
    // Unmaps what left the cache, if no peer kernel of this process is
    // running (an unmap waits for the whole device); else later. Call it
    // outside any call's window between agreement and launch.
    void close_unused();
    void release();

private:
    void set_aside(size_t had); // under mu_
    // Calls on different communicators may come from different threads.
    std::mutex mu_;
    std::vector<Mapping> unused_; // evicted and unpinned, not yet unmapped
    std::atomic<bool> any_unused_{false}; // !unused_.empty(), read without mu_ after every call
    ExportBook<gpuIpcMemHandle_t> exports_;
    PinnedLru<Key, Mapping> imports_;
    std::vector<FreedRing *> rings_;
};

// A mapping let go of, if the process's cache still exists (teams that end
// at the library's unload end after it).
void unpin_process_ipc(long owner_pid, unsigned long long buffer_id, int device);

// The mappings one call takes (from the process's cache), unpinned when it
// goes out of scope: declare it where it outlives every kernel that reads
// through them. One held by a team that ends at the library's unload, after
// the cache, unpins nothing.
class IpcPins {
public:
    IpcPins(IpcCache *cache, int device) : cache_(cache), device_(device) {}
    ~IpcPins()
    {
        for (int i = 0; i < n_; i++) unpin_process_ipc(held_[i].first, held_[i].second, device_);
    }
    char *map(long owner_pid, const IpcDesc &d)
    {
        if (n_ == kMax) return nullptr;
        char *p = cache_->map(owner_pid, d, device_);
        if (p) held_[n_++] = std::make_pair(owner_pid, d.buffer_id);
        return p;
    }
    IpcPins(const IpcPins &) = delete;
    IpcPins &operator=(const IpcPins &) = delete;

private:
    static constexpr int kMax = 2 * kMaxPeers; // a source and a destination per peer
    IpcCache *cache_;
    int device_;
    int n_ = 0;
    std::pair<long, unsigned long long> held_[kMax];
};

// The process's cache: CUDA maps an allocation at most once per process (per
// device), so every communicator shares one, whichever thread calls.
IpcCache &process_ipc_cache();
// At a team's end: its ring leaves the process's cache, if that still exists.
void remove_process_ipc_ring(FreedRing *r);

void release_process_ipc_cache();

} // namespace gpucoll
