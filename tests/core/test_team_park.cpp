// What ended teams on a shared GPU leave behind, with a fake releaser: the
// next team on the same GPU takes the same scratch, words, stand-in pool and
// mapping back; another GPU, size or handle takes nothing; and at the end
// every parked thing is released once, mappings before memory.
#include <cstdio>
#include <cstring>
#include <string>

#include "team_park.hpp"

#include "../common/check.h"

using gpucoll::ParkedMapping;
using gpucoll::ParkReleaser;
using gpucoll::ParkStore;

namespace {

struct Log {
    std::string calls; // one letter per release, in order: d(evice) h(ost) u(nmap) p(ool)
};

ParkReleaser fake(Log *log)
{
    return ParkReleaser{[](int, void *, void *c) { static_cast<Log *>(c)->calls += 'd'; },
                        [](int, void *, void *c) { static_cast<Log *>(c)->calls += 'h'; },
                        [](int, void *, void *c) { static_cast<Log *>(c)->calls += 'u'; },
                        [](void *, void *c) { static_cast<Log *>(c)->calls += 'p'; }, log};
}

ParkedMapping mapping(int device, unsigned char tag, void *ptr)
{
    ParkedMapping m{device, {}, ptr};
    memset(m.handle, tag, sizeof m.handle);
    return m;
}

} // namespace

int main()
{
    int a, b, c, e1, d1, pool;
    Log log;
    {
        ParkStore s(fake(&log));
        s.park_scratch(0, 1000, &a);
        s.park_scratch(1, 1000, &b);
        CHECK(s.take_scratch(0, 2000) == nullptr, "another size takes nothing");
        CHECK(s.take_scratch(2, 1000) == nullptr, "another GPU takes nothing");
        CHECK(s.take_scratch(1, 1000) == &b);
        CHECK(s.take_scratch(1, 1000) == nullptr, "taken once");
        s.park_words(0, &e1, &d1);
        void *e = nullptr, *d = nullptr;
        CHECK(!s.take_words(1, &e, &d));
        CHECK(s.take_words(0, &e, &d) && e == &e1 && d == &d1);
        s.park_words(0, &e1, &d1);
        s.park_mapping(mapping(0, 7, &c));
        unsigned char h[64];
        memset(h, 8, sizeof h);
        CHECK(s.take_mapping(0, h) == nullptr, "another allocation's handle takes nothing");
        memset(h, 7, sizeof h);
        CHECK(s.take_mapping(1, h) == nullptr, "a mapping on another GPU takes nothing");
        CHECK(s.take_mapping(0, h) == &c);
        s.park_mapping(mapping(0, 7, &c));
        s.park_pool(0, &pool);
        CHECK(s.take_pool(1) == nullptr);
        CHECK(s.take_pool(0) == &pool);
        s.park_pool(0, &pool);
        CHECK(s.parked() == 4, "scratch, words, mapping, pool: %zu", s.parked());
        CHECK(log.calls.empty(), "nothing released while parked: %s", log.calls.c_str());
        s.free_all();
        CHECK(log.calls == "updhh", "mappings, pools, scratch, then the two words: %s", log.calls.c_str());
        CHECK(s.parked() == 0);
        s.park_scratch(0, 1000, &a);
    }
    CHECK(log.calls == "updhhd", "the destructor releases what is left: %s", log.calls.c_str());
    std::printf("test_team_park: %s\n", failures ? "FAILED" : "ok");
    return failures ? 1 : 0;
}
