// One training step of a bi-encoder, in each of the ways the program and the benchmarks
// compare: Gradient Cache, the full batch in one pass, and gradient accumulation (the
// paper's baseline). The trainer and gradcache-bench both take their steps here, so each
// baseline exists once.
#pragma once

#include "retriever/config/train_config.h"

#include <gradcache/grad_cache.h>
#include <gradcache/grad_scaler.h>
#include <gradcache/loss.h>
#include <gradcache/model.h>
#include <gradcache/model_input.h>
#include <gradcache/precision.h>
#include <gradcache/similarity.h>
#include <gradcache/split.h>

#include <torch/arg.h>

#include <cstdint>
#include <memory>
#include <string>

namespace gradcache {
namespace distributed {
class ProcessGroup;
}  // namespace distributed

namespace retriever {

/// How a batch goes through the encoders. Each mode reads the fields that concern it.
struct StepOptions {
  /// Gradient Cache, the whole batch in one pass, or gradient accumulation (each sub-batch is
  /// its own contrastive batch).
  TORCH_ARG(TrainMode, mode) = TrainMode::Cache;
  /// cache: query rows per forward pass (the memory knob). The defaults of the knobs that are
  /// also flags are the flags' (BatchingSettings), declared once.
  TORCH_ARG(int64_t, chunk_size) = BatchingSettings{}.chunk_size;
  /// cache: passage rows per forward pass; 0: chunk_size.
  TORCH_ARG(int64_t, passage_chunk_size) = BatchingSettings{}.passage_chunk_size;
  /// accumulate: queries per sub-batch (each with its own 1 + k passages, and only those as
  /// negatives).
  TORCH_ARG(int64_t, sub_batch_size) = BatchingSettings{}.sub_batch_size;
  /// How an input is cut into chunks (cache) or sub-batches (accumulate); default
  /// gradcache::split_input.
  TORCH_ARG(SplitInputFn, split_input_fn) = nullptr;
  /// cache: the knobs of the cache alone, passed to GradCache as they are (retain_chunks,
  /// retain_memory, and any the core grows), checked there once. split_input_fn, precision and
  /// scaler below concern every mode and replace the ones here.
  TORCH_ARG(GradCacheOptions, cache);
  /// cache: chunk the passages in order of their own length (the attention mask's row sums),
  /// and give the loss their representations back in batch order. The batch comes sorted by
  /// query length (TrainingData::prepare_batch), which groups the queries into chunks of
  /// similar length but leaves each passage chunk padded to its longest of unrelated
  /// passages. Exact: the loss's index_select carries the cached gradient back to each
  /// passage's own row. Not with a learned similarity (the dual cache keeps the batch order).
  TORCH_ARG(bool, sort_passages) = false;
  /// Autocast per model call; representations and the loss stay fp32.
  TORCH_ARG(Precision, precision) = Precision::fp32;
  /// fp16: the loss is scaled, and the gradients come out scaled (the caller unscales).
  TORCH_ARG(std::shared_ptr<GradScaler>, scaler) = nullptr;
  /// Data-parallel: the loss covers every rank's batch and the gradients are summed over the
  /// ranks, so that W ranks compute the gradients of one process with all W batches.
  TORCH_ARG(std::shared_ptr<distributed::ProcessGroup>, group) = nullptr;
  /// With a group: the loss computed in shares by the ranks themselves
  /// (distributed::ShardedContrastiveLoss), which the cache and full steps then use instead of
  /// gathering every rank's representations for the loss; accumulate keeps the loss (each
  /// rank's sub-batch is its own). Undefined: gather.
  TORCH_ARG(Loss, sharded_loss);
  /// A learned similarity Phi (--similarity mlp). When defined, the loss is InfoNCE over Phi's
  /// scores (similarity_options: temperature, symmetric, tile) and `loss` is not used: cache
  /// trains Phi through the dual gradient cache (DualGradCache), full and accumulate by autograd
  /// over Phi's score matrix of the batch (sub-batch). Phi's gradients accumulate with the
  /// encoders'. One process only (no group), and no fp16 scaler.
  TORCH_ARG(PairScorer, similarity);
  TORCH_ARG(DualCacheOptions, similarity_options);
};

/// Accumulates into the parameters' gradients those of the contrastive loss of one batch.
class TrainingStep {
 public:
  virtual ~TrainingStep() = default;
  /// queries: N rows; passages: N x (1 + k) rows, each query's positive then its k hard
  /// negatives. Returns the loss of the batch. A non-finite loss is returned as it is and
  /// nothing is backpropagated (gradients are as before the call).
  virtual double run(const ModelInput& queries, const ModelInput& passages) = 0;
  const StepOptions& options() const { return options_; }
  /// Where the last run's time went (full and accumulate: the forward passes, the losses and
  /// the backward passes, each summed over sub-batches; cache: GradCache's three steps).
  const StepTimes& last_times() const { return times_; }

 protected:
  explicit TrainingStep(StepOptions options) : options_(std::move(options)) {}
  StepOptions options_;
  StepTimes times_;
};

/// The step `options.mode()` names, over a query and a passage model (the same model twice
/// for a tied encoder). Throws std::invalid_argument for an unknown mode or bad options.
std::unique_ptr<TrainingStep> make_training_step(Model query_model, Model passage_model, Loss loss,
                                                 StepOptions options);

}  // namespace retriever
}  // namespace gradcache
