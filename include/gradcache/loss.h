// The loss interface: representations in model order plus named extra arguments.
#pragma once

#include <ATen/core/ivalue.h>

#include <functional>
#include <initializer_list>
#include <map>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace gradcache {

/// Named extra arguments of a loss: the reference's `**loss_kwargs`.
/// E.g. `{{"reduction", "sum"}, {"target", targets}}`.
class LossArgs {
 public:
  LossArgs() = default;
  LossArgs(std::initializer_list<std::pair<const std::string, c10::IValue>> args) : args_(args) {}

  bool has(const std::string& name) const { return args_.count(name) > 0; }
  bool empty() const { return args_.empty(); }
  /// The argument `name`; throws naming it when absent.
  const c10::IValue& at(const std::string& name) const;
  LossArgs& set(const std::string& name, c10::IValue value);

  /// Typed access with a default; throws when present with another type.
  std::string get_string(const std::string& name, const std::string& fallback) const;
  double get_double(const std::string& name, double fallback) const;
  at::Tensor get_tensor(const std::string& name) const;  // undefined when absent

  const std::map<std::string, c10::IValue>& items() const { return args_; }

 private:
  std::map<std::string, c10::IValue> args_;
};

/// For two-model losses: throws, naming `who`, unless `reps` holds exactly two tensors.
void check_two_reps(const std::vector<at::Tensor>& reps, const char* who);

/// The canonical loss form (see Loss) of a loss of a query and a passage representation,
/// written once: `Derived` has operator()(q, p, args) and name(); reps = {q, p}.
template <class Derived>
class QueryPassageLoss {
 public:
  at::Tensor operator()(const std::vector<at::Tensor>& reps, const LossArgs& args) const {
    const auto& self = static_cast<const Derived&>(*this);
    check_two_reps(reps, self.name());
    return self(reps[0], reps[1], args);
  }
};

/// A loss over the representations of all models, in model order. Accepted callables:
///   Tensor(const std::vector<Tensor>& reps, const LossArgs& args)   // the canonical form
///   Tensor(const Tensor& q, const Tensor& p)                         // two models, no arguments
/// The built-in losses (SimpleContrastiveLoss, ...) have the canonical form. The loss must
/// return a scalar and must not modify the representations in place.
class Loss {
 public:
  using Fn = std::function<at::Tensor(const std::vector<at::Tensor>&, const LossArgs&)>;

  Loss() = default;
  template <class F, std::enable_if_t<!std::is_same_v<std::decay_t<F>, Loss>, int> = 0>
  Loss(F f) : fn_(adapt(std::move(f))) {}  // NOLINT: implicit by design

  at::Tensor operator()(const std::vector<at::Tensor>& reps, const LossArgs& args = {}) const;
  bool defined() const { return static_cast<bool>(fn_); }

 private:
  // Checks what the (q, p) form cannot take: other than two representations, or arguments.
  static void check_pair_call(const std::vector<at::Tensor>& reps, const LossArgs& args);

  template <class F>
  static Fn adapt(F f) {
    using Reps = const std::vector<at::Tensor>&;
    if constexpr (std::is_invocable_r_v<at::Tensor, F&, Reps, const LossArgs&>) {
      return f;
    } else {
      static_assert(std::is_invocable_r_v<at::Tensor, F&, const at::Tensor&, const at::Tensor&>,
                    "gradcache::Loss: a loss takes (const std::vector<Tensor>& reps, const LossArgs& args) or "
                    "(const Tensor& q, const Tensor& p)");
      return [f = std::move(f)](Reps reps, const LossArgs& args) mutable {
        check_pair_call(reps, args);
        return f(reps[0], reps[1]);
      };
    }
  }

  Fn fn_;
};

}  // namespace gradcache
