#include "retriever/train/training_state.h"

#include "retriever/run/build_model.h"

#include "retriever/config/matryoshka_settings.h"
#include "retriever/config/similarity_settings.h"
#include "retriever/train/training_data.h"
#include "retriever/train/training_loss.h"

#include <gradcache/distributed.h>
#include <gradcache/sharded_loss.h>

#include <torch/torch.h>

#include <stdexcept>

namespace gradcache {
namespace retriever {
namespace {

// The width of a TorchScript encoder's embeddings, from one token (no graph, no dropout); 0 when
// the call fails, which the first step then reports with call_script_encoder's message.
int64_t script_output_width(torch::jit::Module& script) {
  const bool training = script.is_training();
  script.train(false);
  int64_t width = 0;
  try {
    torch::NoGradGuard no_grad;
    const TokenBatch one{{"input_ids", torch::zeros({1, 1}, torch::kLong)},
                         {"attention_mask", torch::ones({1, 1}, torch::kLong)}};
    width = call_script_encoder(script, one).size(1);
  } catch (const std::exception&) {
  }
  script.train(training);
  return width;
}

// The built-in model's width is checked with the settings; a --model's only by running it and a
// --model-dir's once loaded, here, so that a prefix too wide is refused before training, naming
// the flags.
void check_prefixes_fit(const TrainConfig& config, const BiEncoder& model) {
  if (!config.matryoshka.enabled() || config.encoder.is_builtin()) return;
  const bool script = model.is_torchscript();
  const int64_t width = script ? script_output_width(*model.scripts().front()) : model.output_dim();
  const auto refusal =
      matryoshka_too_wide(config, width,
                          "the width " + std::to_string(width) + " of the embeddings of " +
                              (script ? "--model " + config.encoder.torchscript : "--model-dir " + config.encoder.pretrained));
  if (!refusal.empty()) throw std::invalid_argument(refusal);
}

}  // namespace

TrainingModel::TrainingModel(const TrainConfig& config, const c10::Device& device,
                             const distributed::ProcessGroup* group, int rank, const Resume& resume,
                             const LoadedPretrained* pretrained) {
  torch::manual_seed(config.training.seed);
  if (resume.info) {
    model_ = load_model(resume.path, *resume.info);
  } else if (pretrained) {
    model_ = pretrained_model(*pretrained, config.encoder.untie);
    check_prefixes_fit(config, *model_);
  } else if (!config.encoder.torchscript.empty()) {
    model_ = BiEncoder::torchscript(config.encoder.torchscript, config.encoder.untie);
    check_prefixes_fit(config, *model_);
  } else {
    model_ = build_model(config);
  }
  model_->to(device);
  model_->train(true);
  trainable_ = select_trainable(*model_, config.encoder.trainable());  // before the optimizer: it holds what trains
  trainable_.held_narrow = hold_frozen_weights(*model_, config.encoder.base_precision);  // what is frozen, now known
  // Every rank starts from the same weights (same seed); dropout then draws per rank.
  if (group && !resume.info) torch::manual_seed(mix_seed(config.training.seed ^ mix_seed(static_cast<uint64_t>(rank))));
  optimizer_ = std::make_unique<torch::optim::AdamW>(
      model_->parameters(), torch::optim::AdamWOptions(config.training.lr).weight_decay(config.training.weight_decay));
  precision_ = config.machine.precision;
  if (precision_ == Precision::fp16) {
    auto options = GradScalerOptions();
    if (group) options.agree_found_inf(distributed::any_rank(*group));  // all ranks skip together
    scaler_ = std::make_shared<GradScaler>(options);
  }
  if (resume.info) load_training_state(resume.path, *optimizer_, device, rank, scaler_.get());

  loss_ = make_loss(config.loss);
  if (model_->similarity()) set_up_similarity(config, group);
  if (group && group->world_size() > 1) {  // each rank computes its share: the loss's time and memory / W
    sharded_loss_ = distributed::ShardedContrastiveLoss(*group, streaming_loss_options(config.loss));
  }
  // --matryoshka: the same loss summed over the prefixes of the one cached representation.
  loss_ = with_matryoshka(loss_, config.matryoshka, model_->normalizes());
  sharded_loss_ = with_matryoshka(sharded_loss_, config.matryoshka, model_->normalizes());
}

// Temperature 1: Phi's dot term is already divided by --temperature, and the MLP learns the
// scale of its own output (dividing it too would only rescale its initialisation).
void TrainingModel::set_up_similarity(const TrainConfig& config, const distributed::ProcessGroup* group) {
  if (auto conflict = similarity_process_conflict(config, group ? group->world_size() : 1))
    throw std::invalid_argument(*conflict);
  similarity_ = PairScorer(model_->similarity());
  similarity_options_ = DualCacheOptions()
                            .temperature(1.0)
                            .symmetric(config.loss.kind == LossKind::Symmetric)
                            .tile_size(config.similarity.tile);
}

double lr_factor(int64_t step, int64_t total, int64_t warmup_steps) {
  if (step < warmup_steps) return static_cast<double>(step + 1) / warmup_steps;
  return static_cast<double>(total - step) / std::max<int64_t>(1, total - warmup_steps);
}

void TrainingModel::prepare_step(double lr) {
  for (auto& group : optimizer_->param_groups()) static_cast<torch::optim::AdamWOptions&>(group.options()).lr(lr);
  optimizer_->zero_grad();
}

UpdateOutcome TrainingModel::update(double max_grad_norm) {
  // fp16: the gradients come out scaled; clip the true ones, and skip the update on overflow.
  if (scaler_) scaler_->unscale_(*optimizer_);
  if (max_grad_norm > 0) torch::nn::utils::clip_grad_norm_(model_->parameters(), max_grad_norm);
  if (!scaler_) {
    optimizer_->step();
    return UpdateOutcome::stepped;
  }
  const bool stepped = scaler_->step(*optimizer_);
  scaler_->update();
  return stepped ? UpdateOutcome::stepped : UpdateOutcome::skipped_overflow;
}

double TrainingModel::lr() const { return optimizer_->param_groups()[0].options().get_lr(); }

}  // namespace retriever
}  // namespace gradcache
