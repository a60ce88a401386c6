#include "retriever/run/frozen_base.h"

#include "retriever/files/error_message.h"
#include "retriever/model/encoders.h"
#include "retriever/model/pretrained.h"
#include "retriever/run/checkpoint.h"

#include <torch/torch.h>
#include <zlib.h>

#include <filesystem>
#include <map>
#include <unordered_set>

namespace gradcache {
namespace retriever {
namespace {

uint32_t crc_of(uint32_t crc, const torch::Tensor& t) {
  const auto bytes = t.detach().to(torch::kCPU).contiguous();
  const auto* data = static_cast<const Bytef*>(bytes.data_ptr());
  size_t left = static_cast<size_t>(bytes.numel()) * bytes.element_size();
  while (left > 0) {  // zlib takes at most 4 GiB a call
    const auto n = static_cast<uInt>(std::min<size_t>(left, 1u << 30));
    crc = static_cast<uint32_t>(crc32(crc, data, n));
    data += n;
    left -= n;
  }
  return crc;
}

// The type a record's digest is taken in: the held one ("bf16"), or each tensor's own.
torch::Tensor as_held(const torch::Tensor& t, const std::string& held_in) {
  if (held_in.empty()) return t;
  if (held_in == "bf16") return t.to(torch::kBFloat16);
  throw CheckpointError("a checkpoint's frozen weights were held in \"" + held_in +
                        "\", which this gradcache does not know: use the gradcache that wrote it");
}

// The prefix named_state puts before an untied encoder's names.
std::string unprefixed(const std::string& name, bool tied) {
  if (tied) return name;
  for (const std::string& prefix : {std::string("query."), std::string("passage.")}) {
    if (name.compare(0, prefix.size(), prefix) == 0) return name.substr(prefix.size());
  }
  return name;
}

}  // namespace

FrozenWeights frozen_weights(const BiEncoder& model, const std::string& base_dir) {
  FrozenWeights frozen;
  if (model.pretrained_encoders().empty()) return frozen;
  std::unordered_set<const void*> frozen_parameters;
  for (const auto& encoder : model.pretrained_encoders()) {
    for (const auto& p : encoder->parameters()) {
      if (p.requires_grad()) continue;
      frozen_parameters.insert(p.unsafeGetTensorImpl());
      if (p.scalar_type() == torch::kBFloat16) frozen.held_in = "bf16";  // --base-precision bf16
    }
  }
  if (frozen_parameters.empty()) return frozen;
  frozen.base_dir = std::filesystem::absolute(base_dir).lexically_normal().string();
  frozen.crc32 = static_cast<uint32_t>(crc32(0L, Z_NULL, 0));
  for (const auto& [name, t] : model.named_state()) {
    if (frozen_parameters.count(t.unsafeGetTensorImpl()) == 0) continue;
    frozen.names.push_back(name);
    frozen.crc32 = crc_of(frozen.crc32, as_held(t, frozen.held_in));
    frozen.numbers += t.numel();
  }
  return frozen;
}

void restore_frozen(BiEncoder& model, const FrozenWeights& frozen, const std::string& checkpoint) {
  if (frozen.names.empty()) return;
  const std::string where = "checkpoint " + checkpoint + " keeps its " + std::to_string(frozen.names.size()) +
                            " frozen weights in the base model " + frozen.base_dir;
  LoadedPretrained base;
  try {
    base = load_pretrained(frozen.base_dir);
  } catch (const std::exception& e) {
    throw CheckpointError(where + ", which cannot be read (" + error_message(e) +
                          "); put the model directory back where the run found it");
  }
  const auto base_weights = base.module->named_parameters();
  std::map<std::string, torch::Tensor> state;
  for (auto& [name, t] : model.named_state()) state[name] = t;
  torch::NoGradGuard no_grad;
  uint32_t crc = static_cast<uint32_t>(crc32(0L, Z_NULL, 0));
  for (const auto& name : frozen.names) {
    const auto it = state.find(name);
    const auto* from = base_weights.find(unprefixed(name, model.tied()));
    if (it == state.end() || from == nullptr || from->sizes() != it->second.sizes()) {
      throw CheckpointError(where + ", which has no weight " + name + " of its shape: it is another model");
    }
    it->second.copy_(*from);
    crc = crc_of(crc, as_held(it->second, frozen.held_in));
  }
  if (crc != frozen.crc32) {
    throw CheckpointError(where + ", whose weights have changed since the run (CRC-32 " + std::to_string(crc) +
                          ", trained on " + std::to_string(frozen.crc32) +
                          "); put back the model the run was trained on");
  }
}

nlohmann::json to_json(const FrozenWeights& f) {
  nlohmann::json j = {{"base_dir", f.base_dir}, {"names", f.names}, {"crc32", f.crc32}, {"numbers", f.numbers}};
  if (!f.held_in.empty()) j["held_in"] = f.held_in;
  return j;
}

FrozenWeights frozen_from_json(const nlohmann::json& j) {
  FrozenWeights f;
  f.base_dir = j.at("base_dir").get<std::string>();
  f.names = j.at("names").get<std::vector<std::string>>();
  f.crc32 = j.at("crc32").get<uint32_t>();
  f.numbers = j.at("numbers").get<int64_t>();
  f.held_in = j.value("held_in", std::string());
  return f;
}

}  // namespace retriever
}  // namespace gradcache
