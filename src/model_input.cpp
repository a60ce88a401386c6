#include <gradcache/model_input.h>

#include "detail/ivalue_walk.h"

#include <c10/util/Exception.h>

namespace gradcache {

ModelInput::ModelInput(at::Tensor x) : args_{std::move(x)} {}

ModelInput::ModelInput(std::vector<at::Tensor> args) : args_(args.begin(), args.end()) {}

ModelInput::ModelInput(const std::map<std::string, at::Tensor>& kwargs) : kwargs_(kwargs.begin(), kwargs.end()) {}

ModelInput::ModelInput(const std::unordered_map<std::string, at::Tensor>& kwargs)
    : kwargs_(kwargs.begin(), kwargs.end()) {}

ModelInput::ModelInput(std::pair<std::vector<at::Tensor>, std::map<std::string, at::Tensor>> args_kwargs)
    : args_(args_kwargs.first.begin(), args_kwargs.first.end()),
      kwargs_(args_kwargs.second.begin(), args_kwargs.second.end()) {}

ModelInput::ModelInput(c10::IValue value) : args_{std::move(value)} {}

ModelInput ModelInput::call(std::vector<c10::IValue> args, Kwargs kwargs) {
  ModelInput input;
  input.args_ = std::move(args);
  input.kwargs_ = std::move(kwargs);
  return input;
}

const at::Tensor& ModelInput::arg(size_t i) const {
  TORCH_CHECK(i < args_.size(), "ModelInput::arg: asked for positional argument ", i, " but the input has ",
              args_.size());
  TORCH_CHECK(args_[i].isTensor(), "ModelInput::arg: positional argument ", i, " is a ", args_[i].tagKind(),
              ", not a tensor");
  return args_[i].toTensor();
}

const at::Tensor& ModelInput::kwarg(const std::string& name) const {
  auto it = kwargs_.find(name);
  TORCH_CHECK(it != kwargs_.end(), "ModelInput::kwarg: no keyword argument '", name, "'");
  TORCH_CHECK(it->second.isTensor(), "ModelInput::kwarg: keyword argument '", name, "' is a ",
              it->second.tagKind(), ", not a tensor");
  return it->second.toTensor();
}

std::vector<at::Tensor> ModelInput::tensors() const {
  std::vector<at::Tensor> out;
  detail::for_each_tensor(*this, [&](const std::string&, const at::Tensor& t) { out.push_back(t); });
  return out;
}

c10::optional<int64_t> ModelInput::batch_size() const {
  c10::optional<int64_t> rows;
  std::string first;
  detail::for_each_tensor(*this, [&](const std::string& path, const at::Tensor& t) {
    TORCH_CHECK(t.dim() > 0, "the input's ", path, " is a scalar (0-dim) tensor: it has no dim 0 to split; ",
                "give it a batch dimension or pass a split function");
    if (!rows) {
      rows = t.size(0);
      first = path;
    } else {
      TORCH_CHECK(t.size(0) == *rows, "the input's tensors disagree on dim 0: ", first, " has ", *rows, " rows but ",
                  path, " has ", t.size(0), "; all tensors of one model input must share the batch dimension");
    }
  });
  return rows;
}

}  // namespace gradcache
