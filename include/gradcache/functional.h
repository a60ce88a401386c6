// The functional API (the reference's grad_cache.functional): cached(), cat_input_tensor() and,
// with torch.distributed, gather_input_tensor().
#pragma once

#include <gradcache/model.h>
#include <gradcache/model_call.h>
#include <gradcache/model_input.h>
#include <gradcache/precision.h>
#include <gradcache/rng_state.h>

#include <c10/core/GradMode.h>

#ifdef GRADCACHE_WITH_DISTRIBUTED
#include <gradcache/distributed.h>
#endif

#include <functional>
#include <memory>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace gradcache {
namespace functional {
namespace detail {

// What a call touches: tensors whose devices' generators are recorded, and buffers
// (BatchNorm statistics) that the replay must not update a second time.
struct CallState {
  std::vector<at::Tensor> tensors;
  std::vector<at::Tensor> buffers;

  void add_tensor(const at::Tensor& t) { tensors.push_back(t); }
  void add_input(const ModelInput& input);
  void add_module(const std::shared_ptr<torch::nn::Module>& module);
  void add_module(const torch::jit::Module& module);
  void add_model(const Model& model);
};

// Modules are recognised as Model recognises them (detail::IsModule): the devices of their
// parameters are recorded, their buffers protected. Other arguments without a visible
// tensor record nothing.
template <class T>
void add_arg(CallState& state, const T& arg) {
  if constexpr (std::is_same_v<T, at::Tensor>) {
    state.add_tensor(arg);
  } else if constexpr (std::is_same_v<T, Model>) {
    state.add_model(arg);
  } else if constexpr (std::is_same_v<T, torch::jit::Module>) {
    state.add_module(arg);
  } else if constexpr (gradcache::detail::IsModule<T>::value) {
    state.add_module(gradcache::detail::module_ptr(arg));
  } else if constexpr (std::is_convertible_v<const T&, const ModelInput&>) {
    state.add_input(arg);  // vectors and maps of tensors, IValues
  }
}
template <class T>
void add_arg(CallState& state, const std::reference_wrapper<T>& arg) {
  add_arg(state, static_cast<const std::decay_t<T>&>(arg.get()));
}

// The representation types a cached function may return.
template <class R>
struct Reps {
  static_assert(sizeof(R) == 0,
                "gradcache::functional::cached: the function must return a Tensor, a std::vector<Tensor> "
                "or a std::tuple of Tensors");
};
// Leaves are fp32 (to_full_precision): the loss and the gradients it caches are fp32.
template <>
struct Reps<at::Tensor> {
  static std::vector<at::Tensor> flatten(const at::Tensor& r) { return {r}; }
  static at::Tensor leaves(const at::Tensor& r) { return to_full_precision(r.detach()).requires_grad_(true); }
};
template <>
struct Reps<std::vector<at::Tensor>> {
  static std::vector<at::Tensor> flatten(const std::vector<at::Tensor>& r) { return r; }
  static std::vector<at::Tensor> leaves(const std::vector<at::Tensor>& r) {
    std::vector<at::Tensor> out;
    for (const auto& t : r) out.push_back(Reps<at::Tensor>::leaves(t));
    return out;
  }
};
template <class... T>
struct Reps<std::tuple<T...>> {
  static std::vector<at::Tensor> flatten(const std::tuple<T...>& r) {
    return std::apply([](const auto&... t) { return std::vector<at::Tensor>{t...}; }, r);
  }
  static std::tuple<T...> leaves(const std::tuple<T...>& r) {
    return std::apply([](const auto&... t) { return std::tuple<T...>{Reps<at::Tensor>::leaves(t)...}; }, r);
  }
};

at::Tensor cat_rows(const std::vector<at::Tensor>& tensors);

template <class T>
decltype(auto) cat_if_list(T&& arg) {
  if constexpr (std::is_same_v<std::decay_t<T>, std::vector<at::Tensor>>) {
    return cat_rows(arg);
  } else {
    return std::forward<T>(arg);
  }
}

}  // namespace detail

/// The closure returned with cached representations: call it (once) with those
/// representations after the loss has been backpropagated into them. It replays the
/// function with grad under the generator states recorded before the first call and
/// backpropagates the representations' gradients into the parameters. Generators and
/// buffers are left as they were before the replay.
class Replay {
 public:
  using Forward = std::function<std::vector<at::Tensor>()>;
  Replay(Forward forward, RngState rng_state, std::vector<c10::Device> devices, std::vector<at::Tensor> buffers)
      : forward_(std::move(forward)),
        rng_state_(std::move(rng_state)),
        devices_(std::move(devices)),
        buffers_(std::move(buffers)) {}

  template <class R>
  void operator()(const R& reps) const {
    run(detail::Reps<R>::flatten(reps));
  }
  void run(const std::vector<at::Tensor>& reps) const;

 private:
  Forward forward_;
  RngState rng_state_;
  std::vector<c10::Device> devices_;
  std::vector<at::Tensor> buffers_;
};

/// Makes a model-calling function cache-compatible (the reference's @cached):
///
///   auto call_model = cached([](Encoder& m, const Tensor& x) { return m->forward(x); });
///   auto [rep, replay] = call_model(encoder, x);  // rep: a leaf that requires grad
///   ... loss over many such reps ...; loss.backward();
///   replay(rep);                                  // parameter gradients accumulate
///
/// The call runs under no-grad after recording the CPU generator and the generators of the
/// devices of its tensor and module arguments. `fn` may return a Tensor, a
/// std::vector<Tensor> or a std::tuple of Tensors. The arguments are kept (by value; pass
/// std::ref to keep a reference) until the replay.
///
/// With `precision` bf16 or fp16, both calls (the first and the replay) run under their own
/// autocast scope for the device its tensor and module arguments live on; the returned
/// representations are fp32 whatever the function computes in.
template <class Fn>
auto cached(Fn fn, Precision precision = Precision::fp32) {
  return [fn = std::move(fn), precision](auto&&... args) {
    using R = std::decay_t<decltype(fn(args...))>;
    detail::CallState state;
    (detail::add_arg(state, args), ...);
    auto devices = devices_of(state.tensors);
    auto rng_state = RngState::capture(devices);
    R out = [&] {
      c10::NoGradGuard no_grad;
      return call_in_precision(precision, devices, [&] { return fn(args...); });
    }();
    auto saved_args = std::make_shared<std::tuple<std::decay_t<decltype(args)>...>>(args...);
    Replay::Forward forward = [fn, saved_args, precision, devices]() {
      auto outputs = detail::Reps<R>::flatten(
          call_in_precision(precision, devices, [&] { return std::apply(fn, *saved_args); }));
      for (auto& t : outputs) t = to_full_precision(t);  // matches the fp32 gradients of the leaves
      return outputs;
    };
    return std::make_pair(detail::Reps<R>::leaves(out),
                          Replay(std::move(forward), std::move(rng_state), std::move(devices), std::move(state.buffers)));
  };
}

/// Wraps a loss so that each std::vector<Tensor> argument is concatenated along dim 0 first
/// (the reference's @cat_input_tensor); other arguments pass through.
template <class LossFn>
auto cat_input_tensor(LossFn fn) {
  return [fn = std::move(fn)](auto&&... args) {
    return fn(detail::cat_if_list(std::forward<decltype(args)>(args))...);
  };
}

#ifdef GRADCACHE_WITH_DISTRIBUTED
/// Wraps a loss so that each Tensor argument is replaced by the concatenation, along `axis`,
/// of that argument on every rank of `group` (the reference's @gather_input_tensor); other
/// arguments pass through. Differentiable: the backward keeps the gradient of this rank's
/// slice, so with every rank computing the same loss over the gathered tensors, each rank's
/// representations get exactly their share, and summing the parameter gradients over the
/// ranks (distributed::GradientSynchronizer) gives those of one process with all the data.
/// Sizes along `axis` may differ between ranks; the other dimensions must agree.
///
///   auto loss_fn = cat_input_tensor(gather_input_tensor(group, contrastive_loss));
template <class LossFn>
auto gather_input_tensor(distributed::ProcessGroup group, LossFn fn, int64_t axis = 0) {
  return [group = std::move(group), fn = std::move(fn), axis](auto&&... args) {
    auto gather = [&](auto&& arg) -> decltype(auto) {
      if constexpr (std::is_same_v<std::decay_t<decltype(arg)>, at::Tensor>) {
        return distributed::gather_rows(group, arg.movedim(axis, 0)).movedim(0, axis);
      } else {
        return std::forward<decltype(arg)>(arg);
      }
    };
    return fn(gather(std::forward<decltype(args)>(args))...);
  };
}
#endif

}  // namespace functional
}  // namespace gradcache
