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

namespace {
// Removes the first entry that `match` accepts into *out; false if none.
template <class T, class Match> bool take_first(std::vector<T> &v, Match match, T *out)
{
    for (auto it = v.begin(); it != v.end(); ++it) {
        if (!match(*it)) continue;
        *out = *it;
        v.erase(it);
        return true;
    }
    return false;
}
} // namespace

void *ParkStore::take_pool(int device)
{
    std::lock_guard<std::mutex> g(mu_);
    Pool p{};
    return take_first(pools_, [&](const Pool &x) { return x.device == device; }, &p) ? p.pool : nullptr;
}

void *ParkStore::take_scratch(int device, size_t bytes)
{
    std::lock_guard<std::mutex> g(mu_);
    Scratch s{};
    return take_first(scratch_, [&](const Scratch &x) { return x.device == device && x.bytes == bytes; }, &s) ? s.p
                                                                                                              : nullptr;
}

bool ParkStore::take_words(int device, void **error, void **done)
{
    std::lock_guard<std::mutex> g(mu_);
    Words w{};
    if (!take_first(words_, [&](const Words &x) { return x.device == device; }, &w)) return false;
    *error = w.error;
    *done = w.done;
    return true;
}

void *ParkStore::take_mapping(int device, const unsigned char handle[64])
{
    std::lock_guard<std::mutex> g(mu_);
    ParkedMapping m{};
    auto same = [&](const ParkedMapping &x) { return x.device == device && memcmp(x.handle, handle, 64) == 0; };
    return take_first(mappings_, same, &m) ? m.ptr : nullptr;
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
