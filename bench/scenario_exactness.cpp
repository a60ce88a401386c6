// Scenario `exactness`: the cache's gradients against full-batch gradients.
#include "measure.h"
#include "options.h"
#include "scenarios.h"

#include <algorithm>

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

// What the cases of one model have in common: the models, the reference, the size.
struct CaseSetup {
  std::string model, label;  ///< the JSON's name of the model, the table's
  Json dropout;
  std::string reference;
  int64_t rows = 0, chunk = 0;
  double full_loss = 0;
};

// One case, the cache with `retain` chunks retained: its row of the JSON and of the table.
void add_case(Report& report, const CaseSetup& c, const std::string& retained, int64_t retain, double error,
              double cache_loss) {
  report.add_row({{"model", c.model},         {"dropout", c.dropout},   {"dtype", "float32"},
                  {"reference", c.reference}, {"rows", c.rows},         {"chunk", c.chunk},
                  {"retain_chunks", retain},  {"max_rel_error", error}, {"loss_cache", cache_loss},
                  {"loss_full", c.full_loss}},
                 {c.label, std::to_string(c.rows), std::to_string(c.chunk), retained, sci(error),
                  fmt(cache_loss, 6), fmt(c.full_loss, 6)});
}

// (a) Transformer, dropout on, float32. The reference replays the same masks (see above).
void transformer_cases(const ExactnessSettings& s, uint64_t seed, Report& report) {
  Workload w = prepare_workload(s.transformer, report);
  const Batch b = w.batch(s.batch, 7);
  const auto [full, full_loss] = reference_grads(w, b, s.chunk, seed);
  // Control: the same reference under other dropout masks. A large error here shows that
  // dropout is really on, i.e. that the small errors below depend on the replay.
  const auto other = reference_grads(w, b, s.chunk, seed + 1).first;
  const double control = max_relative_error(other, full);
  const int64_t n = (s.batch + s.chunk - 1) / s.chunk;
  const std::vector<std::pair<std::string, int64_t>> variants{
      {"0 (default: all replayed)", -1}, {"1", 1}, {std::to_string(n / 2) + " (half)", n / 2}};
  const CaseSetup setup{"transformer", "transformer, dropout " + fmt(s.transformer.dropout, 2), s.transformer.dropout,
                        "same chunks with grad, same seed, one backward", s.batch, s.chunk, full_loss};
  for (const auto& [label, retain] : variants) {
    const auto [cached, cache_loss] = cache_grads(w, b, s.chunk, retain, seed);
    add_case(report, setup, label, retain, max_relative_error(cached, full), cache_loss);
  }
  report.json["control_other_dropout_masks"] = control;
  report.json["transformer_parameters"] = w.parameter_count();
  report.table.add({"control: other dropout masks", std::to_string(s.batch), std::to_string(s.chunk), "-",
                    sci(control), "-", "-"});
}

// (b) Two MLPs in eval mode against one genuine full-batch forward (no chunks at all).
void mlp_cases(const ExactnessSettings& s, uint64_t seed, Report& report) {
  Workload w(s.mlp);
  w.train(false);
  w.allocate_grads();
  report.progress(w.describe() + ", eval mode");
  const Batch b = w.batch(s.mlp_batch, 8);
  w.zero_grads();
  auto loss = w.loss()({w.query_model()(b.queries).toTensor(), w.passage_model()(b.passages).toTensor()});
  loss.backward();
  const auto full = w.grads();
  const CaseSetup setup{"mlp",       "mlp, eval mode", "off (eval)", "one full-batch forward and backward",
                        s.mlp_batch, s.mlp_chunk,      loss.item<double>()};
  for (int64_t retain : {int64_t{-1}, int64_t{1}}) {
    const auto [cached, cache_loss] = cache_grads(w, b, s.mlp_chunk, retain, seed);
    add_case(report, setup, retain == 1 ? "1" : "0 (default: all replayed)", retain, max_relative_error(cached, full),
             cache_loss);
  }
}

}  // namespace

ScenarioResult run_exactness(const ExactnessSettings& s, const CommonSettings& /*common*/) {
  Report report("exactness", {"case", "rows", "chunk", "retained", "max rel. error", "loss (cache)", "loss (full)"},
                "cases");
  const uint64_t seed = 1234;
  transformer_cases(s, seed, report);
  mlp_cases(s, seed, report);
  double worst = 0;
  for (const auto& c : report.rows()) worst = std::max(worst, c["max_rel_error"].get<double>());
  report.add_target(target("exactness max relative error (all cases)", worst, s.limit));
  return report.finish("exactness: max |g_cache - g_full| / max |g_full| over all parameters, float32");
}

}  // namespace gcbench
