// Scenario `chunk-size`: gradcache::find_chunk_size against the budget it was given.
#include "measure.h"
#include "options.h"
#include "scenarios.h"

#include <algorithm>
#include <map>

namespace gcbench {

void ChunkSizeSettings::add_options(OptionTable& t) {
  model.add_options(t);
  t.add("--sample", &sample, "passages the probe may use (largest chunk size)");
  t.add("--budgets", &budgets_mib, "memory budgets to try, MiB");
}

namespace {

// The longest texts first, as the trainer probes: the probe measures the first rows, and
// with each chunk trimmed to its own longest text the first chunk is then the costliest.
gradcache::ModelInput longest_first(const ModelSettings& model, const gradcache::ModelInput& passages) {
  if (model.kind != "transformer") return passages;
  const auto& kw = passages.kwargs();
  const auto order = kw.at("attention_mask").toTensor().sum(1).argsort(/*dim=*/0, /*descending=*/true);
  std::map<std::string, torch::Tensor> sorted;
  for (const auto& [name, value] : kw) sorted[name] = value.toTensor().index_select(0, order);
  return sorted;
}

// One budget: the probe's choice, then every chunk of the sample at that size, forward and
// backward as step 3 runs it (the probe measured the first chunk; trimmed chunks differ in
// length). Adds its row to the report; returns whether every chunk fit.
bool probe_budget(Workload& w, const ChunkSizeSettings& s, const gradcache::ModelInput& sample, int64_t budget_mib,
                  Report& report) {
  const int64_t budget = budget_mib * 1024 * 1024;
  const auto& model = w.passage_model();
  const double t0 = now_seconds();
  gradcache::ChunkSizeProbe probe;
  try {
    probe = gradcache::find_chunk_size(model, sample, budget, w.cache_options());
  } catch (const c10::Error& e) {
    report.add_row({{"budget_bytes", budget}, {"error", e.what_without_backtrace()}},
                   {std::to_string(budget_mib), "error: " + std::string(e.what_without_backtrace()).substr(0, 60)});
    return true;
  }
  const double probe_s = now_seconds() - t0;
  int64_t worst = 0;
  for (const auto& chunk : w.split(sample, probe.chunk_size)) {
    worst = std::max(worst, peak_bytes_of([&] {
                       auto rep = model(chunk).toTensor();
                       torch::autograd::backward({rep}, {torch::ones_like(rep)});
                     }));
  }
  w.zero_grads();
  const int64_t predicted = probe.fixed_bytes + static_cast<int64_t>(probe.bytes_per_row * probe.chunk_size);
  const bool fits = worst <= budget;
  report.add_row({{"budget_bytes", budget},
                  {"chunk_size", probe.chunk_size},
                  {"capped_by_sample", probe.chunk_size >= s.sample},
                  {"fixed_bytes", probe.fixed_bytes},
                  {"bytes_per_row", probe.bytes_per_row},
                  {"predicted_bytes", predicted},
                  {"probe_measured_peak_bytes", probe.measured_peak},
                  {"max_chunk_peak_bytes", worst},
                  {"fits", fits},
                  {"probe_seconds", probe_s}},
                 {std::to_string(budget_mib),
                  std::to_string(probe.chunk_size) + (probe.chunk_size >= s.sample ? "*" : ""),
                  mib(probe.fixed_bytes), fmt(probe.bytes_per_row / 1024.0, 1), mib(predicted),
                  mib(probe.measured_peak), fmt(to_mib(worst), 2),
                  fits ? "yes" : "NO (+" + fmt(100.0 * (worst - budget) / budget, 1) + "%)", fmt(probe_s, 2)});
  return fits;
}

}  // namespace

ScenarioResult run_chunk_size(const ChunkSizeSettings& s, const CommonSettings& /*common*/) {
  Report report("chunk-size", {"budget MiB", "chunk size", "fixed MiB", "KiB/row", "predicted MiB",
                               "probe peak MiB", "max chunk peak MiB", "fits", "seconds"});
  // Step 3 accumulates into existing gradients (allocated here); so does the check.
  Workload w = prepare_workload(s.model, report);
  const Batch b = w.batch(s.sample, 11);
  const gradcache::ModelInput sample = longest_first(s.model, b.passages);
  report.json["model"] = s.model.to_json();
  report.json["sample"] = s.sample;
  bool all_fit = true;
  for (int64_t budget_mib : s.budgets_mib) all_fit = probe_budget(w, s, sample, budget_mib, report) && all_fit;
  report.json["all_fit"] = all_fit;
  return report.finish("chunk-size: find_chunk_size on the passage encoder (sample of " + std::to_string(s.sample) +
                           " passages); peak = one chunk's forward + backward",
                       "(max chunk peak: every chunk of the sample at that size, checked after the probe; * = "
                       "capped by the sample)\n");
}

}  // namespace gcbench
