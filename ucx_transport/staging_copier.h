/* Copies between user memory and host bounce buffers for the staged path.
 *
 * The staged path needs three things from the memory it stages: host bounce
 * buffers, asynchronous copies whose completion can be polled (so a copy of
 * one chunk overlaps the network transfer of another), and independent
 * "lanes" so that chunks complete separately. GpuStagingCopier does it with
 * pinned host memory, one GPU stream per lane and gpuMemcpyAsync;
 * HostStagingCopier (the stage_host_buffers test hook) with aligned host
 * memory and memcpy, which completes at once. The pipeline logic in
 * transfer.cpp is the same for both, which is what lets CI test it.
 *
 * Bounce buffers are kept in a per-size free list, so steady-state traffic
 * allocates nothing. Not thread-safe: the worker lock guards it. */
#ifndef GPUCOLL_UCX_STAGING_COPIER_H
#define GPUCOLL_UCX_STAGING_COPIER_H

#include <cstddef>
#include <map>
#include <vector>

#include "gpucoll_status.h"

namespace gpucoll_ucx {

class RegistrationCache;

class StagingCopier {
public:
    explicit StagingCopier(RegistrationCache *rcache) : rcache_(rcache) {}
    virtual ~StagingCopier() = default;
    StagingCopier(const StagingCopier &) = delete;
    StagingCopier &operator=(const StagingCopier &) = delete;

    virtual const char *name() const = 0;

    /* A lane completes its copies in order; distinct lanes are independent. */
    virtual gpucoll_status_t acquire_lane(int *lane) = 0;
    virtual void release_lane(int lane) = 0;
    /* Starts copying `bytes` from `src` to `dst` (one of them a bounce buffer). */
    virtual gpucoll_status_t start_copy(int lane, void *dst, const void *src, size_t bytes) = 0;
    /* Nonblocking: *done = true once every copy started on `lane` finished. */
    virtual gpucoll_status_t poll(int lane, bool *done) = 0;
    /* Blocks until `lane` is idle (copies always finish; used when aborting). */
    virtual gpucoll_status_t drain(int lane) = 0;
    /* Copies and waits: local copies inside a collective (e.g. sendbuf to recvbuf). */
    gpucoll_status_t copy_now(void *dst, const void *src, size_t bytes);

    /* A bounce buffer of `bytes` from the free list (allocated on a miss). */
    gpucoll_status_t get_bounce(size_t bytes, void **buf);
    void put_bounce(size_t bytes, void *buf);
    /* Frees every cached bounce buffer (unmapping its registrations first). */
    void free_bounce_buffers();

    /* Scratch memory of the kind this copier stages (device memory for the
     * GPU copier, host memory for the host one), for reductions. */
    virtual gpucoll_status_t alloc_scratch(size_t bytes, void **p) = 0;
    virtual void free_scratch(void *p) = 0;

protected:
    virtual gpucoll_status_t alloc_bounce(size_t bytes, void **p) = 0;
    virtual void free_bounce(void *p) = 0;

private:
    RegistrationCache *rcache_;
    std::map<size_t, std::vector<void *>> free_bounce_; /* by size */
};

/* The stage_host_buffers test hook: memcpy, completes immediately. */
class HostStagingCopier final : public StagingCopier {
public:
    using StagingCopier::StagingCopier;
    ~HostStagingCopier() override { free_bounce_buffers(); }
    const char *name() const override { return "memcpy (host buffers staged for testing)"; }
    gpucoll_status_t acquire_lane(int *lane) override;
    void release_lane(int) override {}
    gpucoll_status_t start_copy(int lane, void *dst, const void *src, size_t bytes) override;
    gpucoll_status_t poll(int, bool *done) override;
    gpucoll_status_t drain(int) override { return GPUCOLL_SUCCESS; }
    gpucoll_status_t alloc_scratch(size_t bytes, void **p) override;
    void free_scratch(void *p) override;

protected:
    gpucoll_status_t alloc_bounce(size_t bytes, void **p) override;
    void free_bounce(void *p) override;
};

/* Device memory: pinned bounce buffers, one stream per lane. Streams are
 * created on first use, so a process that never stages device memory never
 * touches the GPU runtime. */
class GpuStagingCopier final : public StagingCopier {
public:
    using StagingCopier::StagingCopier;
    ~GpuStagingCopier() override;
    const char *name() const override { return "GPU copy engine (pinned bounce buffers)"; }
    gpucoll_status_t acquire_lane(int *lane) override;
    void release_lane(int lane) override;
    gpucoll_status_t start_copy(int lane, void *dst, const void *src, size_t bytes) override;
    gpucoll_status_t poll(int lane, bool *done) override;
    gpucoll_status_t drain(int lane) override;
    gpucoll_status_t alloc_scratch(size_t bytes, void **p) override;
    void free_scratch(void *p) override;

protected:
    gpucoll_status_t alloc_bounce(size_t bytes, void **p) override;
    void free_bounce(void *p) override;

private:
    std::vector<void *> streams_;  /* gpuStream_t, kept opaque to keep gpu_port.h out of this header */
    std::vector<int> free_lanes_;
};

} // namespace gpucoll_ucx
#endif
