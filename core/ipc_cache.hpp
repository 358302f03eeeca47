// CUDA IPC of user buffers for the zero-copy algorithms.
//
// A rank publishes, per call, a descriptor of each buffer (the allocation's
// IPC handle, its buffer id and the offset into it); its peers map the
// allocation once and keep the mapping in a bounded LRU cache. Keys carry the
// allocation's buffer id, which the driver never reuses in a process, so an
// address freed and allocated again is never served a stale mapping; a
// mapping whose allocation was freed only lingers until evicted (the driver
// keeps such memory alive while it is mapped), so the cache bound is also
// the bound of what can be held. Pure bookkeeping is separated from the
// driver calls so that it can be unit-tested without a GPU.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <atomic>
#include <list>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include "gpu_port.h"
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
    // Like find, without making k the most recent.
    V *peek(const K &k)
    {
        auto it = index_.find(k);
        return it == index_.end() ? nullptr : &it->second->second;
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

// The mappings of peers' buffers, pinned while a call uses them: an entry the
// LRU pushes out while some call's kernel still reads through it (another
// thread's call on another communicator) waits, out of the LRU, for its last
// unpin instead of being closed under that kernel. Pure bookkeeping; the
// caller closes the values it is handed.
template <class K, class V> class PinnedLru {
public:
    explicit PinnedLru(size_t capacity) : live_(capacity) {}
    // Pins k and returns its value, if held (in the LRU or waiting).
    V *pin(const K &k)
    {
        if (Slot *s = live_.find(k)) {
            s->pins++;
            return &s->v;
        }
        auto it = waiting_.find(k);
        if (it == waiting_.end()) return nullptr;
        it->second.pins++;
        return &it->second.v;
    }
    // Adds k (not held) with one pin. True, with *closable, if an unpinned
    // entry was pushed out and can be closed now.
    bool insert_pinned(const K &k, const V &v, V *closable)
    {
        std::pair<K, Slot> gone;
        if (!live_.insert(k, Slot{v, 1}, &gone)) return false;
        if (gone.second.pins == 0) {
            *closable = gone.second.v;
            return true;
        }
        waiting_.emplace(gone.first, gone.second);
        return false;
    }
    // Drops one pin of k. True, with *closable, if k had left the LRU and
    // this was its last pin.
    bool unpin(const K &k, V *closable)
    {
        if (Slot *s = live_.peek(k)) {
            if (s->pins) s->pins--;
            return false;
        }
        auto it = waiting_.find(k);
        if (it == waiting_.end() || --it->second.pins) return false;
        *closable = it->second.v;
        waiting_.erase(it);
        return true;
    }
    size_t size() const { return live_.size(); }
    size_t waiting() const { return waiting_.size(); }
    // Hands every value to f and forgets them all, pinned or not.
    template <class F> void drain(F f)
    {
        live_.for_each([&f](const K &, Slot &s) { f(s.v); });
        for (auto &e : waiting_) f(e.second.v);
        live_.clear();
        waiting_.clear();
    }

private:
    struct Slot {
        V v;
        unsigned pins;
    };
    Lru<K, Slot> live_;
    std::map<K, Slot> waiting_;
};

class IpcCache {
public:
    // One mapping: the device it was opened on is the one to close it on.
    struct Mapping {
        char *base;
        int device;
    };
    using Key = std::pair<std::pair<long, unsigned long long>, int>; // (owner pid, buffer id), device

    explicit IpcCache(size_t capacity) : exports_(capacity), imports_(capacity) {}
    ~IpcCache() { release(); }
    // Descriptor of `ptr` (inside the allocation `info` describes). False if
    // the allocation cannot be exported (e.g. VMM or pool memory).
    bool describe(const void *ptr, const gpu_port_ptr_info_t &info, IpcDesc *out);
    // The buffer of process `owner_pid` as mapped on `device`, which must be
    // current; NULL (and a reason in gpucoll_last_error) if it cannot be
    // mapped. The mapping is pinned until unpin(): take them through IpcPins.
    char *map(long owner_pid, const IpcDesc &d, int device);
    void unpin(long owner_pid, unsigned long long buffer_id, int device);
    // Unmaps what left the cache, if no peer kernel of this process is
    // running (an unmap waits for the whole device); else later. Call it
    // outside any call's window between agreement and launch.
    void close_unused();
    void release();

private:
    // Calls on different communicators may come from different threads.
    std::mutex mu_;
    std::vector<Mapping> unused_; // evicted and unpinned, not yet unmapped
    std::atomic<bool> any_unused_{false}; // !unused_.empty(), read without mu_ after every call
    Lru<unsigned long long, gpuIpcMemHandle_t> exports_;
    PinnedLru<Key, Mapping> imports_;
};

// The mappings one call takes, unpinned when it goes out of scope: declare it
// where it outlives every kernel that reads through them.
class IpcPins {
public:
    IpcPins(IpcCache *cache, int device) : cache_(cache), device_(device) {}
    ~IpcPins()
    {
        for (int i = 0; i < n_; i++) cache_->unpin(held_[i].first, held_[i].second, device_);
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
void release_process_ipc_cache();

} // namespace gpucoll
