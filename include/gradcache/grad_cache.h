// The GradCache class: full-batch contrastive gradients with one chunk's activation memory.
#pragma once

#include <gradcache/grad_scaler.h>
#include <gradcache/loss.h>
#include <gradcache/model.h>
#include <gradcache/model_input.h>
#include <gradcache/precision.h>
#include <gradcache/rng_state.h>
#include <gradcache/split.h>

#include <torch/arg.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace gradcache {

/// Thrown by GradCache::cache_step when the loss is NaN or infinite (and by the streaming
/// loss and the dual cache for a non-finite score, naming its tile). Nothing was
/// backpropagated: parameter gradients are as they were before the step.
class NonFiniteLossError : public std::runtime_error {
 public:
  NonFiniteLossError(const std::string& message, double loss) : std::runtime_error(message), loss_(loss) {}
  double loss() const { return loss_; }

 private:
  double loss_;
};

/// Picks the representation tensor out of a model's output (the reference's get_rep_fn).
using GetRepFn = std::function<at::Tensor(const c10::IValue& model_output)>;

struct GradCacheOptions {
  /// Splits an input into chunks; needed for inputs split_input() cannot split.
  TORCH_ARG(SplitInputFn, split_input_fn) = nullptr;
  /// Picks the representation out of a model output; by default the output is the tensor.
  TORCH_ARG(GetRepFn, get_rep_fn) = nullptr;
  /// Chunks of each model that keep their graph from step 1, so step 3 only runs their
  /// backward (no recompute): less time for more memory. The first chunks are kept.
  /// -1 (default): one chunk per model, or as many as fit memory_budget when it is set.
  TORCH_ARG(int64_t, retain_chunks) = -1;
  /// Bytes of activations the retained chunks of all models may hold together (0: no
  /// budget). Measured, not guessed: the first chunk of each model runs with grad as a probe
  /// (and is replayed later if it does not fit). Needs memory_stats() for the models'
  /// device: on CPU, install gradcache::CpuMemoryTracker first.
  TORCH_ARG(int64_t, memory_budget) = 0;
  /// What the models compute in: each model call (step 1 and the replay) runs under its own
  /// autocast scope for the device of the model's parameters. Representations are cast to
  /// fp32 before the loss whatever this is, so the loss and the cache are always fp32.
  TORCH_ARG(Precision, precision) = Precision::fp32;
  /// fp16: scales the loss of step 2 (only that loss: the replay backpropagates the cached,
  /// already scaled gradients), so parameter gradients come out scaled. Then
  /// scaler->step(optimizer) unscales them and skips the step on inf/NaN; scaler->update().
  TORCH_ARG(std::shared_ptr<GradScaler>, scaler) = nullptr;
};

/// Gradient Cache (Gao et al., 2021), algorithm.md §2.
///
///   GradCache gc({encoder, encoder}, /*chunk_size=*/8, SimpleContrastiveLoss());
///   optimizer.zero_grad();
///   auto loss = gc({queries, passages});   // parameter gradients as for the full batch
///   optimizer.step();
///
/// The steps are virtual methods, as in the reference, so a subclass can change one of
/// them: split_inputs, model_call / get_reps, forward_no_grad, build_cache (compute_loss),
/// forward_backward, and the hook on_model_backward_done.
class GradCache {
 public:
  GradCache(std::vector<Model> models, std::vector<int64_t> chunk_sizes, Loss loss_fn,
            GradCacheOptions options = {});
  GradCache(std::vector<Model> models, int64_t chunk_size, Loss loss_fn, GradCacheOptions options = {});
  virtual ~GradCache() = default;

  /// Runs one cache step: afterwards every model's parameter gradients are accumulated as
  /// if `inputs` (one per model, in model order) had gone through the models as one batch.
  /// Returns the loss, detached (and unscaled with a scaler). `loss_args` go to the loss as they are.
  /// On bad input or a failure before the parameter backward (including
  /// NonFiniteLossError) it throws and leaves gradients, buffers and generators unchanged.
  at::Tensor cache_step(const std::vector<ModelInput>& inputs, const LossArgs& loss_args = {});
  at::Tensor operator()(const std::vector<ModelInput>& inputs, const LossArgs& loss_args = {}) {
    return cache_step(inputs, loss_args);
  }

  const std::vector<Model>& models() const { return models_; }
  const std::vector<int64_t>& chunk_sizes() const { return chunk_sizes_; }
  const GradCacheOptions& options() const { return options_; }

  /// The outcome of step 1 for one model.
  struct ForwardResult {
    at::Tensor reps;                   ///< representations of all chunks, no graph
    std::vector<RngState> rng_states;  ///< generator states before each chunk
    std::vector<int64_t> chunk_rows;   ///< rows of each chunk
    std::vector<bool> retained;        ///< chunks whose graph step 1 kept (not replayed)
    std::vector<at::Tensor> graphs;    ///< their representations with the graph, until step 3
    int64_t retained_bytes = 0;        ///< activations they hold (when measured)
  };

 protected:
  /// Splits one model's input (split_input_fn if given, else split_input()).
  virtual std::vector<ModelInput> split_inputs(const ModelInput& input, int64_t chunk_size);
  /// Calls a model on one chunk, under autocast when options().precision() asks for it.
  virtual c10::IValue model_call(const Model& model, const ModelInput& chunk);
  /// Picks the representation out of a model output (get_rep_fn if given).
  virtual at::Tensor get_reps(const c10::IValue& model_output);
  /// The tensors of a chunk whose devices' generators must be recorded.
  virtual std::vector<at::Tensor> get_input_tensors(const ModelInput& chunk);
  /// The loss on the (leaf) representations.
  virtual at::Tensor compute_loss(const std::vector<at::Tensor>& reps, const LossArgs& loss_args);

  /// Step 1: every chunk under no-grad, recording the generators before each; retained
  /// chunks run with grad and keep their graph.
  virtual ForwardResult forward_no_grad(size_t model_index, const std::vector<ModelInput>& chunks);
  /// Step 2: the loss on leaf copies of the representations and its backward; returns the
  /// gradient of the loss with respect to each model's representations, in model order.
  virtual std::vector<at::Tensor> build_cache(const std::vector<at::Tensor>& reps, const LossArgs& loss_args,
                                              at::Tensor& loss_out);
  /// Step 3: replays each chunk with grad under its recorded generator state and
  /// backpropagates its slice of the cached gradient into the parameters.
  virtual void forward_backward(size_t model_index, const std::vector<ModelInput>& chunks,
                                const ForwardResult& forward, const at::Tensor& cached_grads);
  /// Step 3 for retained chunks: backpropagates their slices through the kept graphs and
  /// frees them. Runs for every model before any replay, so their memory is free by then.
  virtual void backward_retained(size_t model_index, ForwardResult& forward, const at::Tensor& cached_grads);

  /// Hook: model `model_index` has run the backward of its last chunk. Its parameter
  /// gradients are complete once the last model sharing its module has reached this point
  /// (see last_use_of_module). Distributed training synchronises gradients here.
  virtual void on_model_backward_done(size_t model_index);

  /// Whether model `i` is the last in model order whose underlying module is its own
  /// (false for the first of two tied encoders).
  bool last_use_of_module(size_t model_index) const;

 private:
  // How many chunks of a model to retain, and the budget left for this step.
  int64_t retain_limit(size_t num_chunks) const;
  // A chunk's representation as the loss sees it: model_call, get_reps, then fp32.
  at::Tensor representation(const Model& model, const ModelInput& chunk);

  std::vector<Model> models_;
  std::vector<int64_t> chunk_sizes_;
  Loss loss_fn_;
  GradCacheOptions options_;
  int64_t budget_left_ = 0;  // memory_budget minus what this step's retained chunks hold
};

}  // namespace gradcache
