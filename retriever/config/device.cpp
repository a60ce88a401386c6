#include "retriever/config/device.h"

#include <c10/core/Device.h>
#include <c10/util/Exception.h>
#include <torch/cuda.h>

#include <optional>
#include <string>

namespace gradcache {
namespace retriever {

SettingCheck existing_device() {
  return [](const nlohmann::json& value) -> std::string {
    const auto name = value.get<std::string>();
    std::optional<c10::Device> device;
    try {
      device.emplace(name);
    } catch (const c10::Error&) {  // the requirement below says what a name looks like
    }
    // Only these two: the trainer's memory tracking, generators and autocast know no others.
    if (!device || (!device->is_cpu() && !device->is_cuda())) return "must be cpu, cuda or cuda:N";
    if (device->is_cpu()) return device->has_index() && device->index() != 0 ? "must be cpu, cuda or cuda:N" : "";
    if (!torch::cuda::is_available()) {
      return "names a GPU, but CUDA is not available (a LibTorch built for the CPU only, or no GPU visible); "
             "use --device cpu";
    }
    const auto count = static_cast<int64_t>(torch::cuda::device_count());
    if (device->has_index() && device->index() >= count) {
      return "names a GPU that is not there (" + std::to_string(count) + " visible: cuda:0 to cuda:" +
             std::to_string(count - 1) + ")";
    }
    return "";
  };
}

}  // namespace retriever
}  // namespace gradcache
