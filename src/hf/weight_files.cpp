// Finding and reading the weight files of a Hugging Face model directory.
#include <gradcache/hf/transformer.h>

#include "hf/model_json.h"

#include <torch/serialize.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>

namespace gradcache {
namespace hf {
namespace {

namespace fs = std::filesystem;

// The first line of a LibTorch message, ASCII only (it may quote bytes of the file).
std::string first_line_ascii(const std::string& message) {
  std::string out;
  for (char c : message) {
    if (c == '\n') break;
    if (static_cast<unsigned char>(c) >= 0x20 && static_cast<unsigned char>(c) < 0x7f) out += c;
  }
  return out.size() > 300 ? out.substr(0, 300) + "..." : out;
}

NamedTensors read_sharded(const std::string& index_file, const std::string& dir) {
  const detail::Json index = detail::parse_json(detail::read_text_file(index_file), index_file);
  detail::require_object(index, index_file);
  auto map = index.find("weight_map");
  if (map == index.end() || !map->is_object()) throw ModelFileError(index_file, "has no \"weight_map\" object");
  std::set<std::string> shards;
  for (const auto& item : map->items()) {
    const std::string shard = item.value().is_string() ? item.value().get<std::string>() : "";
    if (shard.empty() || fs::path(shard).has_parent_path() || shard == "." || shard == "..")
      throw ModelFileError(index_file, "\"weight_map\" entry " + detail::quoted(item.key()) + " must name a file of the directory");
    shards.insert(shard);
  }
  NamedTensors all;
  for (const std::string& shard : shards) {
    SafetensorsContents contents = read_safetensors((fs::path(dir) / shard).string());
    for (auto& entry : contents.tensors) all.push_back(std::move(entry));
  }
  return all;
}

}  // namespace

NamedTensors read_pytorch_bin(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ModelFileError(path, "missing or unreadable");
  const std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string convert =
      "; convert it to model.safetensors in Python: safetensors.torch.save_file(dict(torch.load(path)), "
      "'model.safetensors', metadata={'format': 'pt'})";
  c10::IValue value;
  try {
    value = torch::pickle_load(bytes);
  } catch (const c10::Error& error) {
    const std::string message = error.what_without_backtrace();
    // LibTorch's unpickler turns collections.OrderedDict into None (it expects one only as a
    // tensor's unused backward hooks), so the state_dict() that transformers saves cannot be read.
    if (message.find("GenericDict but got None") != std::string::npos)
      throw ModelFileError(path, "holds an OrderedDict (a state_dict() as transformers saves it), which LibTorch's unpickler "
                                 "cannot read (only a plain dict)" + convert);
    throw ModelFileError(path, "LibTorch cannot read it (" + first_line_ascii(message) + ")" + convert);
  }
  if (!value.isGenericDict()) throw ModelFileError(path, "holds a " + std::string(value.tagKind()) + ", not a state dict");
  NamedTensors tensors;
  for (const auto& item : value.toGenericDict()) {
    if (!item.key().isString() || !item.value().isTensor())
      throw ModelFileError(path, "is not a state dict: it maps " + std::string(item.key().tagKind()) + " to " +
                                     std::string(item.value().tagKind()));
    tensors.emplace_back(item.key().toStringRef(), item.value().toTensor());
  }
  return tensors;
}

NamedTensors read_weights(const std::string& dir, std::string* file_out) {
  const fs::path root(dir);
  for (const char* name : {"model.safetensors", "model.safetensors.index.json", "pytorch_model.bin"}) {
    const std::string path = (root / name).string();
    if (!fs::exists(path)) continue;
    if (file_out != nullptr) *file_out = path;
    if (name == std::string("model.safetensors")) return read_safetensors(path).tensors;
    if (name == std::string("pytorch_model.bin")) return read_pytorch_bin(path);
    return read_sharded(path, dir);
  }
  throw ModelFileError(dir, "has no weights: model.safetensors, model.safetensors.index.json or pytorch_model.bin");
}

}  // namespace hf
}  // namespace gradcache
