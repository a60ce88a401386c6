#include <gradcache/loss.h>

#include <c10/util/Exception.h>

namespace gradcache {

const c10::IValue& LossArgs::at(const std::string& name) const {
  auto it = args_.find(name);
  TORCH_CHECK(it != args_.end(), "LossArgs: no argument '", name, "'");
  return it->second;
}

LossArgs& LossArgs::set(const std::string& name, c10::IValue value) {
  args_[name] = std::move(value);
  return *this;
}

std::string LossArgs::get_string(const std::string& name, const std::string& fallback) const {
  if (!has(name)) return fallback;
  const auto& v = at(name);
  TORCH_CHECK(v.isString(), "LossArgs: '", name, "' must be a string, got a ", v.tagKind());
  return v.toStringRef();
}

double LossArgs::get_double(const std::string& name, double fallback) const {
  if (!has(name)) return fallback;
  const auto& v = at(name);
  TORCH_CHECK(v.isDouble() || v.isInt(), "LossArgs: '", name, "' must be a number, got a ", v.tagKind());
  return v.isDouble() ? v.toDouble() : static_cast<double>(v.toInt());
}

at::Tensor LossArgs::get_tensor(const std::string& name) const {
  if (!has(name)) return {};
  const auto& v = at(name);
  TORCH_CHECK(v.isTensor(), "LossArgs: '", name, "' must be a tensor, got a ", v.tagKind());
  return v.toTensor();
}

at::Tensor Loss::operator()(const std::vector<at::Tensor>& reps, const LossArgs& args) const {
  TORCH_CHECK(fn_, "gradcache::Loss: called an empty loss");
  return fn_(reps, args);
}

void check_two_reps(const std::vector<at::Tensor>& reps, const char* who) {
  TORCH_CHECK(reps.size() == 2, who, ": takes 2 representations (q, p), one per model, but got ", reps.size());
}

void Loss::check_pair_call(const std::vector<at::Tensor>& reps, const LossArgs& args) {
  TORCH_CHECK(reps.size() == 2, "gradcache::Loss: this loss takes 2 representations (q, p) but got ", reps.size(),
              "; give it the signature (const std::vector<Tensor>& reps, const LossArgs& args) for other counts");
  if (args.empty()) return;
  TORCH_CHECK(false, "gradcache::Loss: this loss takes no extra arguments but got '", args.items().begin()->first,
              "'; give the loss the signature (const std::vector<Tensor>& reps, const LossArgs& args) to receive them");
}

}  // namespace gradcache
