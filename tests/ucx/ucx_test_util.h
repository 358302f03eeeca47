/* Shared helpers of the UCX transport tests.
 *
 * MPI only launches the ranks and carries the out-of-band allgather (and the
 * barriers that keep test phases apart); every byte under test travels over
 * the transport. Options common to all test programs:
 *   --device          buffers in GPU memory (exit 77 without a GPU)
 *   --stage-host      set stage_host_buffers: host buffers take the staged
 *                     bounce-buffer pipeline, copied with memcpy
 *   --chunk N         chunk_bytes          --depth N       pipeline_depth
 *   --rcache N        rcache_max_entries   --timeout-ms N  timeout_ms
 *   --device-path auto|direct|staged       device_path
 *   --quick           skip the largest sizes */
#ifndef GPUCOLL_UCX_TEST_UTIL_H
#define GPUCOLL_UCX_TEST_UTIL_H

#include <mpi.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "gpucoll_ucx.h"

namespace ucx_test {

constexpr int kSkip = 77;

struct Options {
    bool device = false;
    bool stage_host = false;
    bool quick = false;
    size_t chunk = 0;
    int depth = 0;
    size_t rcache = 0;
    int timeout_ms = 0;
    gpucoll_ucx_device_path_t device_path = GPUCOLL_UCX_DEVICE_PATH_AUTO;
};

/* Parses the common options; exits with a usage message on unknown ones. */
Options parse_options(int argc, char **argv);

/* MPI_Init, and for --device: 77 on every rank when some rank has no GPU
 * (call finish_skip()). Returns true when the test should run. */
bool init(int *argc, char ***argv, const Options &opt);
int finish_skip();

int rank();
int size();

/* The config the options describe, with a given fallback timeout. */
gpucoll_ucx_config_t make_config(const Options &opt, int default_timeout_ms = 30000);
/* gpucoll_oob_t over MPI_COMM_WORLD. */
gpucoll_oob_t world_oob();
/* Creates a group over MPI_COMM_WORLD; aborts the job on failure. */
gpucoll_ucx_group_t *make_group(const gpucoll_ucx_config_t &cfg);

/* ---- checks ---- */
/* Records a failure (printed with the rank) and returns `ok`. */
bool check(bool ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
bool check_status(gpucoll_status_t st, const char *what);
/* Sums the failures over all ranks; rank 0 prints a verdict. Returns the
 * exit code (0 or 1) and calls MPI_Finalize. */
int finish(const char *test_name);
int local_failures();

/* ---- memory: host or device, decided by --device ---- */
class Buffer {
public:
    Buffer(size_t bytes, bool device);
    ~Buffer();
    Buffer(const Buffer &) = delete;
    Buffer &operator=(const Buffer &) = delete;
    void *data() { return ptr_; }
    size_t bytes() const { return bytes_; }
    void upload(const void *host, size_t bytes, size_t offset = 0);
    void download(void *host, size_t bytes, size_t offset = 0) const;
    std::vector<uint8_t> to_host() const;
    void fill_byte(uint8_t value);

private:
    void *ptr_ = nullptr;
    size_t bytes_ = 0;
    bool device_ = false;
};

/* A reducer for device buffers that needs no GPU kernels: copies both
 * operands to the host, reduces there, copies back. Counts its calls. */
gpucoll_ucx_reducer_t copying_reducer(bool device, uint64_t *calls);

/* ---- data ---- */
/* Element `index` of rank `r`'s input for (dtype, op): values chosen so that
 * every reduction order gives bit-identical results (small integers for
 * float SUM/PROD, no zeros for MAX/MIN, odd factors for integer PROD). */
void fill_input(std::vector<uint8_t> &out, gpucoll_dtype_t dtype, gpucoll_op_t op, int r, size_t count,
                uint32_t salt);
/* Reference: inputs of ranks 0..n-1 reduced in rank order on the host. */
std::vector<uint8_t> reference_reduction(gpucoll_dtype_t dtype, gpucoll_op_t op, int n, size_t count, uint32_t salt);
/* Index of the first differing element, or -1. */
long first_difference(const std::vector<uint8_t> &a, const std::vector<uint8_t> &b, size_t esize);

double now_seconds();

} // namespace ucx_test
#endif
