/* Layout of the 64-bit UCX tag.
 *
 *   63      54 53            34 33  32        16 15      0
 *   | group id |  source rank   |cls|    seq     |  step   |
 *      10 bit       20 bit      1 b    17 bit      16 bit
 *
 * UCX tag matching does not filter by sender, so the source rank is in the
 * tag. The group id keeps communicators apart; `cls` separates the library's
 * own collectives from user point-to-point traffic; seq numbers collectives
 * so that consecutive or overlapping ones never match each other's messages;
 * step separates the rounds of one collective. seq and step wrap around:
 * UCX matches equal tags from one sender in send order, so a wrapped value
 * only has to be unique among operations in flight at the same time. */
#ifndef GPUCOLL_UCX_TAG_H
#define GPUCOLL_UCX_TAG_H

#include <cstdint>

namespace gpucoll_ucx {

constexpr int kGroupIdBits = 10;
constexpr int kSourceBits = 20;
constexpr int kSeqBits = 17;
constexpr int kStepBits = 16;
constexpr int kMaxGroups = 1 << kGroupIdBits;
constexpr int kMaxRanks = 1 << kSourceBits;

enum class TagClass : uint64_t { User = 0, Collective = 1 };

constexpr uint64_t make_tag(uint32_t group_id, uint32_t source, TagClass cls, uint32_t seq, uint32_t step)
{
    return (uint64_t(group_id) & ((1u << kGroupIdBits) - 1)) << (64 - kGroupIdBits) |
           (uint64_t(source) & ((1u << kSourceBits) - 1)) << (kSeqBits + 1 + kStepBits) |
           uint64_t(cls) << (kSeqBits + kStepBits) |
           (uint64_t(seq) & ((1u << kSeqBits) - 1)) << kStepBits |
           (uint64_t(step) & ((1u << kStepBits) - 1));
}

/* Every bit takes part in matching. */
constexpr uint64_t kTagMaskAll = ~uint64_t(0);

static_assert(kGroupIdBits + kSourceBits + 1 + kSeqBits + kStepBits == 64, "tag fields fill 64 bits");

} // namespace gpucoll_ucx
#endif
