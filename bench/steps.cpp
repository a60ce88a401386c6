// The baselines, written out here until the shared step layer (retriever/training_step.h,
// retriever::make_training_step) is implemented; then make_step only builds its options.
#include "steps.h"

#include <memory>
#include <stdexcept>

namespace gcbench {

namespace {

// Plain training: the whole batch forward, the loss, one backward.
double step_full(const Workload& w, const Batch& batch) {
  auto q = w.query_model()(batch.queries).toTensor();
  auto p = w.passage_model()(batch.passages).toTensor();
  auto loss = w.loss()({q, p});
  loss.backward();
  return loss.item<double>();
}

// Gradient accumulation: each sub-batch of `chunk` pairs is its own contrastive batch (only
// its own negatives); loss scaled by rows / N, backward, next.
double step_accumulate(const Workload& w, const Batch& batch, int64_t chunk) {
  const auto q_chunks = w.split(batch.queries, chunk);
  const auto p_chunks = w.split(batch.passages, chunk);  // M = N: the same rows as the queries
  double total = 0;
  for (size_t c = 0; c < q_chunks.size(); ++c) {
    auto q = w.query_model()(q_chunks[c]).toTensor();
    auto p = w.passage_model()(p_chunks[c]).toTensor();
    auto loss = w.loss()({q, p}) * (static_cast<double>(q.size(0)) / static_cast<double>(batch.pairs));
    loss.backward();
    total += loss.item<double>();
  }
  return total;
}

}  // namespace

Step make_step(const Workload& workload, const StepSpec& spec) {
  const Workload* w = &workload;
  if (spec.mode == "full") return [w](const Batch& b) { return step_full(*w, b); };
  if (spec.mode == "accumulate") {
    return [w, chunk = spec.chunk](const Batch& b) { return step_accumulate(*w, b, chunk); };
  }
  if (spec.mode == "cache") {
    auto cache = std::make_shared<gradcache::GradCache>(
        w->models(), spec.chunk, w->loss(),
        w->cache_options().retain_chunks(spec.retain_chunks).precision(spec.precision));
    return [cache](const Batch& b) { return (*cache)({b.queries, b.passages}).item<double>(); };
  }
  throw std::invalid_argument("step mode: expected full, accumulate or cache, got '" + spec.mode + "'");
}

}  // namespace gcbench
