// What one model is called with. GradCache splits it along dim 0 into chunks.
#pragma once

#include <ATen/core/ivalue.h>

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace gradcache {

/// The input of one model: positional arguments and keyword arguments, each a
/// TorchScript value (a tensor, or tuples/lists/dicts of them).
///
/// The implicit constructors mirror the inputs the reference accepts:
///   tensor x                       -> model(x)
///   std::vector<Tensor> xs         -> model(*xs)
///   std::map<std::string, Tensor>  -> model(**kw)
///   pair(vector, map)              -> model(*xs, **kw)
///   c10::IValue v                  -> model(v)   (v may be a nested tuple/list/dict)
/// How the arguments reach a model is described in model.h.
class ModelInput {
 public:
  using Kwargs = std::map<std::string, c10::IValue>;  // ordered: chunks list keys alike

  ModelInput() = default;
  ModelInput(at::Tensor x);                                  // NOLINT: implicit by design
  ModelInput(std::vector<at::Tensor> args);                  // NOLINT
  ModelInput(const std::map<std::string, at::Tensor>& kwargs);            // NOLINT
  ModelInput(const std::unordered_map<std::string, at::Tensor>& kwargs);  // NOLINT
  ModelInput(std::pair<std::vector<at::Tensor>, std::map<std::string, at::Tensor>> args_kwargs);  // NOLINT
  ModelInput(c10::IValue value);                             // NOLINT

  /// The general form: any positional and keyword TorchScript values.
  static ModelInput call(std::vector<c10::IValue> args, Kwargs kwargs = {});

  const std::vector<c10::IValue>& args() const { return args_; }
  const Kwargs& kwargs() const { return kwargs_; }

  /// Positional argument `i` as a tensor (checked).
  const at::Tensor& arg(size_t i) const;
  /// Keyword argument `name` as a tensor (checked).
  const at::Tensor& kwarg(const std::string& name) const;

  /// Every tensor it holds, depth first (positional, then keyword in key order).
  std::vector<at::Tensor> tensors() const;

  /// The number of rows (dim 0) shared by all its tensors; nullopt if it holds none.
  /// Throws, naming both, when two tensors disagree on dim 0 or one is a scalar.
  c10::optional<int64_t> batch_size() const;

 private:
  std::vector<c10::IValue> args_;
  Kwargs kwargs_;
};

}  // namespace gradcache
