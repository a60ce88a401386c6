// One encoder, whatever its kind: a torch::nn module, an AnyModule, a TorchScript module
// or any callable. GradCache and the functional API call models only through this type.
#pragma once

#include <gradcache/detail/invoke.h>
#include <gradcache/model_input.h>

#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

namespace torch {
namespace nn {
class Module;
class AnyModule;
template <typename Contained>
class ModuleHolder;
}  // namespace nn
namespace jit {
struct Module;
}  // namespace jit
}  // namespace torch

namespace gradcache {

/// A type-erased encoder. Copies share the underlying module.
///
/// How a ModelInput reaches each kind of model:
/// - torch::nn module (holder or shared_ptr) and any non-generic callable: its parameters
///   receive the positional arguments in order, then, if there are keyword arguments, one
///   trailing dict argument (`std::map<std::string, Tensor>`, `c10::Dict` or `c10::IValue`).
///   Each value is converted to the parameter's type (`Tensor`, `std::vector<Tensor>`, ...).
///   `torch::nn::Sequential` takes one tensor.
/// - a callable taking `const ModelInput&` receives the input as it is.
/// - torch::jit::Module: `forward(args, kwargs)`, keyword arguments by name.
/// - torch::nn::AnyModule: positional tensors only.
/// The result may be a tensor or anything convertible to a TorchScript value (a tuple of
/// tensors, ...): GradCacheOptions::get_rep_fn then picks the representation.
///
/// For a callable, `with_state_of(module)` names the module whose parameters and buffers the
/// callable uses: GradCache then protects its buffers (BatchNorm statistics) from being
/// updated twice, and finds the devices whose random generators it must replay.
class Model {
 public:
  using Forward = detail::ModelForward;

  Model() = default;

  template <class M, std::enable_if_t<std::is_base_of_v<torch::nn::Module, M>, int> = 0>
  Model(std::shared_ptr<M> module)  // NOLINT: implicit by design
      : Model(detail::module_forward(module), std::static_pointer_cast<torch::nn::Module>(module)) {}

  template <class M>
  Model(const torch::nn::ModuleHolder<M>& holder)  // NOLINT
      : Model(holder.ptr()) {}

  Model(const torch::nn::AnyModule& module);  // NOLINT
  Model(const torch::jit::Module& module);    // NOLINT

  template <class F, std::enable_if_t<std::conjunction_v<std::negation<std::is_base_of<Model, std::decay_t<F>>>,
                                                         std::negation<detail::IsModule<std::decay_t<F>>>,
                                                         detail::IsCallableModel<std::decay_t<F>>>,
                                      int> = 0>
  Model(F fn)  // NOLINT
      : Model(detail::callable_forward(std::move(fn)), "callable") {}

  /// Calls the model.
  c10::IValue operator()(const ModelInput& input) const;

  /// Parameters and buffers of the underlying module (empty for a bare callable).
  std::vector<at::Tensor> parameters() const;
  std::vector<at::Tensor> buffers() const;

  /// For callables: the module whose parameters and buffers the callable uses.
  Model& with_state_of(std::shared_ptr<torch::nn::Module> module);
  Model& with_state_of(const torch::jit::Module& module);
  template <class M>
  Model& with_state_of(const torch::nn::ModuleHolder<M>& holder) {
    return with_state_of(std::static_pointer_cast<torch::nn::Module>(holder.ptr()));
  }

  /// A readable name for messages, e.g. "EncoderImpl" or "callable".
  const std::string& name() const;
  /// Identifies the underlying module: a module passed twice (tied encoders) has one identity.
  const void* identity() const;
  bool defined() const { return impl_ != nullptr; }

 private:
  struct Impl;
  Model(Forward forward, std::shared_ptr<torch::nn::Module> module);
  Model(Forward forward, std::string name);

  std::shared_ptr<Impl> impl_;
};

}  // namespace gradcache
