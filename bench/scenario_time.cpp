// Scenarios that time training steps: `overhead` (cache vs accumulate vs full), `retain`
// (the time / memory trade-off of keeping chunks' graphs from step 1) and `threads`.
#include "bench.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace gcbench {

namespace {

// One timed configuration: a name and a step that starts from zeroed gradients.
struct Config {
  std::string name;
  std::function<void()> step;
};

std::vector<std::function<void()>> steps_of(const std::vector<Config>& configs) {
  std::vector<std::function<void()>> steps;
  for (const auto& c : configs) steps.push_back(c.step);
  return steps;
}

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

}  // namespace

// ---- overhead ---------------------------------------------------------------------------

void OverheadSettings::add_options(OptionTable& t) {
  model.add_options(t);
  t.add_int("--batch", &batch, "contrastive batch (pairs)");
  t.add_int("--chunk", &chunk, "chunk size");
  t.add_int("--reps", &reps, "timed repetitions of each step (interleaved)");
  t.add_int("--warmup", &warmup, "untimed rounds first");
  t.add_double("--overhead-limit", &limit, "target: cache / accumulate with nothing retained");
}

ScenarioResult run_overhead(const OverheadSettings& s, const CommonSettings& common) {
  ScenarioResult out;
  Workload w(s.model);
  w.train(true);
  w.allocate_grads();
  progress("overhead: " + w.describe());
  const Batch b = w.batch(s.batch, 3);
  const std::vector<gradcache::ModelInput> inputs{b.queries, b.passages};

  RecordingGradCache cache(w.models(), s.chunk, w.loss(), w.cache_options().retain_chunks(0));
  gradcache::GradCache cache_default(w.models(), s.chunk, w.loss(), w.cache_options());
  InferenceModeGradCache cache_inference(w.models(), s.chunk, w.loss(), w.cache_options().retain_chunks(0));
  std::vector<Config> configs{
      {"cache (nothing retained)", [&] { w.zero_grads(); cache(inputs); }},
      {"accumulate", [&] { w.zero_grads(); w.step_accumulate(b, s.chunk); }},
      {"full", [&] { w.zero_grads(); w.step_full(b); }},
  };
  if (s.extras) {
    configs.push_back({"cache (default: 1 retained)", [&] { w.zero_grads(); cache_default(inputs); }});
    configs.push_back({"cache, step 1 in InferenceMode", [&] { w.zero_grads(); cache_inference(inputs); }});
  }
  const auto times = time_interleaved(steps_of(configs), s.warmup, s.reps);
  // CPU time of each step of the cache, per call (warm-up included: means, not medians).
  const double calls = static_cast<double>(s.warmup + s.reps);
  const Json steps{{"step1_forward_no_grad_s", cache.step1_cpu_s / calls},
                   {"step2_loss_and_cache_s", cache.step2_cpu_s / calls},
                   {"step3_replay_and_backward_s", cache.step3_cpu_s / calls}};
  const double acc = times[1].wall_median(), full = times[2].wall_median();
  const double acc_cpu = times[1].cpu_median(), full_cpu = times[2].cpu_median();
  const double acc_min = times[1].wall_min(), full_min = times[2].wall_min();

  Table table({"step", "wall ms", "min ms", "CPU ms", "pairs/s", "/ accumulate", "/ full", "/ acc. (min)",
               "/ full (min)", "/ acc. (CPU)"});
  Json rows = Json::array();
  for (size_t i = 0; i < configs.size(); ++i) {
    const double m = times[i].wall_median(), lo = times[i].wall_min(), c = times[i].cpu_median();
    Json row{{"step", configs[i].name}};
    row.update(times[i].to_json());
    row.update({{"over_accumulate", m / acc},
                {"over_full", m / full},
                {"over_accumulate_min", lo / acc_min},
                {"over_full_min", lo / full_min},
                {"over_accumulate_cpu", c / acc_cpu},
                {"over_full_cpu", c / full_cpu}});
    rows.push_back(row);
    table.add({configs[i].name, fmt(m * 1e3, 1), fmt(lo * 1e3, 1), fmt(c * 1e3, 1), fmt(s.batch / m, 0),
               fmt(m / acc, 3), fmt(m / full, 3), fmt(lo / acc_min, 3), fmt(lo / full_min, 3), fmt(c / acc_cpu, 3)});
  }
  progress("overhead: timing the parts of a step (F0, F, B, loss)");
  const Json parts = time_components(w, b, s.chunk, std::max<int64_t>(1, s.reps / 2));
  w.zero_grads();
  // The same parts without dropout (same weights): on a LibTorch without MKL, drawing the
  // dropout masks is a serial loop over the generator, a large share of each forward.
  Json parts_no_dropout;
  if (s.model.dropout > 0) {
    ModelSettings no_dropout = s.model;
    no_dropout.dropout = 0;
    Workload w0(no_dropout);
    w0.train(true);
    w0.allocate_grads();
    parts_no_dropout = time_components(w0, b, s.chunk, std::max<int64_t>(1, s.reps / 2));
  }

  const double cache_over_acc = times[0].wall_median() / acc;
  const double cache_over_acc_cpu = times[0].cpu_median() / acc_cpu;
  out.json["model"] = s.model.to_json();
  out.json["batch"] = s.batch;
  out.json["chunk"] = s.chunk;
  out.json["reps"] = s.reps;
  out.json["rows"] = rows;
  out.json["cache_over_accumulate"] = cache_over_acc;
  out.json["cache_over_full"] = times[0].wall_median() / full;
  out.json["cache_over_accumulate_cpu"] = cache_over_acc_cpu;
  out.json["cache_over_full_cpu"] = times[0].cpu_median() / full_cpu;
  if (s.extras) {
    out.json["inference_mode_cache_over_accumulate"] = times[4].wall_median() / acc;
    out.json["inference_mode_cache_over_accumulate_cpu"] = times[4].cpu_median() / acc_cpu;
  }
  out.json["parts"] = parts;
  out.json["cache_steps_cpu"] = steps;
  if (!parts_no_dropout.is_null()) out.json["parts_without_dropout"] = parts_no_dropout;
  out.json["targets"] = Json::array({target("cache_over_accumulate (nothing retained)", cache_over_acc, s.limit)});
  out.json["targets"][0]["value_cpu"] = cache_over_acc_cpu;
  out.json["targets"][0]["value_min"] = times[0].wall_min() / acc_min;

  out.text = "overhead: " + std::to_string(s.batch) + " pairs in chunks of " + std::to_string(s.chunk) + ", " +
             std::to_string(s.reps) + " interleaved repetitions, medians (wall; CPU = the process's CPU time)\n" +
             table.str();
  out.text += "parts of a step (CPU time, both models, all chunks): F0 (no-grad forward) " +
              fmt(parts["forward_no_grad_s"].get<double>() * 1e3, 1) + " ms, F0 in InferenceMode " +
              fmt(parts["forward_inference_mode_s"].get<double>() * 1e3, 1) + " ms, F (forward) " +
              fmt(parts["forward_s"].get<double>() * 1e3, 1) + " ms, B (backward) " +
              fmt(parts["backward_s"].get<double>() * 1e3, 1) + " ms, loss over the batch " +
              fmt(parts["loss_full_batch_s"].get<double>() * 1e3, 1) + " ms\n";
  out.text += "inside the cache step (CPU time, mean per step): step 1 " +
              fmt(steps["step1_forward_no_grad_s"].get<double>() * 1e3, 1) + " ms, step 2 " +
              fmt(steps["step2_loss_and_cache_s"].get<double>() * 1e3, 1) + " ms, step 3 " +
              fmt(steps["step3_replay_and_backward_s"].get<double>() * 1e3, 1) + " ms\n";
  if (!parts_no_dropout.is_null()) {
    out.text += "the same without dropout: F0 " + fmt(parts_no_dropout["forward_no_grad_s"].get<double>() * 1e3, 1) +
                " ms, F " + fmt(parts_no_dropout["forward_s"].get<double>() * 1e3, 1) + " ms, B " +
                fmt(parts_no_dropout["backward_s"].get<double>() * 1e3, 1) + " ms: predicted cache / accumulate " +
                fmt(parts_no_dropout["predicted_cache_over_accumulate"].get<double>(), 3) + "\n";
  }
  out.text += "cost model: cache / accumulate = (F0 + F + B + loss) / (F + B) = " +
              fmt(parts["predicted_cache_over_accumulate"].get<double>(), 3) + " predicted, " + fmt(cache_over_acc, 3) +
              " measured (" + fmt(cache_over_acc_cpu, 3) + " in CPU time)\n";
  out.text += target_line(out.json["targets"][0]) + "  (best of " + std::to_string(s.reps) + ": " +
              fmt(times[0].wall_min() / acc_min, 3) + ", CPU time: " + fmt(cache_over_acc_cpu, 3) + ")\n";
  return out;
}

// ---- retain -----------------------------------------------------------------------------

void RetainSettings::add_options(OptionTable& t) {
  model.add_options(t);
  t.add_int("--batch", &batch, "contrastive batch (pairs)");
  t.add_int("--chunk", &chunk, "chunk size");
  t.add_ints("--retain", &retain, "retain_chunks values (default 0, n/4, n/2, 3n/4, n)");
  t.add_int("--reps", &reps, "timed repetitions of each step (interleaved)");
  t.add_int("--warmup", &warmup, "untimed rounds first");
  t.add_double("--budget-fraction", &budget_fraction, "memory_budget as a fraction of the batch's activations");
  t.add_double("--retain-limit", &limit, "target: cache / accumulate with half the chunks retained");
}

ScenarioResult run_retain(const RetainSettings& s, const CommonSettings& common) {
  ScenarioResult out;
  Workload w(s.model);
  w.train(true);
  w.allocate_grads();
  progress("retain: " + w.describe());
  const Batch b = w.batch(s.batch, 3);
  const std::vector<gradcache::ModelInput> inputs{b.queries, b.passages};
  const int64_t n = (s.batch + s.chunk - 1) / s.chunk;  // chunks per model
  std::vector<int64_t> rs = s.retain;
  if (rs.empty() && n <= 8) {
    for (int64_t r = 0; r <= n; ++r) rs.push_back(r);
  } else if (rs.empty()) {
    rs = {0, n / 4, n / 2, 3 * n / 4, n};
  }
  rs.erase(std::unique(rs.begin(), rs.end()), rs.end());

  // The activations of the whole batch: a budget that fits everything retains every chunk,
  // and the cache measures what each kept graph holds.
  RecordingGradCache everything(w.models(), s.chunk, w.loss(), w.cache_options().memory_budget(int64_t{1} << 50));
  w.zero_grads();
  everything(inputs);
  int64_t activations = 0;
  for (auto bytes : everything.retained_bytes) activations += bytes;
  const auto budget = static_cast<int64_t>(s.budget_fraction * static_cast<double>(activations));

  std::vector<std::unique_ptr<RecordingGradCache>> caches;
  std::vector<Config> configs;
  std::vector<int64_t> retain_of;  // -2: not a cache
  for (int64_t r : rs) {
    caches.push_back(std::make_unique<RecordingGradCache>(w.models(), s.chunk, w.loss(),
                                                          w.cache_options().retain_chunks(r)));
    auto* c = caches.back().get();
    configs.push_back({"retain " + std::to_string(r) + " of " + std::to_string(n), [&, c] { w.zero_grads(); (*c)(inputs); }});
    retain_of.push_back(r);
  }
  caches.push_back(std::make_unique<RecordingGradCache>(w.models(), s.chunk, w.loss(),
                                                        w.cache_options().memory_budget(budget)));
  auto* budget_cache = caches.back().get();
  configs.push_back({"memory_budget " + mib(budget) + " MiB", [&] { w.zero_grads(); (*budget_cache)(inputs); }});
  retain_of.push_back(-1);
  configs.push_back({"accumulate", [&] { w.zero_grads(); w.step_accumulate(b, s.chunk); }});
  configs.push_back({"full", [&] { w.zero_grads(); w.step_full(b); }});
  retain_of.push_back(-2);
  retain_of.push_back(-2);

  // Peak memory of each configuration (this is also the first warm-up round).
  std::vector<int64_t> peaks;
  for (const auto& c : configs) peaks.push_back(peak_bytes_of(c.step));
  progress("retain: timing " + std::to_string(configs.size()) + " configurations");
  const auto times = time_interleaved(steps_of(configs), std::max<int64_t>(0, s.warmup - 1), s.reps);
  const size_t acc_i = configs.size() - 2, full_i = configs.size() - 1;
  const double acc = times[acc_i].wall_median(), full = times[full_i].wall_median();
  const double acc_cpu = times[acc_i].cpu_median(), full_cpu = times[full_i].cpu_median();
  const double acc_min = times[acc_i].wall_min(), full_min = times[full_i].wall_min();

  Table table({"step", "retained q/p", "wall ms", "min ms", "/ accumulate", "/ full", "/ acc. (min)", "/ full (min)",
               "/ acc. (CPU)", "peak MiB"});
  Json rows = Json::array();
  double half_ratio = NAN, half_ratio_cpu = NAN, half_ratio_min = NAN, all_over_full = NAN, all_over_full_min = NAN;
  for (size_t i = 0; i < configs.size(); ++i) {
    const double m = times[i].wall_median(), lo = times[i].wall_min(), c = times[i].cpu_median();
    std::string retained = "-";
    Json row{{"step", configs[i].name}};
    row.update(times[i].to_json());
    row.update({{"over_accumulate", m / acc},
                {"over_full", m / full},
                {"over_accumulate_min", lo / acc_min},
                {"over_full_min", lo / full_min},
                {"over_accumulate_cpu", c / acc_cpu},
                {"over_full_cpu", c / full_cpu},
                {"peak_bytes", peaks[i]}});
    if (i < caches.size()) {
      const auto& cache = *caches[i];
      retained = std::to_string(cache.retained_chunks.at(0)) + "/" + std::to_string(cache.retained_chunks.at(1)) + " of " +
                 std::to_string(cache.total_chunks.at(0));
      row["retain_chunks"] = retain_of[i];
      row["retained_chunks"] = cache.retained_chunks;
      row["retained_bytes"] = cache.retained_bytes;
      if (retain_of[i] == n / 2) {
        half_ratio = m / acc;
        half_ratio_cpu = c / acc_cpu;
        half_ratio_min = lo / acc_min;
      }
      if (retain_of[i] == n) {
        all_over_full = m / full;
        all_over_full_min = lo / full_min;
      }
    }
    if (retain_of[i] == -1) row["memory_budget_bytes"] = budget;
    rows.push_back(row);
    table.add({configs[i].name, retained, fmt(m * 1e3, 1), fmt(lo * 1e3, 1), fmt(m / acc, 3), fmt(m / full, 3),
               fmt(lo / acc_min, 3), fmt(lo / full_min, 3), fmt(c / acc_cpu, 3), mib(peaks[i])});
  }
  out.json["model"] = s.model.to_json();
  out.json["batch"] = s.batch;
  out.json["chunk"] = s.chunk;
  out.json["chunks_per_model"] = n;
  out.json["activation_bytes"] = activations;
  out.json["rows"] = rows;
  out.json["all_retained_over_full"] = all_over_full;
  out.json["all_retained_over_full_min"] = all_over_full_min;
  Json targets = Json::array();
  if (!std::isnan(half_ratio)) {
    out.json["half_retained_over_accumulate"] = half_ratio;
    out.json["half_retained_over_accumulate_cpu"] = half_ratio_cpu;
    targets.push_back(target("cache_over_accumulate with half the chunks retained", half_ratio, s.limit));
    targets.back()["value_cpu"] = half_ratio_cpu;
    targets.back()["value_min"] = half_ratio_min;
  }
  out.json["targets"] = targets;
  out.text = "retain: " + std::to_string(s.batch) + " pairs in " + std::to_string(n) + " chunks of " +
             std::to_string(s.chunk) + " per model; activations of the whole batch " + mib(activations) +
             " MiB (measured); " + std::to_string(s.reps) + " interleaved repetitions, medians\n" + table.str();
  if (!std::isnan(all_over_full)) {
    out.text += "all chunks retained / full: " + fmt(all_over_full, 3) + " (best of " + std::to_string(s.reps) +
                ": " + fmt(all_over_full_min, 3) + ")\n";
  }
  for (const auto& t : targets) {
    out.text += target_line(t) + "  (best of " + std::to_string(s.reps) + ": " + fmt(t["value_min"].get<double>(), 3) +
                ", CPU time: " + fmt(t["value_cpu"].get<double>(), 3) + ")\n";
  }
  return out;
}

// ---- threads ----------------------------------------------------------------------------

void ThreadsSettings::add_options(OptionTable& t) {
  model.add_options(t);
  t.add_int("--batch", &batch, "contrastive batch (pairs)");
  t.add_int("--chunk", &chunk, "chunk size");
  t.add_int("--reps", &reps, "timed repetitions of each setting");
  t.add_double("--max-seconds", &max_seconds, "per setting: fewer repetitions when slower");
}

ScenarioResult run_threads(const ThreadsSettings& s, const CommonSettings& common) {
  ScenarioResult out;
  Workload w(s.model);
  w.train(true);
  w.allocate_grads();
  progress("threads: " + w.describe());
  const Batch b = w.batch(s.batch, 3);
  gradcache::GradCache cache(w.models(), s.chunk, w.loss(), w.cache_options().retain_chunks(0));
  const bool blas = openblas_found();

  Table table({"intra-op", "OpenBLAS", "median ms", "CPU user s", "CPU sys s", "CPU / wall"});
  Json rows = Json::array();
  std::string best;
  double best_t = 1e300;
  for (auto [intra, openblas] : std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {1, 2}, {2, 1}, {2, 2}}) {
    if (!blas && openblas != 1) continue;  // cannot set it
    set_threads(intra, openblas);
    const auto used = current_threads();
    auto step = [&] {
      w.zero_grads();
      cache({b.queries, b.passages});
    };
    const double w0 = now_seconds();
    step();  // warm-up: thread pools start
    // A setting that is much slower (oversubscribed cores) gets fewer repetitions.
    const double warm = now_seconds() - w0;
    const int64_t reps = std::clamp<int64_t>(static_cast<int64_t>(s.max_seconds / std::max(warm, 1e-3)), 1, s.reps);
    std::vector<double> wall, user, sys;
    for (int64_t r = 0; r < reps; ++r) {
      const auto c0 = cpu_seconds();
      const double t0 = now_seconds();
      step();
      wall.push_back(now_seconds() - t0);
      const auto c1 = cpu_seconds();
      user.push_back(c1.first - c0.first);
      sys.push_back(c1.second - c0.second);
    }
    const double m = median(wall), u = median(user), y = median(sys);
    const std::string name = std::to_string(used.intra_op) + "," + std::to_string(used.openblas);
    rows.push_back({{"intra_op", used.intra_op},
                    {"openblas", used.openblas},
                    {"median_s", m},
                    {"cpu_user_s", u},
                    {"cpu_sys_s", y},
                    {"reps", reps},
                    {"times_s", wall}});
    table.add({std::to_string(used.intra_op), std::to_string(used.openblas), fmt(m * 1e3, 1), fmt(u, 2), fmt(y, 2),
               fmt((u + y) / m, 2)});
    if (m < best_t) {
      best_t = m;
      best = name;
    }
  }
  set_threads(common.threads, common.blas_threads);  // back to the program's setting
  out.json["model"] = s.model.to_json();
  out.json["batch"] = s.batch;
  out.json["chunk"] = s.chunk;
  out.json["step"] = "cache (nothing retained)";
  out.json["rows"] = rows;
  out.json["fastest"] = best;
  out.text = "threads: cache step (nothing retained), " + std::to_string(s.batch) + " pairs in chunks of " +
             std::to_string(s.chunk) + ", medians of up to " + std::to_string(s.reps) + "\n" + table.str() +
             "fastest (intra-op, OpenBLAS): " + best + "\n";
  return out;
}

}  // namespace gcbench
