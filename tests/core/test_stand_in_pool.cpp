// The stand-in pool's bookkeeping with a fake allocator: any number of
// blocks at once, reuse, the idle budget, rounding, and the fallback to
// mapped host memory when the device is full.
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "stand_in_pool.hpp"

#include "../common/check.h"

using gpucoll::StandInAllocator;
using gpucoll::StandInPool;

namespace {

struct Fake {
    size_t device_left;   // what the fake GPU still has
    size_t device_held = 0, host_held = 0;
    int device_allocs = 0, host_allocs = 0;
};

// Only the size is stored: the blocks are never written.
void *tagged(size_t bytes)
{
    size_t *head = static_cast<size_t *>(malloc(2 * sizeof(size_t)));
    head[0] = bytes;
    return head + 2;
}

StandInAllocator fake(Fake *f)
{
    StandInAllocator a{};
    a.ctx = f;
    a.device_alloc = [](size_t bytes, void *ctx) -> void * {
        Fake *f = static_cast<Fake *>(ctx);
        if (bytes > f->device_left) return nullptr;
        f->device_left -= bytes;
        f->device_held += bytes;
        f->device_allocs++;
        return tagged(bytes);
    };
    a.mapped_host_alloc = [](size_t bytes, void *ctx) -> void * {
        Fake *f = static_cast<Fake *>(ctx);
        f->host_held += bytes;
        f->host_allocs++;
        return tagged(bytes);
    };
    a.release = [](void *p, bool host, void *ctx) {
        Fake *f = static_cast<Fake *>(ctx);
        size_t *head = static_cast<size_t *>(p) - 2;
        if (host) {
            f->host_held -= head[0];
        } else {
            f->device_held -= head[0];
            f->device_left += head[0];
        }
        free(head);
    };
    return a;
}

} // namespace

int main()
{
    constexpr size_t MiB = 1024 * 1024;
    CHECK(StandInPool::rounded(1) == 4096);
    CHECK(StandInPool::rounded(5000) == 8192);
    CHECK(StandInPool::rounded(600 * MiB + 1) == 601 * MiB, "a 600 MiB call must not take 1 GiB");
    {
        Fake f{SIZE_MAX};
        StandInPool pool(fake(&f), 64 * MiB);
        std::vector<StandInPool::Block *> held;
        for (int i = 0; i < 100; i++) held.push_back(pool.take(1000)); // far more than 16 at once
        for (auto *b : held) CHECK(b && b->busy && !b->host);
        CHECK(pool.blocks() == 100);
        for (auto *b : held) pool.give_back(b);
        CHECK(pool.idle_bytes() == 100 * 4096, "small idle blocks stay under the budget");
        StandInPool::Block *again = pool.take(3000);
        CHECK(again && f.device_allocs == 100, "an idle block is reused");
        pool.give_back(again);
    }
    {
        Fake f{SIZE_MAX};
        StandInPool pool(fake(&f), 64 * MiB);
        StandInPool::Block *big = pool.take(600 * MiB);
        CHECK(big && big->bytes == 600 * MiB);
        pool.give_back(big);
        CHECK(pool.held_bytes() == 0, "a block above the budget is freed when given back");
        StandInPool::Block *small = pool.take(4096);
        StandInPool::Block *mid = pool.take(40 * MiB);
        pool.give_back(small);
        pool.give_back(mid);
        CHECK(pool.idle_bytes() == 40 * MiB + 4096);
        StandInPool::Block *tiny = pool.take(100);
        CHECK(tiny && tiny->bytes == 4096, "the smallest fitting block, not the 40 MiB one");
        pool.give_back(tiny);
    }
    {
        Fake f{10 * MiB}; // a nearly full GPU
        StandInPool pool(fake(&f), 64 * MiB);
        StandInPool::Block *a = pool.take(8 * MiB);
        pool.give_back(a); // idle, under the budget: kept
        StandInPool::Block *b = pool.take(9 * MiB); // fits only once the idle block is freed
        CHECK(b && !b->host && f.host_allocs == 0, "idle blocks are freed before falling back");
        StandInPool::Block *c = pool.take(4 * MiB); // the GPU is full now
        CHECK(c && c->host, "a full GPU falls back to mapped host memory");
        pool.give_back(c);
        CHECK(pool.blocks() == 1, "host stand-ins are never kept");
        pool.give_back(b);
        pool.release_all();
        CHECK(f.device_held == 0 && f.host_held == 0, "release_all frees everything");
    }
    printf("test_stand_in_pool: %s\n", failures ? "FAILED" : "ok");
    return failures ? 1 : 0;
}
