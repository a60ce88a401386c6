// Scenario `retain`: the time / memory trade-off of keeping chunks' graphs from step 1
// (GradCacheOptions::retain_chunks, retain_memory), against accumulation and the full batch,
// each cache step judged against the cost model with the parts measured in the same run.
#include "cost_parts.h"
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
  BatchSettings::add_options(t);
  Repetitions::add_options(t);
  t.add("--retain", &retain, "retain_chunks values (default 0, n/4, n/2, 3n/4, n)");
  t.add("--budget-percents", &budget_percents, "retain_memory budgets, in percent of the batch's activations");
  t.add("--budget-goal", &budget_goal, "the budget table names the first budget with cache / accumulate <= this");
  t.add("--model-limit", &model_limit,
        "target: measured / predicted cache / accumulate (cost model), nothing and half the chunks retained");
}

namespace {

// The steps compared: the cache for each retain_chunks value and each memory budget (each a
// RecordingGradCache, to read what it retained), then accumulate and full.
struct RetainSteps {
  std::vector<NamedStep> steps;
  std::vector<std::unique_ptr<RecordingGradCache>> caches;  ///< steps[i] for i < caches.size()
  std::vector<int64_t> retain_of;                            ///< per step; -1: a budget, -2: not a cache
  std::vector<int64_t> budget_of;                            ///< per step: its retain_memory bytes, else 0
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
                 int64_t n, int64_t activations, RetainSteps& out) {
  auto add_cache = [&](const std::string& name, gradcache::GradCacheOptions options, int64_t retain, int64_t budget) {
    out.caches.push_back(std::make_unique<RecordingGradCache>(w.models(), s.chunk, w.loss(), options));
    auto* c = out.caches.back().get();
    out.steps.push_back({name, [&w, &inputs, c] { w.zero_grads(); (*c)(inputs); }});
    out.retain_of.push_back(retain);
    out.budget_of.push_back(budget);
  };
  for (int64_t r : retain_values(s, n)) {
    add_cache("retain " + std::to_string(r) + " of " + std::to_string(n), w.cache_options().retain_chunks(r), r, 0);
  }
  for (int64_t percent : s.budget_percents) {
    const int64_t budget = activations * percent / 100;
    add_cache("retain_memory " + std::to_string(percent) + "% (" + mib(budget) + " MiB)",
              w.cache_options().retain_memory(budget), -1, budget);
  }
  out.accumulate = make_step(w, {"accumulate", s.chunk});
  out.full = make_step(w, {"full", s.chunk});
  out.steps.push_back({"accumulate", [&w, &b, &out] { w.zero_grads(); out.accumulate(b); }});
  out.steps.push_back({"full", [&w, &b, &out] { w.zero_grads(); out.full(b); }});
  for (int i = 0; i < 2; ++i) out.retain_of.push_back(-2), out.budget_of.push_back(0);
}

// One cache step against the cost model: measured and predicted cache / accumulate (CPU time;
// the parts are timed in CPU time) and the same in wall time.
// Also the cache's own steps (CPU time, means over all its calls) against the parts: step 1 =
// F0 of the replayed chunks + F of the retained ones, step 2 = L, step 3 = F of the replayed
// chunks + B: where a gap arises.
void add_model_figures(const StepParts& parts, const std::vector<int64_t>& retained, const Timings& step,
                       const Timings& accumulate, const RecordingGradCache& cache, Json& row) {
  const auto c = parts.costs(Clock::cpu);
  const double share = parts.retained_share(retained), calls = static_cast<double>(std::max<int64_t>(1, cache.steps));
  row["cache_steps_cpu"] = Json{{"step1_s", cache.step1_cpu_s / calls},
                                {"step2_s", cache.step2_cpu_s / calls},
                                {"step3_s", cache.step3_cpu_s / calls},
                                {"predicted_step1_s", (1 - share) * c.forward_no_grad + share * c.forward},
                                {"predicted_step2_s", c.loss},
                                {"predicted_step3_s", (1 - share) * c.forward + c.backward}};
  const double measured = step.cpu_median() / accumulate.cpu_median();
  const double measured_wall = step.wall_median() / accumulate.wall_median();
  row["retained_share_of_f0"] = parts.retained_share(retained);
  row["predicted"] = parts.predicted(Clock::cpu, retained);
  row["measured_over_predicted"] = measured / row["predicted"].get<double>();
  row["predicted_wall"] = parts.predicted(Clock::wall, retained);
  row["measured_over_predicted_wall"] = measured_wall / row["predicted_wall"].get<double>();
}

// The rows of the main table (the retain_chunks steps, accumulate, full) and of the budget
// table, all in the JSON's rows (a budget row has retain_memory_bytes).
void add_rows(Report& report, const RetainSteps& rs, const StepParts& parts, const std::vector<Timings>& times,
              const std::vector<int64_t>& peaks, Table& budgets) {
  const size_t acc_i = rs.steps.size() - 2, full_i = rs.steps.size() - 1;
  for (size_t i = 0; i < rs.steps.size(); ++i) {
    Json row = timing_row(rs.steps[i].name, times[i], times[acc_i], times[full_i]);
    auto ratio = [&](const char* key) { return fmt(row[key].get<double>(), 3); };
    std::string retained = "-", predicted = "-", over = "-";
    row["peak_bytes"] = peaks[i];
    if (i < rs.caches.size()) {
      const auto& cache = *rs.caches[i];
      retained = std::to_string(cache.retained_chunks.at(0)) + "/" + std::to_string(cache.retained_chunks.at(1)) +
                 " of " + std::to_string(cache.total_chunks.at(0));
      row["retain_chunks"] = rs.retain_of[i];
      row["retained_chunks"] = cache.retained_chunks;
      row["retained_bytes"] = cache.retained_bytes;
      add_model_figures(parts, cache.retained_chunks, times[i], times[acc_i], cache, row);
      predicted = fmt(row["predicted"].get<double>(), 3);
      over = fmt(row["measured_over_predicted"].get<double>(), 3);
    }
    if (rs.budget_of[i] > 0) {
      row["retain_memory_bytes"] = rs.budget_of[i];
      budgets.add({rs.steps[i].name, retained, ratio("over_accumulate_cpu"), predicted, over, mib(peaks[i]),
                   mib(peaks[i] - peaks[acc_i])});
      report.add_row(row);
    } else {
      report.add_row(row, {rs.steps[i].name, retained, fmt(times[i].wall_median() * 1e3, 1), ratio("over_accumulate"),
                           ratio("over_full"), ratio("over_accumulate_min"), ratio("over_accumulate_cpu"), predicted,
                           over, mib(peaks[i])});
    }
  }
}

// The targets: measured / predicted with nothing and with half the chunks retained.
void add_targets(Report& report, const RetainSettings& s, int64_t n) {
  for (int64_t r : {int64_t{0}, n / 2}) {
    for (const auto& row : report.rows()) {
      if (!row.contains("retain_chunks") || row["retain_chunks"].get<int64_t>() != r) continue;
      const std::string what = r == 0 ? "nothing retained" : std::to_string(r) + " of " + std::to_string(n) + " retained";
      Json t = target("cache_over_accumulate measured / predicted (" + what + ", CPU time)",
                      row["measured_over_predicted"].get<double>(), s.model_limit);
      t["value_wall"] = row["measured_over_predicted_wall"];
      t["measured"] = row["over_accumulate_cpu"];
      t["predicted"] = row["predicted"];
      report.add_target(t);
    }
  }
}

// The budget table's answer: the smallest budget whose step measured cache / accumulate <=
// the goal (CPU time), and what the cost model says it needs.
Json budget_answer(const RetainSettings& s, const Json& rows, const StepParts& parts, int64_t activations,
                   int64_t accumulate_peak, std::string& text) {
  const double share = gradcache::retained_share_for(parts.costs(Clock::cpu), s.budget_goal);
  Json answer{{"goal", s.budget_goal}, {"predicted_retained_share_of_f0", share}};
  text += "cost model: cache / accumulate <= " + fmt(s.budget_goal, 2) + " needs the retained chunks to make up " +
          (std::isnan(share) ? std::string("more than all") : fmt(100 * share, 0) + "%") + " of F0\n";
  const Json* best = nullptr;
  for (const auto& row : rows) {
    if (!row.contains("retain_memory_bytes") || row["over_accumulate_cpu"].get<double>() > s.budget_goal) continue;
    if (!best || row["retain_memory_bytes"].get<int64_t>() < (*best)["retain_memory_bytes"].get<int64_t>()) best = &row;
  }
  if (!best) {
    text += "no budget measured cache / accumulate <= " + fmt(s.budget_goal, 2) + "\n";
    return answer;
  }
  const int64_t budget = (*best)["retain_memory_bytes"].get<int64_t>(), peak = (*best)["peak_bytes"].get<int64_t>();
  answer["budget_bytes"] = budget;
  answer["budget_fraction_of_activations"] = static_cast<double>(budget) / static_cast<double>(activations);
  answer["over_accumulate_cpu"] = (*best)["over_accumulate_cpu"];
  answer["peak_bytes"] = peak;
  answer["peak_over_accumulate_bytes"] = peak - accumulate_peak;
  text += "first budget with cache / accumulate <= " + fmt(s.budget_goal, 2) + ": " + (*best)["step"].get<std::string>() +
          ", " + fmt((*best)["over_accumulate_cpu"].get<double>(), 3) + " measured; peak " + mib(peak) +
          " MiB, " + mib(peak - accumulate_peak) + " MiB over accumulate's\n";
  return answer;
}

}  // namespace

ScenarioResult run_retain(const RetainSettings& s, const CommonSettings& /*common*/) {
  Report report("retain", {"step", "retained q/p", "wall ms", "/ accumulate", "/ full", "/ acc. (min)",
                           "/ acc. (CPU)", "predicted", "meas./pred.", "peak MiB"});
  Workload w = prepare_workload(s.model, report);
  const Batch b = w.batch(s.batch, 3);
  const std::vector<gradcache::ModelInput> inputs{b.queries, b.passages};
  const int64_t n = (s.batch + s.chunk - 1) / s.chunk;  // chunks per model
  const int64_t activations = activation_bytes(w, s, inputs);
  RetainSteps rs;
  build_steps(w, s, b, inputs, n, activations, rs);

  // Peak memory of each step (this is also the first warm-up round).
  std::vector<int64_t> peaks;
  for (const auto& step : rs.steps) peaks.push_back(peak_bytes_of(step.run));
  StepParts parts(w, b, s.chunk);
  std::vector<NamedStep> timed = rs.steps;
  for (auto& part : parts.steps()) timed.push_back(std::move(part));
  report.progress("timing " + std::to_string(timed.size()) + " configurations and parts, interleaved");
  const auto times = time_interleaved(timed, std::max<int64_t>(1, s.warmup), s.reps);
  parts.discard_first(std::max<int64_t>(1, s.warmup));
  w.zero_grads();

  report.json = s.to_json();
  report.json["chunks_per_model"] = n;
  report.json["activation_bytes"] = activations;
  Table budgets({"budget", "retained q/p", "/ acc. (CPU)", "predicted", "meas./pred.", "peak MiB", "over acc. MiB"});
  add_rows(report, rs, parts, times, peaks, budgets);
  report.json["parts"] = parts.to_json();
  add_targets(report, s, n);
  std::string notes = "memory budgets (retain_memory, % of the activations):\n" + budgets.str();
  report.json["budget_for_goal"] =
      budget_answer(s, report.rows(), parts, activations, peaks[peaks.size() - 2], notes);
  return report.finish("retain: " + std::to_string(s.batch) + " pairs in " + std::to_string(n) + " chunks of " +
                           std::to_string(s.chunk) + " per model; activations of the whole batch " +
                           mib(activations) + " MiB (measured); " + std::to_string(s.reps) +
                           " interleaved repetitions (the parts of a step with them), medians; predicted: the cost "
                           "model from the parts (CPU time)",
                       notes);
}

}  // namespace gcbench
