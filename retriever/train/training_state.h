// What a training run updates: the bi-encoder, its AdamW optimizer, the fp16 loss scaler and
// the contrastive loss, fresh or as a checkpoint left them.
#pragma once

#include "retriever/config/train_config.h"
#include "retriever/model/encoders.h"
#include "retriever/run/checkpoint.h"

#include <gradcache/grad_scaler.h>
#include <gradcache/loss.h>
#include <gradcache/precision.h>
#include <gradcache/similarity.h>

#include <torch/optim/adamw.h>

#include <memory>
#include <optional>
#include <string>

namespace gradcache {
namespace distributed {
class ProcessGroup;
}  // namespace distributed

namespace retriever {

/// The learning rate factor of step `step` (0-based) of `total`: linear warm-up over the
/// first `warmup_steps`, then linear decay to zero.
double lr_factor(int64_t step, int64_t total, int64_t warmup_steps);

/// How an update ended.
enum class UpdateOutcome { stepped, skipped_overflow };

class TrainingModel {
 public:
  /// A checkpoint to start from: its record and its path.
  struct Resume {
    const CheckpointInfo* info = nullptr;
    std::string path;
  };
  /// The model of `config` on `device` (from `resume.info` when set; else `pretrained`, the
  /// --model-dir model, when given), in training mode. Every rank starts from the same weights;
  /// in a group of more than one, the generators are then seeded per rank so that dropout draws
  /// differ.
  TrainingModel(const TrainConfig& config, const c10::Device& device, const distributed::ProcessGroup* group,
                int rank, const Resume& resume, const LoadedPretrained* pretrained = nullptr);

  BiEncoder& model() { return *model_; }
  /// What trains of the encoders (--train-params, --freeze-embeddings); the optimizer holds
  /// state for those parameters only.
  const TrainableCounts& trainable() const { return trainable_; }
  const Loss& loss() const { return loss_; }
  /// In a group of more than one: the same loss sharded across the ranks
  /// (distributed::ShardedContrastiveLoss), for the cache and full steps; else undefined.
  const Loss& sharded_loss() const { return sharded_loss_; }
  Precision precision() const { return precision_; }
  const std::shared_ptr<GradScaler>& scaler() const { return scaler_; }  ///< fp16 only
  torch::optim::AdamW& optimizer() { return *optimizer_; }
  /// With --similarity mlp: the model's Phi as the training step scores with it, and the dual
  /// cache's options; else undefined (the dot-product loss).
  const PairScorer& similarity() const { return similarity_; }
  const DualCacheOptions& similarity_options() const { return similarity_options_; }

  /// Sets the learning rate and zeroes the gradients, before a step.
  void prepare_step(double lr);
  /// The update with the step's gradients: unscaled (fp16), clipped to `max_grad_norm` (0: no
  /// clipping), applied unless fp16 overflowed.
  UpdateOutcome update(double max_grad_norm);
  double lr() const;

 private:
  void set_up_similarity(const TrainConfig& config, const distributed::ProcessGroup* group);

  std::optional<BiEncoder> model_;
  TrainableCounts trainable_;
  std::unique_ptr<torch::optim::AdamW> optimizer_;
  Precision precision_ = Precision::fp32;
  std::shared_ptr<GradScaler> scaler_;  // fp16 only: bf16 has fp32's exponent range
  Loss loss_;
  Loss sharded_loss_;
  PairScorer similarity_;
  DualCacheOptions similarity_options_;
};

}  // namespace retriever
}  // namespace gradcache
