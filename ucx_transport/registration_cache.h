/* A bounded LRU cache of UCX memory registrations (ucp_mem_map).
 *
 * Registering memory pins it and, for GPU memory, sets up GPUDirect
 * mappings: far too slow to repeat for every message. Entries are keyed by
 * (base, length, buffer id, memory type); callers register whole
 * allocations (a bounce buffer, or a device allocation as reported by
 * gpu_port_query_pointer) so that every message inside one hits the same
 * entry. The buffer id (unique per GPU allocation) keeps a freed and
 * reallocated device range from hitting a stale entry. Plain host user
 * buffers are never cached here: UCX's own registration cache tracks their
 * lifetime through its memory hooks, which this cache cannot do.
 *
 * Entries in use are pinned (refcount); when the cache holds more than its
 * bound, the least recently used unused entries are unmapped. Everything is
 * unmapped when the cache is destroyed. Not thread-safe: the worker lock
 * guards it. */
#ifndef GPUCOLL_UCX_REGISTRATION_CACHE_H
#define GPUCOLL_UCX_REGISTRATION_CACHE_H

#include <ucp/api/ucp.h>

#include <cstddef>
#include <cstdint>
#include <list>
#include <unordered_map>

#include "gpucoll_status.h"

namespace gpucoll_ucx {

struct RegistrationKey {
    uintptr_t base = 0;
    size_t length = 0;
    uint64_t buffer_id = 0;
    ucs_memory_type_t mem_type = UCS_MEMORY_TYPE_HOST;
    bool operator==(const RegistrationKey &o) const
    {
        return base == o.base && length == o.length && buffer_id == o.buffer_id && mem_type == o.mem_type;
    }
};

struct RegistrationCacheStats {
    uint64_t hits = 0, misses = 0, evictions = 0;
};

class RegistrationCache {
    struct Entry {
        RegistrationKey key;
        ucp_mem_h memh;
        int refs;
    };
    using EntryList = std::list<Entry>;

public:
    /* What acquire() hands out: the handle to pass to UCX, and the entry to
     * give back with release(). A default one is "no registration". */
    class Ref {
    public:
        ucp_mem_h memh() const { return valid_ ? it_->memh : nullptr; }
        explicit operator bool() const { return valid_; }

    private:
        friend class RegistrationCache;
        EntryList::iterator it_{};
        bool valid_ = false;
    };

    RegistrationCache(ucp_context_h context, size_t max_entries);
    ~RegistrationCache();
    RegistrationCache(const RegistrationCache &) = delete;
    RegistrationCache &operator=(const RegistrationCache &) = delete;

    /* A registration of exactly `key`, mapped on a miss. */
    gpucoll_status_t acquire(const RegistrationKey &key, Ref *ref);
    /* Gives back `ref` (no-op for an empty one) and resets it. */
    void release(Ref *ref);
    /* Unmaps every unused entry starting at `base` (before that memory is
     * freed). Returns the number of entries still in use there (should be 0). */
    size_t invalidate(uintptr_t base);

    size_t size() const { return lru_.size(); }
    RegistrationCacheStats stats() const { return stats_; }

private:
    struct KeyHash {
        size_t operator()(const RegistrationKey &k) const
        {
            return std::hash<uintptr_t>()(k.base) ^ (std::hash<size_t>()(k.length) * 31) ^
                   (std::hash<uint64_t>()(k.buffer_id) * 131) ^ size_t(k.mem_type);
        }
    };
    void unmap(EntryList::iterator it);
    void evict_over_bound();

    ucp_context_h context_;
    size_t max_entries_;
    EntryList lru_; /* front: most recently used */
    std::unordered_map<RegistrationKey, EntryList::iterator, KeyHash> index_;
    RegistrationCacheStats stats_;
};

} // namespace gpucoll_ucx
#endif
