// Command line of gpucoll-bench (flags follow nccl-tests where they overlap).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "collectives.hpp"

struct Options {
    size_t min_bytes = 8;
    size_t max_bytes = size_t(1) << 30;
    double factor = 2.0;
    std::vector<Coll> colls{Coll::Allreduce};
    std::vector<DType> dtypes{DType::F32};
    std::vector<Op> ops{Op::Sum};
    std::vector<bool> places{false};     // false = out of place, true = in place
    std::vector<Mode> modes{Mode::Blocking};   // of the mpi and staged paths
    int graph_calls = 10;                // graph mode: calls captured in one graph
    bool overlap = false;                // OSU overlap of the nonblocking calls
    int root = 0;
    int iters = 50;
    int warmup = 5;
    double time_limit = 1.0;             // seconds per size and path
    bool run_mpi = true, run_staged = true, run_nccl = true, nccl_nosync = false;
    bool check = true;
    bool host = false;
    bool register_windows = false;       // --register: the buffers as coll/gpu windows (coll_gpu_register)
    std::string csv_file, json_file;
    int corrupt_rank = -1;               // test hook: damage one result here
};

// Parses argv; on error or --help prints to stderr/stdout (rank 0 only when
// `quiet` is false) and returns false with *exit_code set.
bool parse_options(int argc, char **argv, Options *o, bool quiet, int *exit_code);
std::string format_size(size_t bytes);  // "64 KiB" style
