// Output of gpucoll-bench (rank 0 only): the table on stdout, optional CSV
// and JSON files with the same rows.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "collectives.hpp"

struct Row {
    Case c;
    std::string path;       // mpi, staged, nccl, nccl-nosync, nccl-enqueue, nccl-graph
    Mode mode = Mode::Blocking;   // nccl, nccl-nosync: blocking; nccl-enqueue/-graph: enqueue/graph
    int iters = 0;          // calls timed (graph: launches x calls per graph)
    double avg_us = 0, min_us = 0, max_us = 0;   // per-call latency across ranks
    double algbw = 0, busbw = 0;                  // GB/s (1e9 bytes)
    std::string valid;      // ok, FAIL, off (not checked), - (nothing to check)
    size_t errors = 0;      // wrong elements, summed over ranks
    double vs_nccl = 0, vs_staged = 0;            // latency ratios (mpi row), 0 = none
    double overlap_pct = -1;                      // nonblocking with --overlap; <0 = none
    double bound_us = 0, vs_bound = 0;            // HBM bound and bound/avg; 0 = none
};

// Which optional columns the text table shows (the files always have them).
struct Columns {
    bool overlap = false;
    bool bound = false;
};

class Report {
public:
    // `meta` are "key", "value" pairs for the header and the JSON file.
    Report(const std::string &csv, const std::string &json,
           const std::vector<std::pair<std::string, std::string>> &meta, bool host, Columns cols);
    ~Report();
    void group(const Case &c);            // table header for a new series
    void add(const Row &r);

private:
    FILE *csv_ = nullptr, *json_ = nullptr;
    bool first_json_ = true;
    bool host_;
    Columns cols_;
};
