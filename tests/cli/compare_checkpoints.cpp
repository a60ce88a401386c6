// compare_checkpoints A B: whether two training checkpoints hold the same training state, bit
// for bit: the model's tensors, the AdamW state, the generator states and the progress. The
// files' bytes cannot be compared (the archive's metadata may differ); the tensors can, with
// torch::equal. For tests/cli/kill_resume_test.sh: exit 0 identical, 1 different, 2 unreadable.
// With --weights-within TOL: only the model's tensors, each element within TOL (absolute) of the
// other's: a data-parallel run sums its gradients in another order than one process, and AdamW
// turns those roundings into steps of up to ~1e-6 where a gradient is near zero, so a relative
// measure fails on small biases (tests/cli/nproc_test.sh).
#include "retriever/run/checkpoint.h"

#include <torch/torch.h>

#include <iostream>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

namespace gr = gradcache::retriever;

namespace {

struct NamedTensor {
  std::string name;
  torch::Tensor tensor;
};

// The key of a parameter's entry in an optimizer's state: its TensorImpl's address, printed as a
// string in LibTorch 1.13 (c10::guts::to_string, an ostream), the pointer itself in 2.x.
template <class State>
typename State::key_type state_key(const State&, const torch::Tensor& param) {
  if constexpr (std::is_same_v<typename State::key_type, std::string>) {
    std::ostringstream out;
    out << param.unsafeGetTensorImpl();
    return out.str();
  } else {
    return param.unsafeGetTensorImpl();
  }
}

// The AdamW state of each parameter, in parameter order, as the trainer restores it.
void add_optimizer_state(const std::string& path, gr::BiEncoder& model, std::vector<NamedTensor>& out) {
  torch::optim::AdamW optimizer(model.parameters(), torch::optim::AdamWOptions(1e-3));
  gr::load_training_state(path, optimizer, c10::Device(c10::kCPU));
  const auto& params = optimizer.param_groups().at(0).params();
  for (size_t i = 0; i < params.size(); ++i) {
    const auto it = optimizer.state().find(state_key(optimizer.state(), params[i]));
    const std::string name = "adamw[" + std::to_string(i) + "]";
    if (it == optimizer.state().end()) {
      out.push_back({name + " (no state)", torch::zeros({0})});
      continue;
    }
    const auto& s = static_cast<const torch::optim::AdamWParamState&>(*it->second);
    out.push_back({name + ".step", torch::tensor(s.step())});
    out.push_back({name + ".exp_avg", s.exp_avg()});
    out.push_back({name + ".exp_avg_sq", s.exp_avg_sq()});
  }
}

std::vector<NamedTensor> training_state(const std::string& path) {
  const auto info = gr::read_checkpoint_info(path);
  auto model = gr::load_model(path, info);
  std::vector<NamedTensor> out;
  for (auto& [name, t] : model.named_state()) out.push_back({"model." + name, t.clone()});
  add_optimizer_state(path, model, out);
  torch::serialize::InputArchive archive;
  archive.load_from(path);
  torch::Tensor rng;
  archive.read("rng_cpu", rng);
  out.push_back({"rng_cpu", rng});
  out.push_back({"progress", torch::tensor({info.progress.step, info.progress.epoch, info.progress.batch_in_epoch})});
  return out;
}

// The first difference, or "" when every tensor is equal (same dtype, shape and bits).
std::string first_difference(const std::vector<NamedTensor>& a, const std::vector<NamedTensor>& b) {
  if (a.size() != b.size()) return std::to_string(a.size()) + " vs " + std::to_string(b.size()) + " tensors";
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].name != b[i].name) return "tensor " + std::to_string(i) + " is " + a[i].name + " vs " + b[i].name;
    const auto &x = a[i].tensor, &y = b[i].tensor;
    if (x.scalar_type() != y.scalar_type() || x.sizes() != y.sizes()) return a[i].name + ": dtype or shape differs";
    if (!torch::equal(x, y)) {
      std::string what = a[i].name + " differs";
      if (x.is_floating_point()) what += " (max |a - b| " + std::to_string((x - y).abs().max().item<double>()) + ")";
      return what;
    }
  }
  return "";
}

// The first model tensor with an element more than `tolerance` away from the other's.
std::string first_weight_difference(const std::vector<NamedTensor>& a, const std::vector<NamedTensor>& b,
                                    double tolerance) {
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    if (a[i].name.rfind("model.", 0) != 0) continue;
    const auto x = a[i].tensor.to(torch::kFloat64), y = b[i].tensor.to(torch::kFloat64);
    if (a[i].name != b[i].name || x.sizes() != y.sizes()) return "tensor " + std::to_string(i) + " differs in name or shape";
    const double error = (x - y).abs().max().item<double>();
    if (error > tolerance) return a[i].name + " differs by up to " + std::to_string(error);
  }
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  const bool weights_only = argc == 5 && std::string(argv[1]) == "--weights-within";
  if (argc != 3 && !weights_only) {
    std::cerr << "usage: compare_checkpoints [--weights-within TOL] A.pt B.pt\n";
    return 2;
  }
  try {
    const auto a = training_state(argv[argc - 2]), b = training_state(argv[argc - 1]);
    const std::string difference =
        weights_only ? first_weight_difference(a, b, std::stod(argv[2])) : first_difference(a, b);
    if (!difference.empty()) {
      std::cout << "checkpoints differ: " << difference << "\n";
      return 1;
    }
    if (weights_only) {
      std::cout << "weights within " << argv[2] << "\n";
      return 0;
    }
    std::cout << "checkpoints identical: " << a.size() << " tensors (model, AdamW state, generators, progress)\n";
    return 0;
  } catch (const c10::Error& e) {
    std::cerr << "compare_checkpoints: " << e.what_without_backtrace() << "\n";
  } catch (const std::exception& e) {
    std::cerr << "compare_checkpoints: " << e.what() << "\n";
  }
  return 2;
}
