// Scenario `retain`: the time / memory trade-off of keeping chunks' graphs from step 1
// (GradCacheOptions::retain_chunks, retain_memory), against accumulation and the full batch.
#include "instrumented_cache.h"
#include "measure.h"
#include "options.h"
#include "scenarios.h"
#include "steps.h"

#include <algorithm>
#include <cmath>
#include <memory>

namespace gcbench {

void RetainSettings::add_options(OptionTable& t) {
  model.add_options(t);
  t.add("--batch", &batch, "contrastive batch (pairs)");
  t.add("--chunk", &chunk, "chunk size");
  t.add("--retain", &retain, "retain_chunks values (default 0, n/4, n/2, 3n/4, n)");
  t.add("--reps", &reps, "timed repetitions of each step (interleaved)");
  t.add("--warmup", &warmup, "untimed rounds first");
  t.add("--budget-fraction", &budget_fraction, "retain_memory as a fraction of the batch's activations");
  t.add("--retain-limit", &limit, "target: cache / accumulate with half the chunks retained");
}

namespace {

// The steps compared: the cache for each retain_chunks value and for a memory budget (each a
// RecordingGradCache, to read what it retained), then accumulate and full.
struct RetainSteps {
  std::vector<NamedStep> steps;
  std::vector<std::unique_ptr<RecordingGradCache>> caches;  ///< steps[i] for i < caches.size()
  std::vector<int64_t> retain_of;                            ///< per step; -1: the budget, -2: not a cache
  Step accumulate, full;
};

// retain_chunks values: as given, or 0..n for n <= 8 chunks per model, else 0, n/4, n/2, 3n/4, n.
std::vector<int64_t> retain_values(const RetainSettings& s, int64_t n) {
  std::vector<int64_t> rs = s.retain;
  if (rs.empty() && n <= 8) {
    for (int64_t r = 0; r <= n; ++r) rs.push_back(r);
  } else if (rs.empty()) {
    rs = {0, n / 4, n / 2, 3 * n / 4, n};
  }
  rs.erase(std::unique(rs.begin(), rs.end()), rs.end());
  return rs;
}

// The activations of the whole batch: a budget that fits everything retains every chunk, and
// the cache measures what each kept graph holds.
int64_t activation_bytes(Workload& w, const RetainSettings& s, const std::vector<gradcache::ModelInput>& inputs) {
  RecordingGradCache everything(w.models(), s.chunk, w.loss(), w.cache_options().retain_memory(int64_t{1} << 50));
  w.zero_grads();
  everything(inputs);
  int64_t activations = 0;
  for (auto bytes : everything.retained_bytes) activations += bytes;
  return activations;
}

void build_steps(Workload& w, const RetainSettings& s, const Batch& b, const std::vector<gradcache::ModelInput>& inputs,
                 int64_t n, int64_t budget, RetainSteps& out) {
  auto add_cache = [&](const std::string& name, gradcache::GradCacheOptions options, int64_t retain) {
    out.caches.push_back(std::make_unique<RecordingGradCache>(w.models(), s.chunk, w.loss(), options));
    auto* c = out.caches.back().get();
    out.steps.push_back({name, [&w, &inputs, c] { w.zero_grads(); (*c)(inputs); }});
    out.retain_of.push_back(retain);
  };
  for (int64_t r : retain_values(s, n)) {
    add_cache("retain " + std::to_string(r) + " of " + std::to_string(n), w.cache_options().retain_chunks(r), r);
  }
  add_cache("retain_memory " + mib(budget) + " MiB", w.cache_options().retain_memory(budget), -1);
  out.accumulate = make_step(w, {"accumulate", s.chunk});
  out.full = make_step(w, {"full", s.chunk});
  out.steps.push_back({"accumulate", [&w, &b, &out] { w.zero_grads(); out.accumulate(b); }});
  out.steps.push_back({"full", [&w, &b, &out] { w.zero_grads(); out.full(b); }});
  out.retain_of.push_back(-2);
  out.retain_of.push_back(-2);
}

// Figures the summary reads off the rows.
struct RetainSummary {
  double half_ratio = NAN, half_ratio_cpu = NAN, half_ratio_min = NAN;  ///< half the chunks retained / accumulate
  double all_over_full = NAN, all_over_full_min = NAN;                  ///< all retained / full
};

Json retain_rows(const RetainSteps& rs, const std::vector<Timings>& times, const std::vector<int64_t>& peaks,
                 int64_t n, int64_t budget, Table& table, RetainSummary& summary) {
  const size_t acc_i = rs.steps.size() - 2, full_i = rs.steps.size() - 1;
  Json rows = Json::array();
  for (size_t i = 0; i < rs.steps.size(); ++i) {
    const Json ratios = ratios_json(times[i], times[acc_i], times[full_i]);
    auto ratio = [&](const char* key) { return ratios[key].get<double>(); };
    std::string retained = "-";
    Json row{{"step", rs.steps[i].name}};
    row.update(times[i].to_json());
    row.update(ratios);
    row["peak_bytes"] = peaks[i];
    if (i < rs.caches.size()) {
      const auto& cache = *rs.caches[i];
      retained = std::to_string(cache.retained_chunks.at(0)) + "/" + std::to_string(cache.retained_chunks.at(1)) +
                 " of " + std::to_string(cache.total_chunks.at(0));
      row["retain_chunks"] = rs.retain_of[i];
      row["retained_chunks"] = cache.retained_chunks;
      row["retained_bytes"] = cache.retained_bytes;
      if (rs.retain_of[i] == n / 2) {
        summary.half_ratio = ratio("over_accumulate");
        summary.half_ratio_cpu = ratio("over_accumulate_cpu");
        summary.half_ratio_min = ratio("over_accumulate_min");
      }
      if (rs.retain_of[i] == n) {
        summary.all_over_full = ratio("over_full");
        summary.all_over_full_min = ratio("over_full_min");
      }
    }
    if (rs.retain_of[i] == -1) row["retain_memory_bytes"] = budget;
    rows.push_back(row);
    table.add({rs.steps[i].name, retained, fmt(times[i].wall_median() * 1e3, 1), fmt(times[i].wall_min() * 1e3, 1),
               fmt(ratio("over_accumulate"), 3), fmt(ratio("over_full"), 3), fmt(ratio("over_accumulate_min"), 3),
               fmt(ratio("over_full_min"), 3), fmt(ratio("over_accumulate_cpu"), 3), mib(peaks[i])});
  }
  return rows;
}

}  // namespace

ScenarioResult run_retain(const RetainSettings& s, const CommonSettings& common) {
  ScenarioResult out;
  Workload w(s.model);
  w.train(true);
  w.allocate_grads();
  progress("retain: " + w.describe());
  const Batch b = w.batch(s.batch, 3);
  const std::vector<gradcache::ModelInput> inputs{b.queries, b.passages};
  const int64_t n = (s.batch + s.chunk - 1) / s.chunk;  // chunks per model
  const int64_t activations = activation_bytes(w, s, inputs);
  const auto budget = static_cast<int64_t>(s.budget_fraction * static_cast<double>(activations));
  RetainSteps rs;
  build_steps(w, s, b, inputs, n, budget, rs);

  // Peak memory of each step (this is also the first warm-up round).
  std::vector<int64_t> peaks;
  for (const auto& step : rs.steps) peaks.push_back(peak_bytes_of(step.run));
  progress("retain: timing " + std::to_string(rs.steps.size()) + " configurations");
  const auto times = time_interleaved(rs.steps, std::max<int64_t>(0, s.warmup - 1), s.reps);
  Table table({"step", "retained q/p", "wall ms", "min ms", "/ accumulate", "/ full", "/ acc. (min)", "/ full (min)",
               "/ acc. (CPU)", "peak MiB"});
  RetainSummary sum;
  const Json rows = retain_rows(rs, times, peaks, n, budget, table, sum);

  out.json["model"] = s.model.to_json();
  out.json["batch"] = s.batch;
  out.json["chunk"] = s.chunk;
  out.json["chunks_per_model"] = n;
  out.json["activation_bytes"] = activations;
  out.json["rows"] = rows;
  out.json["all_retained_over_full"] = sum.all_over_full;
  out.json["all_retained_over_full_min"] = sum.all_over_full_min;
  Json targets = Json::array();
  if (!std::isnan(sum.half_ratio)) {
    out.json["half_retained_over_accumulate"] = sum.half_ratio;
    out.json["half_retained_over_accumulate_cpu"] = sum.half_ratio_cpu;
    targets.push_back(target("cache_over_accumulate with half the chunks retained", sum.half_ratio, s.limit));
    targets.back()["value_cpu"] = sum.half_ratio_cpu;
    targets.back()["value_min"] = sum.half_ratio_min;
  }
  out.json["targets"] = targets;
  const std::string best_of = "(best of " + std::to_string(s.reps) + ": ";
  out.text = "retain: " + std::to_string(s.batch) + " pairs in " + std::to_string(n) + " chunks of " +
             std::to_string(s.chunk) + " per model; activations of the whole batch " + mib(activations) +
             " MiB (measured); " + std::to_string(s.reps) + " interleaved repetitions, medians\n" + table.str();
  if (!std::isnan(sum.all_over_full)) {
    out.text += "all chunks retained / full: " + fmt(sum.all_over_full, 3) + " " + best_of +
                fmt(sum.all_over_full_min, 3) + ")\n";
  }
  for (const auto& t : targets) {
    out.text += target_line(t) + "  " + best_of + fmt(t["value_min"].get<double>(), 3) +
                ", CPU time: " + fmt(t["value_cpu"].get<double>(), 3) + ")\n";
  }
  (void)common;
  return out;
}

}  // namespace gcbench
