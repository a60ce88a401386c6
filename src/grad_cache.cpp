#include <gradcache/grad_cache.h>

#include "detail/graph_reach.h"
#include "detail/state_guard.h"

#include <torch/csrc/autograd/autograd.h>
#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include <chrono>
#include <cmath>
#include <sstream>

namespace gradcache {
namespace {

using Clock = std::chrono::steady_clock;
double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

std::vector<c10::Device> merge(std::vector<c10::Device> a, const std::vector<c10::Device>& b) {
  for (const auto& d : b) {
    if (std::find(a.begin(), a.end(), d) == a.end()) a.push_back(d);
  }
  return a;
}

}  // namespace

// ---- the steps ---------------------------------------------------------------------------

GradCacheBase::GradCacheBase(std::vector<Model> models, std::vector<int64_t> chunk_sizes, GradCacheOptions options)
    : models_(std::move(models)),
      chunk_sizes_(std::move(chunk_sizes)),
      options_(std::move(options)),
      retention_(make_retention(options_.retain_chunks(), options_.retain_memory())) {
  TORCH_CHECK(!models_.empty(), "GradCache: needs at least one model");
  for (size_t i = 0; i < models_.size(); ++i) TORCH_CHECK(models_[i].defined(), "GradCache: model ", i, " is empty");
  TORCH_CHECK(chunk_sizes_.size() == 1 || chunk_sizes_.size() == models_.size(), "GradCache: got ",
              chunk_sizes_.size(), " chunk sizes for ", models_.size(), " models; give one for all or one per model");
  if (chunk_sizes_.size() == 1) chunk_sizes_.assign(models_.size(), chunk_sizes_[0]);
  for (size_t i = 0; i < chunk_sizes_.size(); ++i) {
    TORCH_CHECK(chunk_sizes_[i] > 0, "GradCache: the chunk size of ", model_label(i), " must be positive, got ",
                chunk_sizes_[i]);
  }
}

at::Tensor GradCacheBase::cache_step(const std::vector<ModelInput>& inputs, const LossArgs& loss_args) {
  const size_t n = models_.size();
  const auto started = Clock::now();
  TORCH_CHECK(inputs.size() == n, "GradCache::cache_step: got ", inputs.size(), " inputs for ", n,
              " models; pass one input per model, in model order");
  std::vector<std::vector<ModelInput>> chunks(n);
  std::vector<c10::Device> devices;
  std::vector<at::Tensor> buffers;
  for (size_t i = 0; i < n; ++i) {
    try {
      chunks[i] = split_inputs(inputs[i], chunk_sizes_[i]);
    } catch (const c10::Error& e) {
      TORCH_CHECK(false, "GradCache::cache_step: input of ", model_label(i), ": ", e.what_without_backtrace());
    }
    TORCH_CHECK(!chunks[i].empty(), "GradCache::cache_step: splitting the input of ", model_label(i), " gave no chunk");
    devices = merge(merge(devices, devices_of(inputs[i].tensors())), devices_of(models_[i].parameters()));
    for (auto& b : models_[i].buffers()) buffers.push_back(std::move(b));
  }

  // Steps 1 and 2 touch only generators and buffers; if they fail, both are put back.
  detail::Rollback rollback(devices, buffers);
  std::vector<ForwardResult> forward;
  std::vector<at::Tensor> reps;
  retained_by_earlier_models_ = 0;
  for (size_t i = 0; i < n; ++i) {
    forward.push_back(forward_no_grad(i, chunks[i]));
    retained_by_earlier_models_ += forward.back().retained_bytes();
    reps.push_back(forward.back().reps);
  }
  const auto forward_done = Clock::now();
  at::Tensor loss;
  const auto cache = build_cache(reps, loss_args, loss);
  TORCH_INTERNAL_ASSERT(cache.size() == n, "build_cache gave ", cache.size(), " gradients for ", n, " models");
  rollback.commit();
  const auto loss_done = Clock::now();

  for (size_t i = 0; i < n; ++i) backward_retained(i, forward[i], cache[i]);
  for (size_t i = 0; i < n; ++i) forward_backward(i, chunks[i], forward[i], cache[i]);
  last_step_times_ = {seconds(forward_done - started), seconds(loss_done - forward_done),
                      seconds(Clock::now() - loss_done)};
  return loss;
}

std::vector<ModelInput> GradCacheBase::split_inputs(const ModelInput& input, int64_t chunk_size) {
  if (options_.split_input_fn()) return options_.split_input_fn()(input, chunk_size);
  return split_input(input, chunk_size);
}

c10::IValue GradCacheBase::model_call(const Model& model, const ModelInput& chunk) {
  return call_model(model, chunk, options_.precision());
}

at::Tensor GradCacheBase::get_reps(const c10::IValue& model_output) {
  return pick_rep(model_output, options_.get_rep_fn());
}

std::vector<at::Tensor> GradCacheBase::get_input_tensors(const ModelInput& chunk) { return chunk.tensors(); }

// chunk_representation() (model_call.h) through the overridable steps model_call and get_reps.
at::Tensor GradCacheBase::representation(const Model& model, const ModelInput& chunk) {
  return to_full_precision(get_reps(model_call(model, chunk)));
}

ForwardResult GradCacheBase::forward_no_grad(size_t model_index, const std::vector<ModelInput>& chunks) {
  const Model& model = models_[model_index];
  const auto parameter_devices = devices_of(model.parameters());  // once, not per chunk
  ForwardResult result;
  std::vector<at::Tensor> reps;
  for (const auto& chunk : chunks) {
    ChunkRecord record;
    record.rng_state = RngState::capture(merge(parameter_devices, devices_of(get_input_tensors(chunk))));
    at::Tensor rep;
    if (retention_ &&
        should_retain(*retention_, result.chunks, chunks.size(), chunk.batch_size(), retained_by_earlier_models_)) {
      const c10::Device device = parameter_devices.empty() ? c10::Device(c10::kCPU) : parameter_devices.front();
      rep = forward_retained(*retention_, device, [&] { return representation(model, chunk); }, result.chunks,
                             retained_by_earlier_models_, record);
      TORCH_CHECK(!rep.defined() || rep.requires_grad(), "GradCache: ", model_label(model_index),
                  " gave a representation without graph although it ran with grad; do its parameters require grad?");
    } else {
      c10::NoGradGuard no_grad;
      rep = representation(model, chunk);
    }
    check_representation(model_index, rep, chunk.batch_size());
    record.rows = rep.size(0);
    result.chunks.push_back(std::move(record));
    reps.push_back(rep.detach());
  }
  result.reps = reps.size() == 1 ? reps[0] : at::cat(reps, 0);
  return result;
}

void GradCacheBase::check_representation(size_t model_index, const at::Tensor& rep,
                                         c10::optional<int64_t> rows) const {
  TORCH_CHECK(rep.defined() && rep.dim() >= 1 && rep.is_floating_point(), "GradCache: ", model_label(model_index),
              " must give a floating-point representation with a batch dimension, got ",
              rep.defined() ? rep.toString() + " of shape " + c10::str(rep.sizes()) : std::string("an undefined tensor"));
  TORCH_CHECK(!rows || rep.size(0) == *rows, "GradCache: ", model_label(model_index), " returned a representation with ",
              rep.size(0), " rows for a chunk of ", *rows, " rows; it must give one row per input row (dim 0)");
}

void GradCacheBase::backward_retained(size_t /*model_index*/, ForwardResult& forward, const at::Tensor& cached_grads) {
  if (forward.retained_chunks() == 0) return;
  std::vector<int64_t> rows;
  for (const auto& record : forward.chunks) rows.push_back(record.rows);
  const auto grads = cached_grads.split_with_sizes(rows, 0);
  for (size_t c = 0; c < forward.chunks.size(); ++c) {
    if (!forward.chunks[c].retained) continue;
    torch::autograd::backward({forward.chunks[c].graph}, {grads[c]});
    forward.chunks[c].graph = at::Tensor();  // frees the graph's activations now
  }
}

void GradCacheBase::forward_backward(size_t model_index, const std::vector<ModelInput>& chunks,
                                     const ForwardResult& forward, const at::Tensor& cached_grads) {
  const Model& model = models_[model_index];
  std::vector<c10::Device> devices;
  std::vector<int64_t> rows;
  for (const auto& record : forward.chunks) {
    devices = merge(devices, record.rng_state.devices());
    rows.push_back(record.rows);
  }
  if (forward.retained_chunks() < static_cast<int64_t>(forward.chunks.size())) {
    RngStateGuard generators_as_left_by_step_1(devices);
    detail::BufferGuard buffers_updated_once(model.buffers());  // no second BatchNorm update
    c10::AutoGradMode with_grad(true);
    const auto grads = cached_grads.split_with_sizes(rows, 0);
    for (size_t c = 0; c < chunks.size(); ++c) {
      if (forward.chunks[c].retained) continue;  // done by backward_retained
      forward.chunks[c].rng_state.restore();
      torch::autograd::backward({representation(model, chunks[c])}, {grads[c]});
    }
  }
  on_model_backward_done(model_index);
}

void GradCacheBase::on_model_backward_done(size_t /*model_index*/) {}

bool GradCacheBase::last_use_of_module(size_t model_index) const {
  for (size_t j = model_index + 1; j < models_.size(); ++j) {
    if (models_[j].identity() == models_[model_index].identity()) return false;
  }
  return true;
}

std::string GradCacheBase::model_label(size_t i) const {
  return "model " + std::to_string(i) + " (" + models_[i].name() + ")";
}

// ---- GradCache: step 2 for a loss ------------------------------------------------------------

GradCache::GradCache(std::vector<Model> models, std::vector<int64_t> chunk_sizes, Loss loss_fn,
                     GradCacheOptions options)
    : GradCacheBase(std::move(models), std::move(chunk_sizes), std::move(options)), loss_fn_(std::move(loss_fn)) {
  TORCH_CHECK(loss_fn_.defined(), "GradCache: the loss function is empty");
}

GradCache::GradCache(std::vector<Model> models, int64_t chunk_size, Loss loss_fn, GradCacheOptions options)
    : GradCache(std::move(models), std::vector<int64_t>{chunk_size}, std::move(loss_fn), std::move(options)) {}

at::Tensor GradCache::compute_loss(const std::vector<at::Tensor>& reps, const LossArgs& loss_args) {
  return loss_fn_(reps, loss_args);
}

std::vector<at::Tensor> GradCache::build_cache(const std::vector<at::Tensor>& reps, const LossArgs& loss_args,
                                               at::Tensor& loss_out) {
  std::vector<at::Tensor> leaves;
  for (const auto& r : reps) leaves.push_back(r.detach().requires_grad_(true));
  at::Tensor loss = compute_loss(leaves, loss_args);
  check_loss(loss, leaves);
  // With a scaler only this loss is scaled (checked above unscaled): the cached gradients
  // carry the scale into the replay; an fp16 overflow there shows up as inf gradients,
  // which the scaler's step skips.
  (options().scaler() ? scale_loss(*options().scaler(), loss) : loss).backward();
  std::vector<at::Tensor> grads;
  for (const auto& leaf : leaves) grads.push_back(leaf.grad());
  loss_out = loss.detach().reshape({});
  return grads;
}

void GradCache::check_loss(const at::Tensor& loss, const std::vector<at::Tensor>& leaves) const {
  TORCH_CHECK(loss.defined(), "GradCache: the loss function returned an undefined tensor");
  TORCH_CHECK(loss.numel() == 1, "GradCache: the loss function must return a scalar, got shape ", loss.sizes());
  TORCH_CHECK(loss.requires_grad(), "GradCache: the loss does not depend on any representation (it has no graph); ",
              "compute it from the representations the loss function receives");
  const auto reached = detail::leaves_reached(loss, leaves);
  for (size_t i = 0; i < leaves.size(); ++i) {
    TORCH_CHECK(reached[i], "GradCache: the loss does not use the representation of ", model_label(i),
                "; every model's representation must contribute to the loss (remove the model otherwise)");
  }
  const double value = loss.item<double>();
  if (!std::isfinite(value)) {
    std::ostringstream message;
    message << "GradCache: the loss is " << value
            << "; nothing was backpropagated and parameter gradients are unchanged. Check the inputs, the "
               "learning rate and the temperature";
    throw NonFiniteLossError(message.str(), value);
  }
}

}  // namespace gradcache
