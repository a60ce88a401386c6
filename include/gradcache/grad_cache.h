// Gradient Cache: full-batch contrastive gradients with one chunk's activation memory.
#pragma once

#include <gradcache/chunk_record.h>
#include <gradcache/errors.h>
#include <gradcache/loss.h>
#include <gradcache/model.h>
#include <gradcache/model_call.h>
#include <gradcache/model_input.h>
#include <gradcache/precision_kind.h>
#include <gradcache/retention_hooks.h>
#include <gradcache/split.h>

#include <torch/arg.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace gradcache {

// fp16 loss scaling (grad_scaler.h) is an extension the cache step calls once, in step 2: the
// step needs only this declaration, not the scaler.
class GradScaler;
/// `loss` times `scaler`'s current scale (defined with GradScaler, in grad_scaler.cpp).
at::Tensor scale_loss(const GradScaler& scaler, const at::Tensor& loss);

struct GradCacheOptions {
  /// Splits an input into chunks; needed for inputs split_input() cannot split.
  TORCH_ARG(SplitInputFn, split_input_fn) = nullptr;
  /// Picks the representation out of a model output; by default the output is the tensor.
  TORCH_ARG(GetRepFn, get_rep_fn) = nullptr;
  /// Chunks of each model that keep their graph from step 1, so step 3 only runs their
  /// backward: less time for more memory. The first chunks are kept. -1 (default): as many
  /// as retain_memory allows, so none unless it is set (the paper's algorithm).
  TORCH_ARG(int64_t, retain_chunks) = -1;
  /// Bytes of activations the retained chunks of all models may hold together (0: no
  /// limit). Measured, not guessed: the first chunk of each model runs with grad as a probe
  /// (and is replayed later if it does not fit). Needs memory_stats() for the models'
  /// device: on CPU, install gradcache::CpuMemoryTracker first.
  TORCH_ARG(int64_t, retain_memory) = 0;
  /// What the models compute in: each model call runs under its own autocast scope; the
  /// representations, the loss and the cache are fp32 whatever this is.
  TORCH_ARG(Precision, precision) = Precision::fp32;
  /// fp16: scales the loss of step 2 only (the replay carries the scale in the cached
  /// gradients); parameter gradients come out scaled for scaler->step(optimizer).
  TORCH_ARG(std::shared_ptr<GradScaler>, scaler) = nullptr;
};

/// Where the last cache step's time went, in wall seconds: reading it costs nothing, and a
/// profile of a training run (the program's metrics.jsonl, bench/side_by_side.py) needs no
/// subclass. Steps 1 and 3 include splitting and the retained chunks' backward respectively.
struct StepTimes {
  double forward_s = 0;   ///< step 1: every chunk without graph (or retained), all models
  double loss_s = 0;      ///< step 2: the loss and its gradient with respect to the representations
  double backward_s = 0;  ///< step 3: each chunk's replay with graph and its backward
};

/// The steps of a gradient cache (docs/design.md §2) around a step 2 that subclasses give:
/// 1. split each model's input and run every chunk without graph, recording the generators;
/// 2. build_cache: the gradient of the loss with respect to every representation;
/// 3. replay each chunk with grad and backpropagate its slice of the cached gradient.
/// Each step is a virtual method, as in the reference, so a subclass can change one.
class GradCacheBase {
 public:
  GradCacheBase(std::vector<Model> models, std::vector<int64_t> chunk_sizes, GradCacheOptions options);
  virtual ~GradCacheBase() = default;

  /// One cache step: every model's parameter gradients accumulate as if `inputs` (one per
  /// model) had gone through as one batch. Returns the loss, detached and unscaled. On bad
  /// input or a failure before the parameter backward (NonFiniteLossError included) it
  /// throws and leaves gradients, buffers and generators unchanged.
  at::Tensor cache_step(const std::vector<ModelInput>& inputs, const LossArgs& loss_args = {});
  at::Tensor operator()(const std::vector<ModelInput>& inputs, const LossArgs& loss_args = {}) {
    return cache_step(inputs, loss_args);
  }

  const std::vector<Model>& models() const { return models_; }
  const std::vector<int64_t>& chunk_sizes() const { return chunk_sizes_; }
  const GradCacheOptions& options() const { return options_; }
  /// The times of the last cache_step that got as far as step 3.
  const StepTimes& last_step_times() const { return last_step_times_; }

  using ForwardResult = gradcache::ForwardResult;

 protected:
  /// Splits one model's input (split_input_fn if given, else split_input()).
  virtual std::vector<ModelInput> split_inputs(const ModelInput& input, int64_t chunk_size);
  /// Calls a model on one chunk (call_model: under autocast for options().precision()).
  virtual c10::IValue model_call(const Model& model, const ModelInput& chunk);
  /// Picks the representation out of a model output (pick_rep with get_rep_fn).
  virtual at::Tensor get_reps(const c10::IValue& model_output);
  /// The tensors of a chunk whose devices' generators must be recorded.
  virtual std::vector<at::Tensor> get_input_tensors(const ModelInput& chunk);

  /// Step 1: every chunk without graph, recording the generators before each. Chunks the
  /// retention policy picks run with grad and keep their graph (within what the models before
  /// this one retained in this step: retained_by_earlier_models()).
  virtual ForwardResult forward_no_grad(size_t model_index, const std::vector<ModelInput>& chunks);
  /// Step 2: from the representations of step 1 (no graph), the gradient of the loss with
  /// respect to each model's representations, in model order; sets `loss_out`.
  virtual std::vector<at::Tensor> build_cache(const std::vector<at::Tensor>& reps, const LossArgs& loss_args,
                                              at::Tensor& loss_out) = 0;
  /// Step 3 for retained chunks: their slices through the kept graphs, which are then freed
  /// (for every model before any replay, so that memory is free by then).
  virtual void backward_retained(size_t model_index, ForwardResult& forward, const at::Tensor& cached_grads);
  /// Step 3: replays each other chunk with grad under its recorded generator state and
  /// backpropagates its slice of the cached gradient into the parameters.
  virtual void forward_backward(size_t model_index, const std::vector<ModelInput>& chunks,
                                const ForwardResult& forward, const at::Tensor& cached_grads);
  /// Hook after model `model_index`'s last backward; its module's gradients are complete
  /// at its last_use_of_module. Distributed training synchronises gradients here.
  virtual void on_model_backward_done(size_t model_index);

  /// Whether model `i` is the last in model order whose underlying module is its own
  /// (false for the first of two tied encoders).
  bool last_use_of_module(size_t model_index) const;
  /// "model i (Name)", for messages.
  std::string model_label(size_t model_index) const;
  /// Bytes of graphs the models before the current one kept in this step's step 1.
  int64_t retained_by_earlier_models() const { return retained_by_earlier_models_; }

 private:
  // A chunk's representation as the loss sees it (model_call, get_reps, fp32).
  at::Tensor representation(const Model& model, const ModelInput& chunk);
  void check_representation(size_t model_index, const at::Tensor& rep, c10::optional<int64_t> rows) const;

  StepTimes last_step_times_;
  int64_t retained_by_earlier_models_ = 0;  // step 1 of the current step, models before this one
  std::vector<Model> models_;
  std::vector<int64_t> chunk_sizes_;
  GradCacheOptions options_;
  std::shared_ptr<const RetentionPolicy> retention_;  // null: nothing retained (the paper)
};

/// Gradient Cache (Gao et al., 2021) for a loss over the representations.
///
///   GradCache gc({encoder, encoder}, /*chunk_size=*/8, SimpleContrastiveLoss());
///   optimizer.zero_grad();
///   auto loss = gc({queries, passages});   // parameter gradients as for the full batch
///   optimizer.step();
class GradCache : public GradCacheBase {
 public:
  GradCache(std::vector<Model> models, std::vector<int64_t> chunk_sizes, Loss loss_fn,
            GradCacheOptions options = {});
  GradCache(std::vector<Model> models, int64_t chunk_size, Loss loss_fn, GradCacheOptions options = {});

 protected:
  /// The loss on the (leaf) representations.
  virtual at::Tensor compute_loss(const std::vector<at::Tensor>& reps, const LossArgs& loss_args);
  /// Step 2: the loss on leaf copies of the representations, and its backward.
  std::vector<at::Tensor> build_cache(const std::vector<at::Tensor>& reps, const LossArgs& loss_args,
                                      at::Tensor& loss_out) override;

 private:
  void check_loss(const at::Tensor& loss, const std::vector<at::Tensor>& leaves) const;

  Loss loss_fn_;
};

}  // namespace gradcache
