// Operating-system pieces the benchmarks use: LibTorch and OpenBLAS threads, child processes,
// resident set size and the machine's load.
#pragma once

#include "retriever/launch/process_memory.h"

#include <cstdint>
#include <string>
#include <vector>

namespace gcbench {

using gradcache::retriever::current_rss_bytes;  // resident memory, as the program reports it
using gradcache::retriever::peak_rss_bytes;

/// LibTorch intra-op threads and OpenBLAS threads (-1 where OpenBLAS is not found).
struct ThreadConfig {
  int64_t intra_op = 0;
  int64_t openblas = 0;
};
ThreadConfig current_threads();
/// Sets them; values <= 0 leave that one as it is.
void set_threads(int64_t intra_op, int64_t openblas);
bool openblas_found();

/// Runs `program args...` with stdout into a pipe; returns what it wrote. Throws if it fails.
std::string run_child(const std::string& program, const std::vector<std::string>& args);
/// /proc/loadavg's 1-minute figure: how busy the (shared) machine was.
double load_average();

}  // namespace gcbench
