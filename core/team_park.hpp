// What teams whose ranks share one GPU leave behind when they end.
//
// Under MPS, a cudaFree or an unmapping while a team ends was seen to hang
// for good (lifetime_check, 2 ranks on one H200, docs/testing.md session 18):
// a peer's kernel waited for this rank's next launch, which came only after
// the free. So such a team frees nothing on the GPU when it ends: its
// scratch and page-locked words wait here for the next team of the process
// on that GPU (all teams take the same sizes), its mappings of the peers'
// scratch stay open for the next team that maps the same allocation, and
// its stand-in pool serves the next team, and
// the process frees all of it when it leaves (MPI_Finalize, where no peer
// launches any more). Memory held: what the teams alive at once had.
//
// The bookkeeping takes its releasing functions as a parameter, so that it
// is tested without a GPU. Thread-safe.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <mutex>
#include <vector>

namespace gpucoll {

struct ParkReleaser {
    void (*free_device)(int device, void *p, void *ctx);
    void (*free_host)(int device, void *p, void *ctx);
    void (*unmap)(int device, void *p, void *ctx);
    void (*free_pool)(void *pool, void *ctx); // a team's stand-in pool (StandInPool)
    void *ctx;
};

// A peer's scratch mapped here, named by the bytes of its IPC handle.
struct ParkedMapping {
    int device;
    unsigned char handle[64];
    void *ptr;
};

class ParkStore {
public:
    explicit ParkStore(ParkReleaser r) : release_(r) {}
    ~ParkStore() { free_all(); }
    void park_scratch(int device, size_t bytes, void *p);
    void park_words(int device, void *error, void *done);
    void park_mapping(const ParkedMapping &m);
    void park_pool(int device, void *pool);
    // nullptr where nothing of the kind waits for `device` (and `bytes`).
    void *take_scratch(int device, size_t bytes);
    bool take_words(int device, void **error, void **done);
    void *take_mapping(int device, const unsigned char handle[64]);
    void *take_pool(int device);
    void free_all();
    size_t parked() const; // entries of every kind
private:
    struct Scratch { int device; size_t bytes; void *p; };
    struct Words { int device; void *error, *done; };
    struct Pool { int device; void *pool; };
    ParkReleaser release_;
    mutable std::mutex mu_;
    std::vector<Scratch> scratch_;
    std::vector<Words> words_;
    std::vector<ParkedMapping> mappings_;
    std::vector<Pool> pools_;
};

} // namespace gpucoll
