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

#include <list>
#include <map>
#include <utility>

#include "gpu_port.h"

namespace gpucoll {

struct IpcDesc {
    gpuIpcMemHandle_t handle;
    unsigned long long buffer_id;
    uint64_t offset;
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

class IpcCache {
public:
    explicit IpcCache(size_t capacity) : exports_(capacity), imports_(capacity) {}
    ~IpcCache() { release(); }
    // Descriptor of `ptr` (inside the allocation `info` describes). False if
    // the allocation cannot be exported (e.g. VMM or pool memory).
    bool describe(const void *ptr, const gpu_port_ptr_info_t &info, IpcDesc *out);
    // The buffer of process `owner_pid` as mapped here; NULL (and a reason in
    // gpucoll_last_error) if it cannot be mapped. The current device must be
    // the one the mapping is used from.
    char *map(long owner_pid, const IpcDesc &d);
    void release();

private:
    Lru<unsigned long long, gpuIpcMemHandle_t> exports_;
    Lru<std::pair<long, unsigned long long>, char *> imports_;
};

// The process's cache: CUDA maps an allocation at most once per process, so
// every communicator shares one (MPI calls come from one thread at a time).
IpcCache &process_ipc_cache();
void release_process_ipc_cache();

} // namespace gpucoll
