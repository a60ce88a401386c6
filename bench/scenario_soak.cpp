// Scenario `soak`: many training steps in one process (the cache step, AdamW, a fresh batch
// each step), the resident set size sampled as it goes. A leak, or an allocator that keeps
// growing, shows as RSS that still climbs after the first steps have warmed everything up.
#include "measure.h"
#include "options.h"
#include "scenarios.h"
#include "steps.h"
#include "system.h"

#include <gradcache/memory.h>

#include <torch/optim/adamw.h>

#include <algorithm>
#include <cmath>

namespace gcbench {

SoakSettings::SoakSettings() : BatchSettings(32, 8) {
  model.dim = 32;
  model.layers = 1;
  model.ffn = 128;
}

void SoakSettings::add_options(OptionTable& t) {
  BatchSettings::add_options(t);
  t.add("--steps", &steps, "training steps");
  t.add("--every", &every, "steps between RSS samples");
  t.add("--warmup-steps", &warmup_steps, "growth is measured from this step to the end");
  t.add("--lr", &lr, "AdamW learning rate");
  t.add("--growth-limit-mib", &limit_mib, "target: RSS growth after warm-up, MiB");
}

namespace {

struct SoakSample {
  int64_t step = 0, rss = 0, tensors = -1;  ///< tensors: CPU tensor bytes in use (-1: not tracked)
  double loss = 0, seconds = 0;
};

SoakSample sample(int64_t step, double loss, double seconds) {
  SoakSample s;
  s.step = step;
  s.rss = current_rss_bytes();
  if (gradcache::CpuMemoryTracker::installed()) s.tensors = gradcache::CpuMemoryTracker::stats().current;
  s.loss = loss;
  s.seconds = seconds;
  return s;
}

// The training loop: RSS after step 0 (nothing run yet) and after every `every` steps.
std::vector<SoakSample> soak(Workload& w, const SoakSettings& s, const Report& report) {
  torch::optim::AdamW optimizer(w.parameters(), torch::optim::AdamWOptions(s.lr));
  const Step step = make_step(w, {"cache", s.chunk});
  const double start = now_seconds();
  std::vector<SoakSample> samples{sample(0, NAN, 0)};  // before the first step: no loss yet
  for (int64_t i = 1; i <= s.steps; ++i) {
    optimizer.zero_grad();
    // A new batch each step: texts of other lengths, as real data has, so that the allocator
    // sees changing shapes rather than the same few blocks again and again.
    const double loss = step(w.batch(s.batch, static_cast<uint64_t>(s.model.seed + i)));
    optimizer.step();
    if (i % s.every == 0 || i == s.steps) {
      samples.push_back(sample(i, loss, now_seconds() - start));
      if (i % (10 * s.every) == 0) report.progress("step " + std::to_string(i) + ", RSS " + mib(samples.back().rss));
    }
  }
  return samples;
}

// The sample the growth is measured from: the first at or after the warm-up (the last one if
// the run is shorter).
const SoakSample& warm_sample(const std::vector<SoakSample>& samples, int64_t warmup_steps) {
  for (const auto& s : samples) {
    if (s.step >= warmup_steps) return s;
  }
  return samples.back();
}

}  // namespace

ScenarioResult run_soak(const SoakSettings& s, const CommonSettings& /*common*/) {
  if (s.steps < 1 || s.every < 1) throw std::invalid_argument("soak: --steps and --every must be >= 1");
  Report report("soak", {"step", "RSS MiB", "tensors MiB", "loss", "s"}, "samples");
  Workload w(s.model);  // in training mode
  report.progress(std::to_string(s.steps) + " steps, " + w.describe());
  const auto samples = soak(w, s, report);
  const SoakSample &warm = warm_sample(samples, s.warmup_steps), &end = samples.back();
  int64_t high = warm.rss;
  for (const auto& x : samples) high = x.step >= warm.step ? std::max(high, x.rss) : high;
  const double growth_mib = to_mib(end.rss - warm.rss);

  report.json = s.to_json();
  report.json["steps"] = s.steps;
  report.json["every"] = s.every;
  for (const auto& x : samples) {
    report.add_row({{"step", x.step}, {"rss_bytes", x.rss}, {"tensor_bytes", x.tensors}, {"loss", x.loss},
                    {"seconds", x.seconds}},
                   {std::to_string(x.step), mib(x.rss), x.tensors < 0 ? "-" : mib(x.tensors), fmt(x.loss, 4),
                    fmt(x.seconds, 1)});
  }
  report.json["warm_step"] = warm.step;
  report.json["rss_at_warm_bytes"] = warm.rss;
  report.json["rss_at_end_bytes"] = end.rss;
  report.json["rss_high_after_warm_bytes"] = high;
  report.json["tensor_bytes_at_warm"] = warm.tensors;
  report.json["tensor_bytes_at_end"] = end.tensors;
  report.json["growth_mib"] = growth_mib;
  report.add_target(target("RSS growth after warm-up (MiB)", growth_mib, s.limit_mib));
  return report.finish("soak: " + std::to_string(s.steps) + " cache steps of " + std::to_string(s.batch) +
                           " pairs (chunks of " + std::to_string(s.chunk) + "), AdamW, a new batch each step; RSS every " +
                           std::to_string(s.every) + " steps",
                       "RSS at step " + std::to_string(warm.step) + ": " + mib(warm.rss) + " MiB, at step " +
                           std::to_string(end.step) + ": " + mib(end.rss) + " MiB (highest in between " + mib(high) +
                           " MiB); growth " + fmt(growth_mib, 2) + " MiB\n");
}

}  // namespace gcbench
