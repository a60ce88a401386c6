// Peak memory, clocks, interleaved timing and gradient differences.
#include "measure.h"

#include <gradcache/memory.h>

#include <ATen/ATen.h>

#include <algorithm>
#include <chrono>
#include <cmath>

#include <sys/resource.h>
#include <time.h>

namespace gcbench {

int64_t peak_bytes_of(const std::function<void()>& fn) {
  const c10::Device cpu(c10::kCPU);
  gradcache::reset_peak_memory(cpu);
  const int64_t before = gradcache::memory_stats(cpu).value().current;
  fn();
  return gradcache::memory_stats(cpu).value().peak - before;
}

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double process_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

double Timings::wall_median() const { return median(wall); }
double Timings::cpu_median() const { return median(cpu); }
double Timings::wall_min() const { return wall.empty() ? NAN : *std::min_element(wall.begin(), wall.end()); }
Json Timings::to_json() const {
  return Json{{"wall_median_s", wall_median()},
              {"wall_min_s", wall_min()},
              {"cpu_median_s", cpu_median()},
              {"wall_s", wall},
              {"cpu_s", cpu}};
}

std::vector<Timings> time_interleaved(const std::vector<std::function<void()>>& steps, int64_t warmup, int64_t reps) {
  for (int64_t r = 0; r < warmup; ++r) {
    for (const auto& step : steps) step();
  }
  std::vector<Timings> times(steps.size());
  for (int64_t r = 0; r < reps; ++r) {
    for (size_t i = 0; i < steps.size(); ++i) {
      const double c0 = process_cpu_seconds(), t0 = now_seconds();
      steps[i]();
      times[i].wall.push_back(now_seconds() - t0);
      times[i].cpu.push_back(process_cpu_seconds() - c0);
    }
  }
  return times;
}

std::vector<Timings> time_interleaved(const std::vector<NamedStep>& steps, int64_t warmup, int64_t reps) {
  std::vector<std::function<void()>> runs;
  for (const auto& s : steps) runs.push_back(s.run);
  return time_interleaved(runs, warmup, reps);
}

Json ratios_json(const Timings& step, const Timings& accumulate, const Timings& full) {
  return Json{{"over_accumulate", step.wall_median() / accumulate.wall_median()},
              {"over_full", step.wall_median() / full.wall_median()},
              {"over_accumulate_min", step.wall_min() / accumulate.wall_min()},
              {"over_full_min", step.wall_min() / full.wall_min()},
              {"over_accumulate_cpu", step.cpu_median() / accumulate.cpu_median()},
              {"over_full_cpu", step.cpu_median() / full.cpu_median()}};
}

Json timing_row(const std::string& step, const Timings& times, const Timings& accumulate, const Timings& full) {
  Json row{{"step", step}};
  row.update(times.to_json());
  row.update(ratios_json(times, accumulate, full));
  return row;
}

PeakTimings time_with_peak(const std::function<void()>& step, int64_t reps, const std::function<void()>& before_each) {
  PeakTimings out;
  for (int64_t i = 0; i < reps; ++i) {
    if (before_each) before_each();
    const double w0 = now_seconds(), c0 = process_cpu_seconds();
    out.peak_bytes = std::max(out.peak_bytes, peak_bytes_of(step));
    out.times.wall.push_back(now_seconds() - w0);
    out.times.cpu.push_back(process_cpu_seconds() - c0);
  }
  return out;
}

double median(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::pair<double, double> cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto sec = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) * 1e-6; };
  return {sec(u.ru_utime), sec(u.ru_stime)};
}

double max_relative_error(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b) {
  double diff = 0, scale = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, (a[i] - b[i]).abs().max().item<double>());
    scale = std::max(scale, b[i].abs().max().item<double>());
  }
  return scale > 0 ? diff / scale : diff;
}

int64_t cache_bytes(int64_t queries, int64_t passages, int64_t dim) { return 2 * (queries + passages) * dim * 4; }

}  // namespace gcbench
