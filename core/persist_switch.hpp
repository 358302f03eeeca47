// When a persistent plan switches to zero-copy (core/team_queued.cpp,
// docs/nonblocking.md rule 6): the words every rank keeps in its slot of the
// plan and the decision read from them. Pure logic, unit-tested on the host
// (tests/core/test_persist_switch.cpp).
#pragma once

#include <stdint.h>

namespace gpucoll {
namespace persist {

// A slot's word: (plan number + 1) << 32 | the launch at which the rank had
// mapped every peer's buffers (0: not yet); 0 for a free slot.
constexpr uint64_t kNumberMask = ~0xffffffffull;
constexpr uint64_t tag_of(uint32_t number) { return (uint64_t)(number + 1u) << 32; }
constexpr bool published(uint64_t word, uint64_t tag) { return (word & kNumberMask) == tag; }
// The word a rank writes when it has mapped every peer's buffers at `launch`
// (1-based, below 2^32).
constexpr uint64_t announced_at(uint64_t tag, uint64_t launch) { return tag | launch; }

// Whether every rank has published the plan `tag` names (word_of(r): rank r's word).
template <class WordOf> bool all_published(WordOf word_of, int nranks, uint64_t tag)
{
    for (int r = 0; r < nranks; r++)
        if (!published(word_of(r), tag)) return false;
    return true;
}

// Whether launch n runs zero-copy: every rank announced at a launch before n.
// Alike on every rank at its launch n, since each rank's announcements up to
// launch n-1 are visible by then and later ones say n or more.
template <class WordOf> bool switch_at(WordOf word_of, int nranks, uint64_t tag, uint64_t n)
{
    for (int r = 0; r < nranks; r++) {
        const uint64_t w = word_of(r);
        if (!published(w, tag) || (uint32_t)w == 0 || (uint32_t)w >= n) return false;
    }
    return true;
}

} // namespace persist
} // namespace gpucoll
