#include <gradcache/grad_cache.h>

#include "detail/state_guard.h"

#include <gradcache/memory.h>

#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/variable.h>
#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include <cmath>
#include <sstream>
#include <unordered_set>

namespace gradcache {
namespace {

std::vector<c10::Device> merge(std::vector<c10::Device> a, const std::vector<c10::Device>& b) {
  for (const auto& d : b) {
    if (std::find(a.begin(), a.end(), d) == a.end()) a.push_back(d);
  }
  return a;
}

// Whether the graph of `loss` reaches each leaf, found before any backward runs so that an
// unused representation is reported without touching any gradient.
std::vector<bool> leaves_reached(const at::Tensor& loss, const std::vector<at::Tensor>& leaves) {
  std::vector<bool> reached(leaves.size(), false);
  std::vector<const torch::autograd::Node*> accumulators(leaves.size(), nullptr);
  std::vector<std::shared_ptr<torch::autograd::Node>> keep_alive;
  for (size_t i = 0; i < leaves.size(); ++i) {
    auto acc = torch::autograd::impl::try_get_grad_accumulator(leaves[i]);
    accumulators[i] = acc.get();
    keep_alive.push_back(std::move(acc));
  }
  std::vector<torch::autograd::Node*> stack{loss.grad_fn().get()};
  std::unordered_set<torch::autograd::Node*> seen;
  while (!stack.empty()) {
    auto* node = stack.back();
    stack.pop_back();
    if (node == nullptr || !seen.insert(node).second) continue;
    for (size_t i = 0; i < leaves.size(); ++i) {
      if (node == accumulators[i]) reached[i] = true;
    }
    for (const auto& edge : node->next_edges()) stack.push_back(edge.function.get());
  }
  return reached;
}

std::string model_label(size_t i, const Model& model) {
  return "model " + std::to_string(i) + " (" + model.name() + ")";
}

}  // namespace

GradCache::GradCache(std::vector<Model> models, std::vector<int64_t> chunk_sizes, Loss loss_fn,
                     GradCacheOptions options)
    : models_(std::move(models)),
      chunk_sizes_(std::move(chunk_sizes)),
      loss_fn_(std::move(loss_fn)),
      options_(std::move(options)) {
  TORCH_CHECK(!models_.empty(), "GradCache: needs at least one model");
  for (size_t i = 0; i < models_.size(); ++i) {
    TORCH_CHECK(models_[i].defined(), "GradCache: model ", i, " is empty");
  }
  TORCH_CHECK(chunk_sizes_.size() == 1 || chunk_sizes_.size() == models_.size(), "GradCache: got ",
              chunk_sizes_.size(), " chunk sizes for ", models_.size(), " models; give one for all or one per model");
  if (chunk_sizes_.size() == 1) chunk_sizes_.assign(models_.size(), chunk_sizes_[0]);
  for (size_t i = 0; i < chunk_sizes_.size(); ++i) {
    TORCH_CHECK(chunk_sizes_[i] > 0, "GradCache: the chunk size of ", model_label(i, models_[i]),
                " must be positive, got ", chunk_sizes_[i]);
  }
  TORCH_CHECK(loss_fn_.defined(), "GradCache: the loss function is empty");
  TORCH_CHECK(options_.retain_chunks() >= -1, "GradCache: retain_chunks must be >= 0 (or -1: automatic), got ",
              options_.retain_chunks());
  TORCH_CHECK(options_.memory_budget() >= 0, "GradCache: memory_budget must be >= 0 bytes, got ",
              options_.memory_budget());
}

GradCache::GradCache(std::vector<Model> models, int64_t chunk_size, Loss loss_fn, GradCacheOptions options)
    : GradCache(std::move(models), std::vector<int64_t>{chunk_size}, std::move(loss_fn), std::move(options)) {}

at::Tensor GradCache::cache_step(const std::vector<ModelInput>& inputs, const LossArgs& loss_args) {
  const size_t n = models_.size();
  TORCH_CHECK(inputs.size() == n, "GradCache::cache_step: got ", inputs.size(), " inputs for ", n,
              " models; pass one input per model, in model order");

  std::vector<std::vector<ModelInput>> chunks(n);
  std::vector<c10::Device> devices;
  std::vector<at::Tensor> buffers;
  for (size_t i = 0; i < n; ++i) {
    try {
      chunks[i] = split_inputs(inputs[i], chunk_sizes_[i]);
    } catch (const c10::Error& e) {
      TORCH_CHECK(false, "GradCache::cache_step: input of ", model_label(i, models_[i]), ": ", e.what_without_backtrace());
    }
    TORCH_CHECK(!chunks[i].empty(), "GradCache::cache_step: splitting the input of ", model_label(i, models_[i]),
                " gave no chunk");
    devices = merge(devices, devices_of(inputs[i].tensors()));
    devices = merge(devices, devices_of(models_[i].parameters()));
    auto b = models_[i].buffers();
    buffers.insert(buffers.end(), b.begin(), b.end());
  }

  // Steps 1 and 2 touch only generators and buffers; if they fail, both are put back.
  detail::Rollback rollback(devices, buffers);
  budget_left_ = options_.memory_budget();
  std::vector<ForwardResult> forward(n);
  std::vector<at::Tensor> reps(n);
  for (size_t i = 0; i < n; ++i) {
    forward[i] = forward_no_grad(i, chunks[i]);
    reps[i] = forward[i].reps;
  }
  at::Tensor loss;
  const auto cache = build_cache(reps, loss_args, loss);
  rollback.commit();

  for (size_t i = 0; i < n; ++i) backward_retained(i, forward[i], cache[i]);
  for (size_t i = 0; i < n; ++i) forward_backward(i, chunks[i], forward[i], cache[i]);
  return loss;
}

std::vector<ModelInput> GradCache::split_inputs(const ModelInput& input, int64_t chunk_size) {
  if (options_.split_input_fn()) return options_.split_input_fn()(input, chunk_size);
  return split_input(input, chunk_size);
}

c10::IValue GradCache::model_call(const Model& model, const ModelInput& chunk) {
  if (options_.precision() == Precision::fp32) return model(chunk);
  // Autocast for the device the model computes on, from its parameters' and its input's devices.
  AutocastScope autocast(options_.precision(),
                         autocast_device(merge(devices_of(model.parameters()), devices_of(chunk.tensors()))));
  return model(chunk);
}

at::Tensor GradCache::representation(const Model& model, const ModelInput& chunk) {
  // fp32 for the loss and the cache; in the replay, the cast's backward brings the cached
  // gradient back to the representation's own dtype.
  return to_full_precision(get_reps(model_call(model, chunk)));
}

at::Tensor GradCache::get_reps(const c10::IValue& model_output) {
  if (options_.get_rep_fn()) return options_.get_rep_fn()(model_output);
  TORCH_CHECK(model_output.isTensor(), "GradCache: the model returned a ", model_output.tagKind(),
              ", not a tensor; pass GradCacheOptions().get_rep_fn(...) to pick the representation out of it");
  return model_output.toTensor();
}

std::vector<at::Tensor> GradCache::get_input_tensors(const ModelInput& chunk) { return chunk.tensors(); }

at::Tensor GradCache::compute_loss(const std::vector<at::Tensor>& reps, const LossArgs& loss_args) {
  return loss_fn_(reps, loss_args);
}

int64_t GradCache::retain_limit(size_t num_chunks) const {
  const auto n = static_cast<int64_t>(num_chunks);
  if (options_.retain_chunks() >= 0) return std::min(options_.retain_chunks(), n);
  return options_.memory_budget() > 0 ? n : std::min<int64_t>(1, n);
}

GradCache::ForwardResult GradCache::forward_no_grad(size_t model_index, const std::vector<ModelInput>& chunks) {
  const Model& model = models_[model_index];
  const auto parameter_devices = devices_of(model.parameters());
  const bool measure = options_.memory_budget() > 0;
  const c10::Device memory_device = parameter_devices.empty() ? c10::Device(c10::kCPU) : parameter_devices.front();
  TORCH_CHECK(!measure || memory_stats(memory_device).has_value(), "GradCache: memory_budget needs to measure ",
              "tensor memory on ", memory_device, "; on CPU call gradcache::CpuMemoryTracker::install() first");
  int64_t limit = retain_limit(chunks.size());
  double bytes_per_row = -1;  // measured on the first retained chunk

  ForwardResult result;
  std::vector<at::Tensor> reps;
  for (size_t c = 0; c < chunks.size(); ++c) {
    const auto& chunk = chunks[c];
    result.rng_states.push_back(RngState::capture(merge(parameter_devices, devices_of(get_input_tensors(chunk)))));
    const auto rows = chunk.batch_size();
    bool retain = static_cast<int64_t>(std::count(result.retained.begin(), result.retained.end(), true)) < limit;
    if (retain && measure && bytes_per_row >= 0 && rows) retain = bytes_per_row * *rows <= budget_left_;

    at::Tensor rep;
    if (retain) {
      c10::AutoGradMode with_grad(true);
      const int64_t before = memory_stats(memory_device).value_or(MemoryStats{}).current;
      rep = representation(model, chunk);
      if (measure) {
        const int64_t cost = memory_stats(memory_device).value_or(MemoryStats{}).current - before;
        if (rows && *rows > 0) bytes_per_row = static_cast<double>(cost) / *rows;
        if (cost > budget_left_) {  // the probe does not fit: drop its graph, replay it later
          retain = false;
          limit = 0;
          rep = rep.detach();
        } else {
          budget_left_ -= cost;
          result.retained_bytes += cost;
        }
      }
    } else {
      c10::NoGradGuard no_grad;
      rep = representation(model, chunk);
    }
    TORCH_CHECK(rep.defined() && rep.dim() >= 1 && rep.is_floating_point(), "GradCache: ",
                model_label(model_index, model),
                " must give a floating-point representation with a batch dimension, got ",
                rep.defined() ? rep.toString() + " of shape " + c10::str(rep.sizes()) : std::string("an undefined tensor"));
    TORCH_CHECK(!rows || rep.size(0) == *rows, "GradCache: ", model_label(model_index, model),
                " returned a representation with ", rep.size(0), " rows for a chunk of ", *rows,
                " rows; it must give one row per input row (dim 0)");
    TORCH_CHECK(!retain || rep.requires_grad(), "GradCache: ", model_label(model_index, model),
                " gave a representation without graph although it ran with grad; do its parameters require grad?");
    result.chunk_rows.push_back(rep.size(0));
    result.retained.push_back(retain);
    result.graphs.push_back(retain ? rep : at::Tensor());
    reps.push_back(rep.detach());
  }
  result.reps = reps.size() == 1 ? reps[0] : at::cat(reps, 0);
  return result;
}

std::vector<at::Tensor> GradCache::build_cache(const std::vector<at::Tensor>& reps, const LossArgs& loss_args,
                                               at::Tensor& loss_out) {
  std::vector<at::Tensor> leaves;
  for (const auto& r : reps) leaves.push_back(r.detach().requires_grad_(true));
  at::Tensor loss = compute_loss(leaves, loss_args);

  TORCH_CHECK(loss.defined(), "GradCache: the loss function returned an undefined tensor");
  TORCH_CHECK(loss.numel() == 1, "GradCache: the loss function must return a scalar, got shape ", loss.sizes());
  TORCH_CHECK(loss.requires_grad(), "GradCache: the loss does not depend on any representation (it has no graph); ",
              "compute it from the representations the loss function receives");
  const auto reached = leaves_reached(loss, leaves);
  for (size_t i = 0; i < leaves.size(); ++i) {
    TORCH_CHECK(reached[i], "GradCache: the loss does not use the representation of ", model_label(i, models_[i]),
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
  // With a scaler only this loss is scaled (checked above unscaled): the cached gradients
  // carry the scale into the replay; an fp16 overflow there shows up as inf gradients,
  // which the scaler's step skips.
  if (options_.scaler()) {
    options_.scaler()->scale(loss).backward();
  } else {
    loss.backward();
  }
  std::vector<at::Tensor> grads;
  for (const auto& leaf : leaves) grads.push_back(leaf.grad());
  loss_out = loss.detach().reshape({});
  return grads;
}

void GradCache::backward_retained(size_t model_index, ForwardResult& forward, const at::Tensor& cached_grads) {
  if (std::find(forward.retained.begin(), forward.retained.end(), true) == forward.retained.end()) return;
  const auto grads = cached_grads.split_with_sizes(forward.chunk_rows, 0);
  for (size_t c = 0; c < forward.graphs.size(); ++c) {
    if (!forward.retained[c]) continue;
    torch::autograd::backward({forward.graphs[c]}, {grads[c]});
    forward.graphs[c] = at::Tensor();  // frees the graph's activations now
  }
}

void GradCache::forward_backward(size_t model_index, const std::vector<ModelInput>& chunks,
                                 const ForwardResult& forward, const at::Tensor& cached_grads) {
  const Model& model = models_[model_index];
  std::vector<c10::Device> devices;
  for (const auto& state : forward.rng_states) devices = merge(devices, state.devices());
  if (std::find(forward.retained.begin(), forward.retained.end(), false) != forward.retained.end()) {
    RngStateGuard generators_as_left_by_step_1(devices);
    detail::BufferGuard buffers_updated_once(model.buffers());  // no second BatchNorm update
    c10::AutoGradMode with_grad(true);
    const auto grads = cached_grads.split_with_sizes(forward.chunk_rows, 0);
    for (size_t c = 0; c < chunks.size(); ++c) {
      if (forward.retained[c]) continue;  // done by backward_retained
      forward.rng_states[c].restore();
      at::Tensor rep = representation(model, chunks[c]);
      torch::autograd::backward({rep}, {grads[c]});
    }
  }
  on_model_backward_done(model_index);
}

void GradCache::on_model_backward_done(size_t /*model_index*/) {}

bool GradCache::last_use_of_module(size_t model_index) const {
  for (size_t j = model_index + 1; j < models_.size(); ++j) {
    if (models_[j].identity() == models_[model_index].identity()) return false;
  }
  return true;
}

}  // namespace gradcache
