// The words by which the host hands a call to a resident kernel
// (kernels/resident_call.h), without a GPU: what the kernel rebuilds equals
// the host's call; fields that do not fit are refused (the host launches
// instead); a word left from an earlier call never completes a later one;
// and only calls that differ from the launch's in what the words carry may
// be sent as words.
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "../common/check.h"
#include "gpu_port.h"
#include "resident_call.h"

using namespace gpucoll;

namespace {

PeerArgs sample_call()
{
    PeerArgs k{};
    k.algo = PeerAlgo::AllreduceLL;
    k.rank = 1;
    k.nranks = 4;
    k.root = 3;
    k.src = reinterpret_cast<const char *>((uintptr_t)0x7f12345678f0ull);
    k.dst = reinterpret_cast<char *>((uintptr_t)0x7f1234567900ull);
    k.count = 255;
    k.chunk = 255;
    k.epoch0 = 0xabcdef123ull;
    k.vector_ok = 1;
    k.resident.seq = 70000;
    k.resident.gen = 9;
    return k;
}

// The kernel's test (resident_verdict, as poll_call in kernels/resident.cuh
// applies it): whether it takes the words as call `seq`.
bool kernel_takes(const uint64_t w[kResidentCallWords], uint32_t gen, uint64_t seq)
{
    return resident_verdict(w, gen, seq) == kResidentTake;
}

void check_round_trip()
{
    const PeerArgs k = sample_call();
    uint64_t w[kResidentCallWords];
    CHECK(encode_resident_call(k, 9, k.resident.seq, w));
    CHECK(kernel_takes(w, 9, 70000) && !kernel_takes(w, 8, 70000) && !kernel_takes(w, 9, 70001));
    // another generation's words tell the kernel to leave, whatever their tags; its own, to wait
    CHECK(resident_verdict(w, 8, 70000) == kResidentLeave && resident_verdict(w, 8, 70001) == kResidentLeave);
    CHECK(resident_verdict(w, 9, 70001) == kResidentWait);
    PeerArgs got{};
    got.algo = PeerAlgo::Bcast;
    apply_resident_call(w, 70000, &got);
    CHECK(got.algo == k.algo && got.root == 3 && got.vector_ok == 1 && got.src == k.src && got.dst == k.dst);
    CHECK(got.count == 255 && got.chunk == 255 && got.epoch0 == k.epoch0 && got.resident.seq == 70000);
    // every algorithm and root a call can have
    for (int a = 0; a <= (int)PeerAlgo::ReduceStores; a++)
        for (int root : {0, 7}) {
            PeerArgs x = k;
            x.algo = (PeerAlgo)a;
            x.root = root;
            x.vector_ok = a & 1;
            CHECK(encode_resident_call(x, 1, 5, w));
            apply_resident_call(w, 5, &got);
            CHECK(got.algo == x.algo && got.root == root && got.vector_ok == (a & 1));
        }
}

void check_limits()
{
    uint64_t w[kResidentCallWords];
    PeerArgs k = sample_call();
    k.epoch0 = kResidentPayloadLimit - 1;
    CHECK(encode_resident_call(k, 1, 1, w));
    k.epoch0 = kResidentPayloadLimit;
    CHECK(!encode_resident_call(k, 1, 1, w));
    k = sample_call();
    k.dst = reinterpret_cast<char *>((uintptr_t)kResidentPayloadLimit);
    CHECK(!encode_resident_call(k, 1, 1, w));
    k = sample_call();
    k.count = ~(size_t)0;
    CHECK(!encode_resident_call(k, 1, 1, w));
    k = sample_call();
    k.root = 256;
    CHECK(!encode_resident_call(k, 1, 1, w));
    // the generation keeps all 32 bits
    k = sample_call();
    CHECK(encode_resident_call(k, 0xfffffffeu, 3, w) && resident_gen(w[0]) == 0xfffffffeu);
}

// The host writes call n + 1 word by word while the kernel reads: whatever
// mix of call n's (or the launch's) words and call n + 1's it sees, it
// takes the call only when every word is call n + 1's. Also after 65536
// calls, when the tags repeat.
void check_mixed_words()
{
    for (uint64_t n : {(uint64_t)1, (uint64_t)65535, (uint64_t)65536, (uint64_t)200000}) {
        PeerArgs a = sample_call(), b = sample_call();
        b.count = 17;
        uint64_t old_w[kResidentCallWords], new_w[kResidentCallWords], seen[kResidentCallWords];
        CHECK(encode_resident_call(a, 4, n, old_w) && encode_resident_call(b, 4, n + 1, new_w));
        for (unsigned mask = 0; mask < (1u << kResidentCallWords); mask++) {
            for (int i = 0; i < kResidentCallWords; i++) seen[i] = (mask >> i) & 1 ? new_w[i] : old_w[i];
            CHECK(kernel_takes(seen, 4, n + 1) == (mask == (1u << kResidentCallWords) - 1));
        }
    }
}

void check_same_base()
{
    const PeerArgs base = sample_call();
    PeerArgs next = base;
    next.src += 64;
    next.dst += 128;
    next.count = 3;
    next.chunk = 3;
    next.epoch0++;
    next.algo = PeerAlgo::ReduceLL;
    next.root = 0;
    next.vector_ok = 0;
    next.resident.seq++;
    next.resident.gen++;
    CHECK(same_resident_base(base, next)); // only what the words carry differs
    PeerArgs other = next;
    other.scratch[2] = reinterpret_cast<char *>(0x1000);
    CHECK(!same_resident_base(base, other));
    other = next;
    other.timeout_ns = 5;
    CHECK(!same_resident_base(base, other));
    other = next;
    other.resident.timed = 1;
    CHECK(!same_resident_base(base, other));
    other = next;
    other.done_word = reinterpret_cast<uint64_t *>(0x2000);
    CHECK(!same_resident_base(base, other));
}

} // namespace

int main()
{
    check_round_trip();
    check_limits();
    check_mixed_words();
    check_same_base();
    if (!failures) std::printf("core_resident_call: all checks passed\n");
    return failures ? 1 : 0;
}
