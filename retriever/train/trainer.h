// Training a bi-encoder retriever with a large contrastive batch (the CLI's `train`).
#pragma once

#include "retriever/config/train_config.h"
#include "retriever/run/checkpoint.h"
#include "retriever/search/metrics.h"

#include <gradcache/distributed.h>

#include <atomic>
#include <iostream>
#include <optional>
#include <string>

namespace gradcache {
namespace retriever {

struct TrainOptions {
  bool resume = false;     ///< continue the run in config.output.dir from its checkpoint
  bool overwrite = false;  ///< start afresh even if config.output.dir holds a run
  /// Set (to the signal number) from a signal handler: the run saves a checkpoint after the
  /// current step and returns with `interrupted`.
  const std::atomic<int>* stop = nullptr;
  /// For tests: behave as if stopped once this many steps are done.
  int64_t stop_after_steps = 0;
  std::ostream* log = &std::cerr;  ///< progress and messages
  bool terminal = false;           ///< draw a live progress bar on `log`
  /// Data-parallel training: each process of the group takes its share of every batch; the
  /// loss and the gradients are global. Only rank 0 writes files, logs and evaluates.
  std::shared_ptr<distributed::ProcessGroup> group;
};

struct TrainResult {
  TrainConfig config;  ///< the effective settings (vocabulary, chunk sizes chosen by the run)
  bool interrupted = false;
  int stop_signal = 0;
  TrainProgress progress;
  int64_t total_steps = 0;
  double final_loss = 0, wall_seconds = 0, peak_rss_mb = 0;
  std::string eval_name;
  std::optional<RetrievalMetrics> untrained, trained;
  /// What `untrained` is called: "untrained", or "zero-shot" for a --model-dir model (pretrained).
  std::string untrained_name = "untrained";
  /// --similarity mlp: the trained model's dense top config.similarity.rerank_k re-ranked by Phi.
  std::optional<RetrievalMetrics> trained_reranked;
  std::optional<RetrievalMetrics> bm25;  ///< the BM25 baseline of the evaluation set (--eval-bm25)
  std::vector<PrefixMetrics> trained_prefixes;  ///< --matryoshka: the trained model at each prefix width
  std::string checkpoint;  ///< path of the last checkpoint written
  bool stopped_early = false;        ///< --patience ran out
  nlohmann::json best = nullptr;     ///< model selection (--eval-every): summary.json's "selection"
};

/// Runs (or resumes) a training run as `config` says and writes everything under
/// config.output.dir: config.json, tokenizer.model, checkpoint.pt, metrics.jsonl, summary.json.
/// Throws std::exception subclasses with clear messages on bad data or settings; files
/// already written are never left torn.
TrainResult train(TrainConfig config, const TrainOptions& options = {});

}  // namespace retriever
}  // namespace gradcache
