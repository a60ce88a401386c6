// Scenario `exactness`: the cache's gradients against full-batch gradients.
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
      {"0 (default: all replayed)", -1}, {"1", 1}, {std::to_string(n / 2) + " (half)", n / 2}};
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
  for (int64_t retain : {int64_t{-1}, int64_t{1}}) {
    const auto [cached, cache_loss] = cache_grads(w, b, s.mlp_chunk, retain, seed);
    const double err = max_relative_error(cached, full);
    out.json["cases"].push_back(exactness_case("mlp", "off (eval)", "one full-batch forward and backward",
                                               s.mlp_batch, s.mlp_chunk, retain, err, cache_loss, full_loss));
    table.add({"mlp, eval mode", std::to_string(s.mlp_batch), std::to_string(s.mlp_chunk),
               retain == 1 ? "1" : "0 (default: all replayed)", sci(err), fmt(cache_loss, 6), fmt(full_loss, 6)});
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

}  // namespace gcbench
