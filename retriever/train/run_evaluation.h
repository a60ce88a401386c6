// The evaluations around a training run, on its evaluation set and with its settings: the model
// before and after training (each --matryoshka prefix too, and Phi's re-ranking), and the BM25
// baseline. Each logs its line; the trainer calls them on the one process that evaluates.
#pragma once

#include "retriever/config/train_config.h"
#include "retriever/search/evaluate.h"
#include "retriever/train/training_data.h"

#include <atomic>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace gradcache {
namespace retriever {

class RunEvaluation {
 public:
  /// `stop`: a signal number once one arrives. The evaluations before and after training stop
  /// on it (StoppedBySignal, issue 27); the dev evaluations with options() do not: the training
  /// loop stops at its next step and saves a checkpoint.
  RunEvaluation(const TrainConfig& config, const TrainingData& data, const c10::Device& device,
                std::function<void(const std::string&)> log, const std::atomic<int>* stop = nullptr);

  /// How the run's evaluations encode (--eval-batch-size, the device).
  EvalOptions options() const;
  /// `model` on the evaluation set, logged as `what`; with `reranked` and a learned similarity,
  /// also the dense top --rerank-k re-ranked by Phi. Nothing without an evaluation set.
  std::optional<RetrievalMetrics> model(BiEncoder& model, const std::string& what,
                                        std::optional<RetrievalMetrics>* reranked = nullptr) const;
  /// After training: the model's metrics ("trained"), and with --matryoshka each prefix width's
  /// into `prefixes` (one encoding).
  std::optional<RetrievalMetrics> trained(BiEncoder& model, std::optional<RetrievalMetrics>* reranked,
                                          std::vector<PrefixMetrics>* prefixes) const;
  /// The BM25 baseline (--eval-bm25).
  std::optional<RetrievalMetrics> bm25() const;

 private:
  const TrainConfig& config_;
  const TrainingData& data_;
  c10::Device device_;
  /// options(), stopping on a signal.
  EvalOptions stoppable_options() const;

  std::function<void(const std::string&)> log_;
  const std::atomic<int>* stop_;
};

}  // namespace retriever
}  // namespace gradcache
