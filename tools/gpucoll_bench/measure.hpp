// gpucoll-bench's measurements: one size of one case on every path and mode,
// each row validated against the host reference, timed and (nonblocking, with
// --overlap) its overlap measured.
#pragma once

#include <string>
#include <vector>

#include "bench_call.hpp"
#include "report.hpp"

// Everything for one case at one size: inputs, reference, then each path in
// each mode. Returns the rows (complete on rank 0); adds the wrong elements
// of every rank to *total_errors. Collective over MPI_COMM_WORLD.
std::vector<Row> measure_size(const Context &x, const std::vector<Path> &paths, const Case &c,
                              const std::string &label, double start, unsigned long long *total_errors);

// Rank 0, stderr: a line rewritten in place on a terminal; in a log, one line
// per size once the sweep has run for a while (short sweeps stay quiet).
void progress(const Options &o, int rank, const std::string &what, double elapsed, bool first_path, bool last);
