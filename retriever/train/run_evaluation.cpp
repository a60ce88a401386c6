#include "retriever/train/run_evaluation.h"

#include "retriever/config/matryoshka_settings.h"

#include <chrono>
#include <cstdio>

namespace gradcache {
namespace retriever {

RunEvaluation::RunEvaluation(const TrainConfig& config, const TrainingData& data, const c10::Device& device,
                             std::function<void(const std::string&)> log, const std::atomic<int>* stop)
    : config_(config), data_(data), device_(device), log_(std::move(log)), stop_(stop) {}

EvalOptions RunEvaluation::options() const {
  EvalOptions options;
  options.batch_size = config_.eval.batch_size;
  options.device = device_;
  return options;
}

EvalOptions RunEvaluation::stoppable_options() const {
  EvalOptions options = this->options();
  options.stop = stop_;
  options.index.stop = stop_;
  return options;
}

std::optional<RetrievalMetrics> RunEvaluation::model(BiEncoder& model, const std::string& what,
                                                     std::optional<RetrievalMetrics>* reranked) const {
  if (!data_.eval_set()) return std::nullopt;
  EvalOptions options = stoppable_options();
  options.rerank_k = config_.similarity.rerank_k;
  std::string line;
  auto metrics = evaluate_and_describe(model, *data_.eval_set(), options, what, line, reranked);
  log_(line);
  return metrics;
}

std::optional<RetrievalMetrics> RunEvaluation::trained(BiEncoder& model, std::optional<RetrievalMetrics>* reranked,
                                                       std::vector<PrefixMetrics>* prefixes) const {
  auto dims = parse_dim_list(config_.matryoshka.dims, "--matryoshka");
  if (dims.empty()) return this->model(model, "trained", reranked);
  if (!data_.eval_set()) return std::nullopt;
  dims.insert(dims.begin(), 0);  // all dimensions: the trained row
  std::vector<std::string> lines;
  const auto all =
      evaluate_prefixes_and_describe(model, *data_.eval_set(), stoppable_options(), dims, model.normalizes(), "trained", lines);
  for (const auto& line : lines) log_(line);
  prefixes->assign(all.begin() + 1, all.end());
  return all.front().metrics;
}

std::optional<RetrievalMetrics> RunEvaluation::bm25() const {
  const auto& texts = data_.eval_texts();
  if (!texts || !data_.eval_set() || !config_.eval.bm25) return std::nullopt;
  const auto start = std::chrono::steady_clock::now();
  Bm25Options options;
  options.stop = stop_;
  const auto bm25 = evaluate_bm25(texts->corpus, texts->queries, *data_.eval_set(), options, 100, log_);
  char line[160];
  std::snprintf(line, sizeof line, "bm25: R@10 %.4f  MRR@10 %.4f (%.1f s)", bm25.metrics.recall_at_10,
                bm25.metrics.mrr_at_10,
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  log_(line);
  return bm25.metrics;
}

}  // namespace retriever
}  // namespace gradcache
