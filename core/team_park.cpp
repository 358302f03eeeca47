// The bookkeeping of what ended teams leave behind (team_park.hpp says why).
#include "team_park.hpp"

#include <string.h>

namespace gpucoll {

void ParkStore::park_scratch(int device, size_t bytes, void *p)
{
    std::lock_guard<std::mutex> g(mu_);
    scratch_.push_back(Scratch{device, bytes, p});
}

void ParkStore::park_words(int device, void *error, void *done)
{
    std::lock_guard<std::mutex> g(mu_);
    words_.push_back(Words{device, error, done});
}

void ParkStore::park_mapping(const ParkedMapping &m)
{
    std::lock_guard<std::mutex> g(mu_);
    mappings_.push_back(m);
}

void ParkStore::park_pool(int device, void *pool)
{
    std::lock_guard<std::mutex> g(mu_);
    pools_.push_back(Pool{device, pool});
}

void *ParkStore::take_pool(int device)
{
    std::lock_guard<std::mutex> g(mu_);
    for (size_t i = 0; i < pools_.size(); i++) {
        if (pools_[i].device != device) continue;
        void *p = pools_[i].pool;
        pools_.erase(pools_.begin() + (long)i);
        return p;
    }
    return nullptr;
}

void *ParkStore::take_scratch(int device, size_t bytes)
{
    std::lock_guard<std::mutex> g(mu_);
    for (size_t i = 0; i < scratch_.size(); i++) {
        if (scratch_[i].device != device || scratch_[i].bytes != bytes) continue;
        void *p = scratch_[i].p;
        scratch_.erase(scratch_.begin() + (long)i);
        return p;
    }
    return nullptr;
}

bool ParkStore::take_words(int device, void **error, void **done)
{
    std::lock_guard<std::mutex> g(mu_);
    for (size_t i = 0; i < words_.size(); i++) {
        if (words_[i].device != device) continue;
        *error = words_[i].error;
        *done = words_[i].done;
        words_.erase(words_.begin() + (long)i);
        return true;
    }
    return false;
}

void *ParkStore::take_mapping(int device, const unsigned char handle[64])
{
    std::lock_guard<std::mutex> g(mu_);
    for (size_t i = 0; i < mappings_.size(); i++) {
        if (mappings_[i].device != device || memcmp(mappings_[i].handle, handle, 64) != 0) continue;
        void *p = mappings_[i].ptr;
        mappings_.erase(mappings_.begin() + (long)i);
        return p;
    }
    return nullptr;
}

void ParkStore::free_all()
{
    std::lock_guard<std::mutex> g(mu_);
    // Mappings first: the peers' memory, then ours.
    for (const ParkedMapping &m : mappings_) release_.unmap(m.device, m.ptr, release_.ctx);
    for (const Pool &p : pools_) release_.free_pool(p.pool, release_.ctx);
    for (const Scratch &s : scratch_) release_.free_device(s.device, s.p, release_.ctx);
    for (const Words &w : words_) {
        release_.free_host(w.device, w.error, release_.ctx);
        release_.free_host(w.device, w.done, release_.ctx);
    }
    mappings_.clear();
    pools_.clear();
    scratch_.clear();
    words_.clear();
}

size_t ParkStore::parked() const
{
    std::lock_guard<std::mutex> g(mu_);
    return scratch_.size() + words_.size() + mappings_.size() + pools_.size();
}

} // namespace gpucoll
