// Measuring a step: peak tensor memory, wall and CPU time, interleaved repetitions, and how
// far two sets of gradients are apart.
#pragma once

#include "report.h"

#include <torch/types.h>

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace gcbench {

/// Peak tensor bytes (CpuMemoryTracker) of `fn` above what was in use when it started.
int64_t peak_bytes_of(const std::function<void()>& fn);

/// Seconds of each call of a step: wall clock, and CPU time of the whole process (all its
/// threads). On a shared machine other processes stretch the wall time of a step but hardly
/// its CPU time, so the CPU ratios are the steadier ones (with one thread, CPU ~ wall).
struct Timings {
  std::vector<double> wall, cpu;
  double wall_median() const;
  double wall_min() const;  ///< best of the repetitions: the least disturbed one
  double cpu_median() const;
  Json to_json() const;
};

/// A step to time, by name.
struct NamedStep {
  std::string name;
  std::function<void()> run;
};

/// Times each step, the steps interleaved (a, b, c, a, b, c, ...) so that slow drifts of a
/// shared machine hit all of them alike; `warmup` untimed rounds first.
std::vector<Timings> time_interleaved(const std::vector<std::function<void()>>& steps, int64_t warmup, int64_t reps);
std::vector<Timings> time_interleaved(const std::vector<NamedStep>& steps, int64_t warmup, int64_t reps);
/// A step's time over the baselines': over_accumulate, over_full (medians), the same from the
/// best repetitions (_min) and from CPU time (_cpu).
Json ratios_json(const Timings& step, const Timings& accumulate, const Timings& full);
/// A step's row: {"step": name}, its timings (Timings::to_json) and its ratios (ratios_json).
Json timing_row(const std::string& step, const Timings& times, const Timings& accumulate, const Timings& full);

/// Timings of `reps` calls of a step and the largest peak tensor memory of one call.
struct PeakTimings {
  Timings times;
  int64_t peak_bytes = 0;
};
/// Calls `step` `reps` times, each timed and its peak memory measured; `before_each` (if
/// given, untimed) runs before each call, e.g. a barrier that starts all ranks together.
PeakTimings time_with_peak(const std::function<void()>& step, int64_t reps,
                           const std::function<void()>& before_each = nullptr);
double median(std::vector<double> values);
/// CPU seconds (user, system) this process has used so far.
std::pair<double, double> cpu_seconds();
double now_seconds();
double process_cpu_seconds();  ///< CLOCK_PROCESS_CPUTIME_ID

/// max |a - b| / max |b| over all tensors together.
double max_relative_error(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b);

/// Bytes of the cache of a step: representations and their gradients, 2 (N + M) d floats.
int64_t cache_bytes(int64_t queries, int64_t passages, int64_t dim);

}  // namespace gcbench
