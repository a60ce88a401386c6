// Calling a C++ function whose parameters are tensors (or other TorchScript-convertible
// types) with the TorchScript values of a ModelInput. Internal to model.h.
#pragma once

#include <gradcache/model_input.h>

#include <c10/util/Exception.h>

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace torch {
namespace nn {
class Module;
}  // namespace nn
}  // namespace torch

namespace gradcache {
namespace detail {

// Parameter and return types of a callable with one non-template call operator,
// a member function pointer or a function pointer.
template <class T, class = void>
struct Signature {
  static constexpr bool known = false;
};
template <class R, class... A>
struct Signature<R (*)(A...)> {
  static constexpr bool known = true;
  using Return = R;
  using Args = std::tuple<A...>;
};
template <class R, class C, class... A>
struct Signature<R (C::*)(A...)> : Signature<R (*)(A...)> {};
template <class R, class C, class... A>
struct Signature<R (C::*)(A...) const> : Signature<R (*)(A...)> {};
template <class F>
struct Signature<F, std::void_t<decltype(&F::operator())>> : Signature<decltype(&F::operator())> {};

// Whether `&M::forward` names one function (not a template or an overload set).
template <class M, class = void>
struct HasPlainForward : std::false_type {};
template <class M>
struct HasPlainForward<M, std::void_t<decltype(&M::forward)>> : std::true_type {};

// Whether T is a torch::nn module as Model takes one: a module holder or AnyModule (ptr()
// hands out the module), a shared_ptr to a module, or a module itself (passed by reference).
// Model and the functional API recognise modules through this one trait.
template <class T, class = void>
struct HasModulePtr : std::false_type {};
template <class T>
struct HasModulePtr<T, std::void_t<decltype(std::declval<const T&>().ptr())>>
    : std::is_base_of<torch::nn::Module,
                      typename std::decay_t<decltype(std::declval<const T&>().ptr())>::element_type> {};
template <class T>
struct IsModule : std::disjunction<HasModulePtr<T>, std::is_base_of<torch::nn::Module, T>> {};
template <class M>
struct IsModule<std::shared_ptr<M>> : std::is_base_of<torch::nn::Module, M> {};

/// The module behind anything IsModule accepts.
template <class T>
std::shared_ptr<torch::nn::Module> module_ptr(const T& m) {
  if constexpr (HasModulePtr<T>::value) {
    return std::static_pointer_cast<torch::nn::Module>(m.ptr());
  } else if constexpr (std::is_base_of_v<torch::nn::Module, T>) {
    return const_cast<T&>(m).shared_from_this();
  } else {
    return std::static_pointer_cast<torch::nn::Module>(m);
  }
}

// Whether F can be a callable model (checked lazily: a module holder's operator() is not
// SFINAE-friendly, so holders must be excluded before invocability is asked).
template <class F>
struct IsCallableModel
    : std::disjunction<std::is_invocable<F&, const ModelInput&>, std::bool_constant<Signature<F>::known>> {};

/// Throws c10::Error (TORCH_CHECK, as the rest of the library): "WHO: WHAT".
[[noreturn]] void throw_call_error(const std::string& who, const std::string& what);

/// The values a ModelInput passes to a C++ function: the positional arguments, then, if
/// there are keyword arguments, one more argument holding them as a dict.
std::vector<c10::IValue> call_values(const ModelInput& input);

template <class P>
P from_ivalue(const c10::IValue& v, const std::string& who, size_t index) {
  try {
    if constexpr (std::is_same_v<P, c10::IValue>) {
      return v;
    } else if constexpr (std::is_same_v<P, at::Tensor>) {
      TORCH_CHECK(v.isTensor(), "expected a tensor, got a value of type ", v.tagKind());
      return v.toTensor();
    } else if constexpr (std::is_same_v<P, std::map<std::string, at::Tensor>>) {
      TORCH_CHECK(v.isGenericDict(), "expected a dict of tensors, got ", v.tagKind());
      P out;
      for (const auto& kv : v.toGenericDict()) out.emplace(kv.key().toStringRef(), kv.value().toTensor());
      return out;
    } else {
      return v.to<P>();
    }
  } catch (const c10::Error& e) {
    throw_call_error(who, "argument " + std::to_string(index) + ": " + e.what_without_backtrace());
  } catch (const std::exception& e) {
    throw_call_error(who, "argument " + std::to_string(index) + ": " + e.what());
  }
}

template <class R>
c10::IValue to_ivalue(R&& r) {
  if constexpr (std::is_same_v<std::decay_t<R>, c10::IValue>) {
    return std::forward<R>(r);
  } else {
    return c10::IValue(std::forward<R>(r));
  }
}

template <class F, class... A, size_t... I>
c10::IValue invoke_impl(F& f, const std::vector<c10::IValue>& values, const std::string& who,
                        std::index_sequence<I...>) {
  return to_ivalue(f(from_ivalue<std::decay_t<A>>(values[I], who, I)...));
}

/// Calls `f`, whose parameters are `Args` (a std::tuple of types), with `input`,
/// converting each TorchScript value to its parameter's type. `who` names f in errors.
template <class F, class Args>
struct IValueInvoker;
template <class F, class... A>
struct IValueInvoker<F, std::tuple<A...>> {
  static c10::IValue call(F& f, const ModelInput& input, const std::string& who) {
    const auto values = call_values(input);
    if (values.size() != sizeof...(A)) {
      throw_call_error(who, "takes " + std::to_string(sizeof...(A)) + " argument(s) but the input gives " +
                                std::to_string(values.size()) +
                                " (keyword inputs reach a C++ function as one trailing dict argument)");
    }
    return invoke_impl<F, A...>(f, values, who, std::index_sequence_for<A...>{});
  }
};

/// How Model calls a module or a callable with a ModelInput.
using ModelForward = std::function<c10::IValue(const ModelInput&)>;

template <class M>
ModelForward module_forward(std::shared_ptr<M> module) {
  if constexpr (HasPlainForward<M>::value) {
    using Args = typename Signature<decltype(&M::forward)>::Args;
    return [module](const ModelInput& input) {
      auto call = [&module](auto&&... a) { return module->forward(std::forward<decltype(a)>(a)...); };
      return IValueInvoker<decltype(call), Args>::call(call, input, "forward of " + module->name());
    };
  } else {
    // A templated forward, e.g. torch::nn::Sequential: one tensor in.
    return [module](const ModelInput& input) {
      auto call = [&module](const at::Tensor& x) { return module->forward(x); };
      return IValueInvoker<decltype(call), std::tuple<at::Tensor>>::call(call, input, "forward of " + module->name());
    };
  }
}

template <class F>
ModelForward callable_forward(F fn) {
  if constexpr (std::is_invocable_v<F&, const ModelInput&>) {
    return [fn = std::move(fn)](const ModelInput& input) mutable { return to_ivalue(fn(input)); };
  } else {
    using Args = typename Signature<F>::Args;
    return [fn = std::move(fn)](const ModelInput& input) mutable {
      return IValueInvoker<F, Args>::call(fn, input, "callable model");
    };
  }
}

}  // namespace detail
}  // namespace gradcache
