// Scenarios `exactness` (cache gradients against full-batch gradients) and `chunk-size`
// (gradcache::find_chunk_size against the budget it was given).
#include "measure.h"
#include "options.h"
#include "scenarios.h"

#include <algorithm>
#include <sstream>

namespace gcbench {

ExactnessSettings::ExactnessSettings() {
  mlp.kind = "mlp";
  mlp.dim = 64;
}

void ExactnessSettings::add_options(OptionTable& t) {
  // Both models read the shared model flags (--dim, --seed, ...); the kinds are fixed.
  transformer.add_options(t, /*with_kind=*/false);
  mlp.add_options(t, /*with_kind=*/false);
  t.add("--batch", &batch, "pairs of the Transformer case (dropout on)");
  t.add("--chunk", &chunk, "chunk size of the Transformer case");
  t.add("--mlp-batch", &mlp_batch, "pairs of the MLP case (eval mode)");
  t.add("--mlp-chunk", &mlp_chunk, "chunk size of the MLP case");
  t.add("--exactness-limit", &limit, "target: max relative gradient error");
}

namespace {

// Representations of every chunk computed WITH grad, model after model and chunk after chunk:
// the order in which the cache's step 1 draws dropout masks, so under the same seed both see
// the same masks. All graphs are kept for one backward through the whole batch's loss.
std::vector<torch::Tensor> chunked_reps_with_grad(const Workload& w, const Batch& b, int64_t chunk) {
  std::vector<torch::Tensor> reps;
  const std::vector<std::pair<gradcache::Model, gradcache::ModelInput>> calls{{w.query_model(), b.queries},
                                                                              {w.passage_model(), b.passages}};
  for (const auto& [model, input] : calls) {
    std::vector<torch::Tensor> parts;
    for (const auto& c : w.split(input, chunk)) parts.push_back(model(c).toTensor());
    reps.push_back(torch::cat(parts, 0));
  }
  return reps;
}

// Full-batch reference gradients: seed, chunked forward with grad, one backward.
std::pair<std::vector<torch::Tensor>, double> reference_grads(Workload& w, const Batch& b, int64_t chunk,
                                                              uint64_t seed) {
  w.zero_grads();
  torch::manual_seed(seed);
  auto loss = w.loss()(chunked_reps_with_grad(w, b, chunk));
  loss.backward();
  return {w.grads(), loss.item<double>()};
}

std::pair<std::vector<torch::Tensor>, double> cache_grads(Workload& w, const Batch& b, int64_t chunk, int64_t retain,
                                                          uint64_t seed) {
  w.zero_grads();
  torch::manual_seed(seed);
  gradcache::GradCache cache(w.models(), chunk, w.loss(), w.cache_options().retain_chunks(retain));
  const double loss = cache({b.queries, b.passages}).item<double>();
  return {w.grads(), loss};
}

}  // namespace

namespace {

// One row of the exactness JSON.
Json exactness_case(const std::string& model, const Json& dropout, const std::string& reference, int64_t rows,
                    int64_t chunk, int64_t retain, double error, double cache_loss, double full_loss) {
  return Json{{"model", model},         {"dropout", dropout},     {"dtype", "float32"},
              {"reference", reference}, {"rows", rows},           {"chunk", chunk},
              {"retain_chunks", retain}, {"max_rel_error", error}, {"loss_cache", cache_loss},
              {"loss_full", full_loss}};
}

// (a) Transformer, dropout on, float32. The reference replays the same masks (see above).
void transformer_cases(const ExactnessSettings& s, uint64_t seed, Table& table, ScenarioResult& out) {
  ModelSettings ms = s.transformer;
  ms.kind = "transformer";
  Workload w(ms);
  w.train(true);
  w.allocate_grads();
  progress("exactness: " + w.describe());
  const Batch b = w.batch(s.batch, 7);
  const auto [full, full_loss] = reference_grads(w, b, s.chunk, seed);
  // Control: the same reference under other dropout masks. A large error here shows that
  // dropout is really on, i.e. that the small errors below depend on the replay.
  const auto other = reference_grads(w, b, s.chunk, seed + 1).first;
  const double control = max_relative_error(other, full);
  const int64_t n = (s.batch + s.chunk - 1) / s.chunk;
  const std::vector<std::pair<std::string, int64_t>> variants{
      {"0 (all replayed)", 0}, {"1 (default)", -1}, {std::to_string(n / 2) + " (half)", n / 2}};
  for (const auto& [label, retain] : variants) {
    const auto [cached, cache_loss] = cache_grads(w, b, s.chunk, retain, seed);
    const double err = max_relative_error(cached, full);
    out.json["cases"].push_back(exactness_case("transformer", ms.dropout,
                                               "same chunks with grad, same seed, one backward", s.batch, s.chunk,
                                               retain, err, cache_loss, full_loss));
    table.add({"transformer, dropout " + fmt(ms.dropout, 2), std::to_string(s.batch), std::to_string(s.chunk), label,
               sci(err), fmt(cache_loss, 6), fmt(full_loss, 6)});
  }
  out.json["control_other_dropout_masks"] = control;
  out.json["transformer_parameters"] = w.parameter_count();
  table.add({"control: other dropout masks", std::to_string(s.batch), std::to_string(s.chunk), "-", sci(control), "-",
             "-"});
}

// (b) Two MLPs in eval mode against one genuine full-batch forward (no chunks at all).
void mlp_cases(const ExactnessSettings& s, uint64_t seed, Table& table, ScenarioResult& out) {
  ModelSettings ms = s.mlp;
  ms.kind = "mlp";
  Workload w(ms);
  w.train(false);
  w.allocate_grads();
  progress("exactness: " + w.describe() + ", eval mode");
  const Batch b = w.batch(s.mlp_batch, 8);
  w.zero_grads();
  auto loss = w.loss()({w.query_model()(b.queries).toTensor(), w.passage_model()(b.passages).toTensor()});
  loss.backward();
  const auto full = w.grads();
  const double full_loss = loss.item<double>();
  for (int64_t retain : {int64_t{0}, int64_t{-1}}) {
    const auto [cached, cache_loss] = cache_grads(w, b, s.mlp_chunk, retain, seed);
    const double err = max_relative_error(cached, full);
    out.json["cases"].push_back(exactness_case("mlp", "off (eval)", "one full-batch forward and backward",
                                               s.mlp_batch, s.mlp_chunk, retain, err, cache_loss, full_loss));
    table.add({"mlp, eval mode", std::to_string(s.mlp_batch), std::to_string(s.mlp_chunk),
               retain == 0 ? "0 (all replayed)" : "1 (default)", sci(err), fmt(cache_loss, 6), fmt(full_loss, 6)});
  }
}

}  // namespace

ScenarioResult run_exactness(const ExactnessSettings& s, const CommonSettings& common) {
  ScenarioResult out;
  out.json["cases"] = Json::array();
  Table table({"case", "rows", "chunk", "retained", "max rel. error", "loss (cache)", "loss (full)"});
  const uint64_t seed = 1234;
  transformer_cases(s, seed, table, out);
  mlp_cases(s, seed, table, out);
  double worst = 0;
  for (const auto& c : out.json["cases"]) worst = std::max(worst, c["max_rel_error"].get<double>());
  out.json["targets"] = Json::array({target("exactness max relative error (all cases)", worst, s.limit)});
  out.text = "exactness: max |g_cache - g_full| / max |g_full| over all parameters, float32\n" + table.str() +
             target_line(out.json["targets"][0]) + "\n";
  (void)common;
  return out;
}

// ---- chunk-size -------------------------------------------------------------------------

void ChunkSizeSettings::add_options(OptionTable& t) {
  model.add_options(t);
  t.add("--sample", &sample, "passages the probe may use (largest chunk size)");
  t.add("--budgets", &budgets_mib, "memory budgets to try, MiB");
}

ScenarioResult run_chunk_size(const ChunkSizeSettings& s, const CommonSettings& common) {
  ScenarioResult out;
  Workload w(s.model);
  w.train(true);
  w.allocate_grads();  // step 3 accumulates into existing gradients; so does the check below
  progress("chunk-size: " + w.describe());
  const Batch b = w.batch(s.sample, 11);
  const auto& model = w.passage_model();
  // The longest texts first, as the trainer probes: the probe measures the first rows, and
  // with each chunk trimmed to its own longest text the first chunk is then the costliest.
  gradcache::ModelInput sample = b.passages;
  if (s.model.kind == "transformer") {
    const auto& kw = b.passages.kwargs();
    const auto order = kw.at("attention_mask").toTensor().sum(1).argsort(/*dim=*/0, /*descending=*/true);
    std::map<std::string, torch::Tensor> sorted;
    for (const auto& [name, value] : kw) sorted[name] = value.toTensor().index_select(0, order);
    sample = sorted;
  }

  Table table({"budget MiB", "chunk size", "fixed MiB", "KiB/row", "predicted MiB", "probe peak MiB",
               "max chunk peak MiB", "fits", "seconds"});
  Json rows = Json::array();
  bool all_fit = true;
  for (int64_t budget_mib : s.budgets_mib) {
    const int64_t budget = budget_mib * 1024 * 1024;
    const double t0 = now_seconds();
    gradcache::ChunkSizeProbe probe;
    try {
      probe = gradcache::find_chunk_size(model, sample, budget, w.cache_options());
    } catch (const c10::Error& e) {
      rows.push_back({{"budget_bytes", budget}, {"error", e.what_without_backtrace()}});
      table.add({std::to_string(budget_mib), "error: " + std::string(e.what_without_backtrace()).substr(0, 60)});
      continue;
    }
    const double probe_s = now_seconds() - t0;
    // Check: every chunk of the sample at that size, forward and backward as step 3 runs it
    // (the probe measured the first chunk; trimmed chunks differ in length).
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
    all_fit = all_fit && fits;
    rows.push_back({{"budget_bytes", budget},
                    {"chunk_size", probe.chunk_size},
                    {"capped_by_sample", probe.chunk_size >= s.sample},
                    {"fixed_bytes", probe.fixed_bytes},
                    {"bytes_per_row", probe.bytes_per_row},
                    {"predicted_bytes", predicted},
                    {"probe_measured_peak_bytes", probe.measured_peak},
                    {"max_chunk_peak_bytes", worst},
                    {"fits", fits},
                    {"probe_seconds", probe_s}});
    table.add({std::to_string(budget_mib), std::to_string(probe.chunk_size) + (probe.chunk_size >= s.sample ? "*" : ""),
               mib(probe.fixed_bytes), fmt(probe.bytes_per_row / 1024.0, 1), mib(predicted), mib(probe.measured_peak),
               fmt(to_mib(worst), 2), fits ? "yes" : "NO (+" + fmt(100.0 * (worst - budget) / budget, 1) + "%)",
               fmt(probe_s, 2)});
  }
  out.json["model"] = s.model.to_json();
  out.json["sample"] = s.sample;
  out.json["rows"] = rows;
  out.json["all_fit"] = all_fit;
  out.text = "chunk-size: find_chunk_size on the passage encoder (sample of " + std::to_string(s.sample) +
             " passages); peak = one chunk's forward + backward\n" + table.str() +
             "(max chunk peak: every chunk of the sample at that size, checked after the probe; * = capped by the "
             "sample)\n";
  return out;
}

}  // namespace gcbench
