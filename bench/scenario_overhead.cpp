// Scenario `overhead`: the step time of the cache (nothing retained) against gradient
// accumulation and the full batch, the parts of a step (F0, F, B, loss) and the cost model.
#include "instrumented_cache.h"
#include "measure.h"
#include "options.h"
#include "scenarios.h"
#include "steps.h"

#include <c10/core/InferenceMode.h>

#include <algorithm>

namespace gcbench {

void OverheadSettings::add_options(OptionTable& t) {
  model.add_options(t);
  t.add("--batch", &batch, "contrastive batch (pairs)");
  t.add("--chunk", &chunk, "chunk size");
  t.add("--reps", &reps, "timed repetitions of each step (interleaved)");
  t.add("--warmup", &warmup, "untimed rounds first");
  t.add("--overhead-limit", &limit, "target: cache / accumulate with nothing retained");
}

namespace {

// Times the parts of a step (process CPU time: steadier than wall time on a shared machine),
// summed over all chunks of both models, each part in its own pass over the chunks as the
// cache runs them: F0 = forward under no-grad (step 1), F0i = the same under InferenceMode,
// F = forward with grad, B = its backward (step 3 without the generator replay), L = the
// loss over the whole batch, forward + backward (step 2). The cost model (algorithm.md §3)
// predicts cache / accumulate = (F0 + F + B + L) / (F + B).
Json time_components(const Workload& w, const Batch& b, int64_t chunk, int64_t reps) {
  double f0 = 0, f0i = 0, f = 0, back = 0, loss_t = 0;
  const std::vector<std::pair<gradcache::Model, std::vector<gradcache::ModelInput>>> calls{
      {w.query_model(), w.split(b.queries, chunk)}, {w.passage_model(), w.split(b.passages, chunk)}};
  for (int64_t r = 0; r < reps; ++r) {
    std::vector<torch::Tensor> reps_nograd;
    double t0 = process_cpu_seconds();
    for (const auto& [model, chunks] : calls) {  // F0
      std::vector<torch::Tensor> parts;
      torch::NoGradGuard no_grad;
      for (const auto& c : chunks) parts.push_back(model(c).toTensor());
      reps_nograd.push_back(torch::cat(parts, 0));
    }
    double t1 = process_cpu_seconds();
    for (const auto& [model, chunks] : calls) {  // F0 in inference mode
      c10::InferenceMode inference;
      for (const auto& c : chunks) model(c);
    }
    double t2 = process_cpu_seconds();
    std::vector<torch::Tensor> leaves;  // L
    for (const auto& x : reps_nograd) leaves.push_back(x.detach().requires_grad_(true));
    w.loss()(leaves).backward();
    double t3 = process_cpu_seconds();
    f0 += t1 - t0;
    f0i += t2 - t1;
    loss_t += t3 - t2;
    for (const auto& [model, chunks] : calls) {  // F and B
      for (const auto& c : chunks) {
        const double u0 = process_cpu_seconds();
        auto rep = model(c).toTensor();
        const double u1 = process_cpu_seconds();
        torch::autograd::backward({rep}, {torch::full_like(rep, 1e-3)});
        f += u1 - u0;
        back += process_cpu_seconds() - u1;
      }
    }
  }
  const double k = static_cast<double>(reps);
  f0 /= k, f0i /= k, f /= k, back /= k, loss_t /= k;
  return Json{{"clock", "process CPU time"},
              {"forward_no_grad_s", f0},
              {"forward_inference_mode_s", f0i},
              {"forward_s", f},
              {"backward_s", back},
              {"loss_full_batch_s", loss_t},
              {"predicted_cache_over_accumulate", (f0 + f + back + loss_t) / (f + back)},
              {"predicted_cache_over_accumulate_inference_mode", (f0i + f + back + loss_t) / (f + back)}};
}

// The parts of a step, and the same without dropout (same weights): on a LibTorch without
// MKL, drawing the dropout masks is a serial loop over the generator, a large share of each
// forward.
std::pair<Json, Json> time_parts(const OverheadSettings& s, const Workload& w, const Batch& b) {
  progress("overhead: timing the parts of a step (F0, F, B, loss)");
  const int64_t reps = std::max<int64_t>(1, s.reps / 2);
  const Json parts = time_components(w, b, s.chunk, reps);
  Json parts_no_dropout;
  if (s.model.dropout > 0) {
    ModelSettings no_dropout = s.model;
    no_dropout.dropout = 0;
    Workload w0(no_dropout);
    w0.train(true);
    w0.allocate_grads();
    parts_no_dropout = time_components(w0, b, s.chunk, reps);
  }
  return {parts, parts_no_dropout};
}

// The table and rows: each step's time and its ratios to accumulate (index 1) and full (2).
Json overhead_rows(const OverheadSettings& s, const std::vector<NamedStep>& steps, const std::vector<Timings>& times,
                   Table& table) {
  const Timings &acc = times[1], &full = times[2];
  Json rows = Json::array();
  for (size_t i = 0; i < steps.size(); ++i) {
    const double m = times[i].wall_median(), lo = times[i].wall_min(), c = times[i].cpu_median();
    Json row{{"step", steps[i].name}};
    row.update(times[i].to_json());
    const Json ratios = ratios_json(times[i], acc, full);
    row.update(ratios);
    rows.push_back(row);
    auto ratio = [&](const char* key) { return fmt(ratios[key].get<double>(), 3); };
    table.add({steps[i].name, fmt(m * 1e3, 1), fmt(lo * 1e3, 1), fmt(c * 1e3, 1), fmt(s.batch / m, 0),
               ratio("over_accumulate"), ratio("over_full"), ratio("over_accumulate_min"), ratio("over_full_min"),
               ratio("over_accumulate_cpu")});
  }
  return rows;
}

double ms(const Json& j, const char* key) { return j[key].get<double>() * 1e3; }

// The lines under the table: the parts, the cache's own steps, the cost model.
std::string overhead_notes(const Json& parts, const Json& parts_no_dropout, const Json& steps, double ratio,
                           double ratio_cpu) {
  std::string text = "parts of a step (CPU time, both models, all chunks): F0 (no-grad forward) " +
                     fmt(ms(parts, "forward_no_grad_s"), 1) + " ms, F0 in InferenceMode " +
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
  text += "cost model: cache / accumulate = (F0 + F + B + loss) / (F + B) = " +
          fmt(parts["predicted_cache_over_accumulate"].get<double>(), 3) + " predicted, " + fmt(ratio, 3) +
          " measured (" + fmt(ratio_cpu, 3) + " in CPU time)\n";
  return text;
}

}  // namespace

ScenarioResult run_overhead(const OverheadSettings& s, const CommonSettings& common) {
  ScenarioResult out;
  Workload w(s.model);
  w.train(true);
  w.allocate_grads();
  progress("overhead: " + w.describe());
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
  const auto times = time_interleaved(steps, s.warmup, s.reps);
  // CPU time of each step of the cache, per call (warm-up included: means, not medians).
  const double calls = static_cast<double>(s.warmup + s.reps);
  const Json cache_steps{{"step1_forward_no_grad_s", cache.step1_cpu_s / calls},
                         {"step2_loss_and_cache_s", cache.step2_cpu_s / calls},
                         {"step3_replay_and_backward_s", cache.step3_cpu_s / calls}};
  Table table({"step", "wall ms", "min ms", "CPU ms", "pairs/s", "/ accumulate", "/ full", "/ acc. (min)",
               "/ full (min)", "/ acc. (CPU)"});
  const Json rows = overhead_rows(s, steps, times, table);
  const auto [parts, parts_no_dropout] = time_parts(s, w, b);
  w.zero_grads();

  const Json ratios = ratios_json(times[0], times[1], times[2]);
  const double cache_over_acc = ratios["over_accumulate"].get<double>();
  const double cache_over_acc_cpu = ratios["over_accumulate_cpu"].get<double>();
  out.json["model"] = s.model.to_json();
  out.json["batch"] = s.batch;
  out.json["chunk"] = s.chunk;
  out.json["reps"] = s.reps;
  out.json["rows"] = rows;
  out.json["cache_over_accumulate"] = cache_over_acc;
  out.json["cache_over_full"] = ratios["over_full"];
  out.json["cache_over_accumulate_cpu"] = cache_over_acc_cpu;
  out.json["cache_over_full_cpu"] = ratios["over_full_cpu"];
  if (s.extras) {
    out.json["inference_mode_cache_over_accumulate"] = times[4].wall_median() / times[1].wall_median();
    out.json["inference_mode_cache_over_accumulate_cpu"] = times[4].cpu_median() / times[1].cpu_median();
  }
  out.json["parts"] = parts;
  out.json["cache_steps_cpu"] = cache_steps;
  if (!parts_no_dropout.is_null()) out.json["parts_without_dropout"] = parts_no_dropout;
  out.json["targets"] = Json::array({target("cache_over_accumulate (nothing retained)", cache_over_acc, s.limit)});
  out.json["targets"][0]["value_cpu"] = cache_over_acc_cpu;
  out.json["targets"][0]["value_min"] = ratios["over_accumulate_min"];
  out.text = "overhead: " + std::to_string(s.batch) + " pairs in chunks of " + std::to_string(s.chunk) + ", " +
             std::to_string(s.reps) + " interleaved repetitions, medians (wall; CPU = the process's CPU time)\n" +
             table.str() + overhead_notes(parts, parts_no_dropout, cache_steps, cache_over_acc, cache_over_acc_cpu);
  out.text += target_line(out.json["targets"][0]) + "  (best of " + std::to_string(s.reps) + ": " +
              fmt(ratios["over_accumulate_min"].get<double>(), 3) + ", CPU time: " + fmt(cache_over_acc_cpu, 3) +
              ")\n";
  (void)common;
  return out;
}

}  // namespace gcbench
