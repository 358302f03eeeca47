#include "registration_cache.h"

#include "ucx_error.h"

namespace gpucoll_ucx {

RegistrationCache::RegistrationCache(ucp_context_h context, size_t max_entries)
    : context_(context), max_entries_(max_entries ? max_entries : 1)
{
}

RegistrationCache::~RegistrationCache()
{
    /* Entries still referenced here belong to transfers leaked after a
     * failed abort; their memory is gone with the worker anyway. */
    while (!lru_.empty()) unmap(std::prev(lru_.end()));
}

gpucoll_status_t RegistrationCache::acquire(const RegistrationKey &key, Ref *ref)
{
    auto found = index_.find(key);
    if (found != index_.end()) {
        ++stats_.hits;
        lru_.splice(lru_.begin(), lru_, found->second);
        ++found->second->refs;
        ref->it_ = found->second;
        ref->valid_ = true;
        return GPUCOLL_SUCCESS;
    }
    ++stats_.misses;
    ucp_mem_map_params_t params = {};
    params.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH |
                        UCP_MEM_MAP_PARAM_FIELD_MEMORY_TYPE;
    params.address = reinterpret_cast<void *>(key.base);
    params.length = key.length;
    params.memory_type = key.mem_type;
    ucp_mem_h memh = nullptr;
    ucs_status_t st = ucp_mem_map(context_, &params, &memh);
    if (st != UCS_OK)
        return ucx_fail(st, "ucp_mem_map(%p, %zu bytes, %s)", params.address, key.length,
                        ucs_memory_type_names[key.mem_type]);
    lru_.push_front(Entry{key, memh, 1});
    index_.emplace(key, lru_.begin());
    ref->it_ = lru_.begin();
    ref->valid_ = true;
    evict_over_bound();
    return GPUCOLL_SUCCESS;
}

void RegistrationCache::release(Ref *ref)
{
    if (!ref->valid_) return;
    --ref->it_->refs;
    ref->valid_ = false;
    evict_over_bound();
}

size_t RegistrationCache::invalidate(uintptr_t base)
{
    size_t busy = 0;
    for (auto it = lru_.begin(); it != lru_.end();) {
        auto next = std::next(it);
        if (it->key.base == base) {
            if (it->refs == 0) unmap(it);
            else ++busy;
        }
        it = next;
    }
    return busy;
}

void RegistrationCache::unmap(EntryList::iterator it)
{
    /* An unmap failure leaves nothing to recover; the entry goes either way. */
    (void)ucp_mem_unmap(context_, it->memh);
    index_.erase(it->key);
    lru_.erase(it);
}

void RegistrationCache::evict_over_bound()
{
    /* Walk from the least recently used end; entries in use are skipped, so
     * the cache may stay above its bound while they are busy. */
    auto it = lru_.end();
    while (lru_.size() > max_entries_ && it != lru_.begin()) {
        --it;
        if (it->refs > 0) continue;
        auto victim = it++;
        unmap(victim);
        ++stats_.evictions;
    }
}

} // namespace gpucoll_ucx
