#include <gradcache/rng_state.h>

#include <ATen/Context.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <mutex>

namespace gradcache {

RngState RngState::capture(const std::vector<c10::Device>& devices) {
  RngState state;
  auto add = [&state](const c10::Device& device) {
    for (const auto& [d, s] : state.states_) {
      if (d == device) return;
    }
    at::Generator generator = at::globalContext().defaultGenerator(device);
    std::lock_guard<std::mutex> lock(generator.mutex());
    state.states_.emplace_back(device, generator.get_state());
  };
  add(c10::Device(c10::kCPU));
  for (const auto& device : devices) {
    if (device.is_cpu()) continue;
    TORCH_CHECK(device.has_index(), "RngState::capture: device ", device, " has no index");
    add(device);
  }
  return state;
}

void RngState::restore() const {
  for (const auto& [device, s] : states_) {
    at::Generator generator = at::globalContext().defaultGenerator(device);
    std::lock_guard<std::mutex> lock(generator.mutex());
    generator.set_state(s);
  }
}

std::vector<c10::Device> RngState::devices() const {
  std::vector<c10::Device> out;
  for (const auto& entry : states_) out.push_back(entry.first);
  return out;
}

std::vector<c10::Device> devices_of(const std::vector<at::Tensor>& tensors) {
  std::vector<c10::Device> out;
  for (const auto& t : tensors) {
    if (!t.defined() || t.device().is_cpu()) continue;
    if (std::find(out.begin(), out.end(), t.device()) == out.end()) out.push_back(t.device());
  }
  return out;
}

}  // namespace gradcache
