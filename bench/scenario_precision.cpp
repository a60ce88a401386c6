// Scenario `precision`: a cache step in fp32 vs bf16 autocast (per model call), timed
// interleaved, with the peak tensor memory of each and how far the bf16 gradients are from
// the fp32 ones. On a CPU without native bf16 instructions (no AVX512-BF16 / AMX), bf16
// GEMMs are emulated and a bf16 step can be slower than fp32: the figures say what this CPU does.
#include "measure.h"
#include "options.h"
#include "scenarios.h"
#include "steps.h"

#include <fstream>

namespace gcbench {

namespace {
// CPU flags that decide whether bf16 math is native here.
std::string bf16_cpu_flags() {
  std::ifstream in("/proc/cpuinfo");
  std::string line, found;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    for (const char* flag : {"avx512_bf16", "amx_bf16", "avx512f"}) {
      if (line.find(std::string(" ") + flag) != std::string::npos) found += std::string(found.empty() ? "" : " ") + flag;
    }
    break;
  }
  return found.empty() ? "none of avx512f, avx512_bf16, amx_bf16" : found;
}
}  // namespace

void PrecisionSettings::add_options(OptionTable& t) {
  BatchSettings::add_options(t);
  Repetitions::add_options(t);
}

ScenarioResult run_precision(const PrecisionSettings& s, const CommonSettings& /*common*/) {
  Report report("precision",
                {"precision", "median ms", "min ms", "CPU ms", "peak MiB", "vs fp32 time", "vs fp32 memory"});
  Workload w = prepare_workload(s.model, report);
  const Batch b = w.batch(s.batch, 5);
  const std::vector<gradcache::Precision> precisions{gradcache::Precision::fp32, gradcache::Precision::bf16};
  std::vector<Step> cache_steps;
  for (auto p : precisions) cache_steps.push_back(make_step(w, {"cache", s.chunk, /*retain_chunks=*/0, p}));
  // Gradients of one step each, from the same generator state (same dropout masks).
  std::vector<std::vector<torch::Tensor>> grads;
  std::vector<int64_t> peaks;
  for (const auto& step : cache_steps) {
    torch::manual_seed(17);
    w.zero_grads();
    peaks.push_back(peak_bytes_of([&] { step(b); }));
    grads.push_back(w.grads());
  }
  const double error = max_relative_error(grads[1], grads[0]);

  std::vector<std::function<void()>> steps;
  for (const auto& step : cache_steps) {
    steps.push_back([&w, &b, &step] {
      w.zero_grads();
      step(b);
    });
  }
  const auto times = time_interleaved(steps, s.warmup, s.reps);

  const std::string flags = bf16_cpu_flags();
  report.json = s.to_json();
  report.json["step"] = "cache (nothing retained), autocast per model call";
  report.json["cpu_bf16_flags"] = flags;
  for (size_t i = 0; i < precisions.size(); ++i) {
    const double m = times[i].wall_median(), lo = times[i].wall_min(), c = times[i].cpu_median();
    report.add_row({{"precision", gradcache::to_string(precisions[i])},
                    {"median_s", m},
                    {"min_s", lo},
                    {"cpu_median_s", c},
                    {"peak_bytes", peaks[i]},
                    {"times", times[i].to_json()}},
                   {gradcache::to_string(precisions[i]), fmt(m * 1e3, 1), fmt(lo * 1e3, 1), fmt(c * 1e3, 1),
                    mib(peaks[i]), fmt(m / times[0].wall_median(), 2),
                    fmt(static_cast<double>(peaks[i]) / peaks[0], 2)});
  }
  report.json["bf16_vs_fp32_max_rel_grad_error"] = error;
  return report.finish("precision: cache step (nothing retained), " + std::to_string(s.batch) + " pairs in chunks of " +
                           std::to_string(s.chunk) + ", " + std::to_string(s.reps) +
                           " interleaved repetitions; CPU flags: " + flags,
                       "bf16 vs fp32 gradients: max relative error " + sci(error) + "\n");
}

}  // namespace gcbench
