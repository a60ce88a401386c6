// Scenario `overhead`: the step time of the cache (nothing retained) against gradient
// accumulation and the full batch, the parts of a step (F0, F, B, loss) and the cost model.
#include "cost_parts.h"
#include "instrumented_cache.h"
#include "measure.h"
#include "options.h"
#include "scenarios.h"
#include "steps.h"

#include <algorithm>

namespace gcbench {

void OverheadSettings::add_options(OptionTable& t) {
  BatchSettings::add_options(t);
  Repetitions::add_options(t);
  t.add("--model-limit", &model_limit, "target: measured / predicted cache / accumulate (cost model), nothing retained");
}

namespace {

// The parts of a step without dropout (same weights), timed on their own: on a LibTorch
// without MKL, drawing the dropout masks is a serial loop over the generator, a large share
// of each forward.
Json parts_without_dropout(const OverheadSettings& s, const Batch& b, const Report& report) {
  if (s.model.dropout <= 0) return Json();
  report.progress("timing the parts of a step without dropout");
  ModelSettings no_dropout = s.model;
  no_dropout.dropout = 0;
  Workload w0(no_dropout);  // in training mode
  w0.allocate_grads();
  StepParts parts(w0, b, s.chunk);
  time_interleaved(parts.steps(), s.warmup, std::max<int64_t>(1, s.reps / 2));
  parts.discard_first(s.warmup);
  return parts.to_json();
}

// The rows: each step's time and its ratios to accumulate (index 1) and full (2).
void add_rows(Report& report, const std::vector<NamedStep>& steps, const std::vector<Timings>& times, int64_t batch) {
  for (size_t i = 0; i < steps.size(); ++i) {
    const Json row = timing_row(steps[i].name, times[i], times[1], times[2]);
    auto ratio = [&](const char* key) { return fmt(row[key].get<double>(), 3); };
    const double m = times[i].wall_median();
    report.add_row(row, {steps[i].name, fmt(m * 1e3, 1), fmt(times[i].wall_min() * 1e3, 1),
                         fmt(times[i].cpu_median() * 1e3, 1), fmt(batch / m, 0), ratio("over_accumulate"),
                         ratio("over_full"), ratio("over_accumulate_min"), ratio("over_full_min"),
                         ratio("over_accumulate_cpu")});
  }
}

double ms(const Json& j, const char* key) { return j[key].get<double>() * 1e3; }

// The lines under the table: the parts, the cache's own steps, the cost model.
std::string overhead_notes(const Json& parts, const Json& parts_no_dropout, const Json& steps, const Json& model) {
  std::string text = "parts of a step (CPU time, medians, timed interleaved with the steps; both models, all chunks): "
                     "F0 (no-grad forward) " + fmt(ms(parts, "forward_no_grad_s"), 1) + " ms, F0 in InferenceMode " +
                     fmt(ms(parts, "forward_inference_mode_s"), 1) + " ms, F (forward) " +
                     fmt(ms(parts, "forward_s"), 1) + " ms, B (backward) " + fmt(ms(parts, "backward_s"), 1) +
                     " ms, loss over the batch " + fmt(ms(parts, "loss_full_batch_s"), 1) + " ms\n";
  text += "inside the cache step (CPU time, mean per step): step 1 " + fmt(ms(steps, "step1_forward_no_grad_s"), 1) +
          " ms, step 2 " + fmt(ms(steps, "step2_loss_and_cache_s"), 1) + " ms, step 3 " +
          fmt(ms(steps, "step3_replay_and_backward_s"), 1) + " ms\n";
  if (!parts_no_dropout.is_null()) {
    text += "the same without dropout: F0 " + fmt(ms(parts_no_dropout, "forward_no_grad_s"), 1) + " ms, F " +
            fmt(ms(parts_no_dropout, "forward_s"), 1) + " ms, B " + fmt(ms(parts_no_dropout, "backward_s"), 1) +
            " ms: predicted cache / accumulate " +
            fmt(parts_no_dropout["predicted_cache_over_accumulate"].get<double>(), 3) + "\n";
  }
  auto num = [&](const char* key) { return fmt(model[key].get<double>(), 3); };
  text += "cost model (CPU time): cache / accumulate = (F0 + F + B + loss) / (F + B) = " + num("predicted") +
          " predicted, " + num("measured") + " measured: measured / predicted " + num("measured_over_predicted") +
          " (wall time: " + num("measured_wall") + " / " + num("predicted_wall") + " = " +
          num("measured_over_predicted_wall") + ")\n";
  return text;
}

// Measured against predicted, for a cache step retaining `retained[m]` chunks of model m.
Json against_model(const StepParts& parts, const std::vector<int64_t>& retained, const Timings& cache,
                   const Timings& accumulate) {
  const double measured = cache.cpu_median() / accumulate.cpu_median();
  const double measured_wall = cache.wall_median() / accumulate.wall_median();
  const double predicted = parts.predicted(Clock::cpu, retained);
  const double predicted_wall = parts.predicted(Clock::wall, retained);
  return Json{{"retained_chunks", retained},
              {"retained_share_of_f0", parts.retained_share(retained)},
              {"measured", measured},
              {"predicted", predicted},
              {"measured_over_predicted", measured / predicted},
              {"measured_wall", measured_wall},
              {"predicted_wall", predicted_wall},
              {"measured_over_predicted_wall", measured_wall / predicted_wall}};
}

// What the times conclude, after the rows: the cache's ratios, the extras, the parts, the
// cost model, the cache's own steps and the target. Returns the notes under the table.
std::string add_conclusions(Report& report, const OverheadSettings& s, const StepParts& step_parts,
                            const std::vector<Timings>& times, const RecordingGradCache& cache,
                            const Json& parts_no_dropout) {
  // CPU time of each step of the cache, per call (warm-up included: means, not medians).
  const double calls = static_cast<double>(s.warmup + s.reps);
  const Json cache_steps{{"step1_forward_no_grad_s", cache.step1_cpu_s / calls},
                         {"step2_loss_and_cache_s", cache.step2_cpu_s / calls},
                         {"step3_replay_and_backward_s", cache.step3_cpu_s / calls}};
  const Json ratios = ratios_json(times[0], times[1], times[2]);
  const Json model = against_model(step_parts, {0, 0}, times[0], times[1]);
  Json& j = report.json;
  for (const char* key : {"over_accumulate", "over_full", "over_accumulate_cpu", "over_full_cpu"}) {
    j[std::string("cache_") + key] = ratios[key];
  }
  if (s.extras) {
    j["inference_mode_cache_over_accumulate"] = times[4].wall_median() / times[1].wall_median();
    j["inference_mode_cache_over_accumulate_cpu"] = times[4].cpu_median() / times[1].cpu_median();
    j["cost_model_one_retained"] = against_model(step_parts, {1, 1}, times[3], times[1]);
  }
  j["parts"] = step_parts.to_json();
  j["cost_model"] = model;
  j["cache_steps_cpu"] = cache_steps;
  if (!parts_no_dropout.is_null()) j["parts_without_dropout"] = parts_no_dropout;
  Json t = target("cache_over_accumulate measured / predicted (nothing retained, CPU time)",
                  model["measured_over_predicted"].get<double>(), s.model_limit);
  t["value_wall"] = model["measured_over_predicted_wall"];
  report.add_target(t);
  std::string notes = overhead_notes(j["parts"], parts_no_dropout, cache_steps, model);
  if (s.extras) {
    const Json& one = j["cost_model_one_retained"];
    notes += "1 chunk retained per model: measured / predicted " + fmt(one["measured_over_predicted"].get<double>(), 3) +
             " (" + fmt(one["measured"].get<double>(), 3) + " / " + fmt(one["predicted"].get<double>(), 3) +
             ", CPU time)\n";
  }
  return notes;
}

}  // namespace

ScenarioResult run_overhead(const OverheadSettings& s, const CommonSettings& /*common*/) {
  Report report("overhead", {"step", "wall ms", "min ms", "CPU ms", "pairs/s", "/ accumulate", "/ full",
                             "/ acc. (min)", "/ full (min)", "/ acc. (CPU)"});
  Workload w = prepare_workload(s.model, report);
  const Batch b = w.batch(s.batch, 3);
  const std::vector<gradcache::ModelInput> inputs{b.queries, b.passages};

  RecordingGradCache cache(w.models(), s.chunk, w.loss(), w.cache_options().retain_chunks(0));
  InferenceModeGradCache cache_inference(w.models(), s.chunk, w.loss(), w.cache_options().retain_chunks(0));
  const Step accumulate = make_step(w, {"accumulate", s.chunk}), full = make_step(w, {"full", s.chunk});
  const Step cache_one_retained = make_step(w, {"cache", s.chunk, /*retain_chunks=*/1});
  std::vector<NamedStep> steps{
      {"cache (nothing retained)", [&] { w.zero_grads(); cache(inputs); }},
      {"accumulate", [&] { w.zero_grads(); accumulate(b); }},
      {"full", [&] { w.zero_grads(); full(b); }},
  };
  if (s.extras) {
    steps.push_back({"cache (1 chunk retained)", [&] { w.zero_grads(); cache_one_retained(b); }});
    steps.push_back({"cache, step 1 in InferenceMode", [&] { w.zero_grads(); cache_inference(inputs); }});
  }
  // The parts of a step, timed with the steps (interleaved): the prediction from this run.
  StepParts step_parts(w, b, s.chunk, /*inference_mode=*/true);
  std::vector<NamedStep> timed = steps;
  for (auto& part : step_parts.steps()) timed.push_back(std::move(part));
  const auto times = time_interleaved(timed, s.warmup, s.reps);
  step_parts.discard_first(s.warmup);
  const Json parts_no_dropout = parts_without_dropout(s, b, report);
  w.zero_grads();

  report.json = s.to_json();
  report.json["reps"] = s.reps;
  add_rows(report, steps, times, s.batch);
  const std::string notes = add_conclusions(report, s, step_parts, times, cache, parts_no_dropout);
  return report.finish("overhead: " + std::to_string(s.batch) + " pairs in chunks of " + std::to_string(s.chunk) +
                           ", " + std::to_string(s.reps) +
                           " interleaved repetitions, medians (wall; CPU = the process's CPU time)",
                       notes);
}

}  // namespace gcbench
