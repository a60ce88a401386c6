// Finding and reading the weight files of a Hugging Face model directory.
#include <gradcache/hf/stored_weights.h>
#include <gradcache/hf/transformer.h>

#include "files/atomic_file.h"
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

// The shard files model.safetensors.index.json names (each once, in name order).
std::set<std::string> shard_files(const std::string& index_file) {
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
  return shards;
}

}  // namespace

NamedTensors read_pytorch_bin(const std::string& path) {
  if (const auto problem = files::regular_file_problem(path); !problem.empty())
    throw ModelFileError(path, problem);
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
    const at::Tensor& tensor = item.value().toTensor();
    // The format has no checksum (safetensors files are checked by their header's sizes; a
    // checkpoint by its CRCs): a NaN or infinite weight would train and encode NaN without a word.
    if (tensor.is_floating_point() && !tensor.isfinite().all().item<bool>())
      throw ModelFileError(path, "its tensor " + detail::quoted(item.key().toStringRef()) +
                                     " holds NaN or infinite values: the file is damaged, or the model diverged");
    tensors.emplace_back(item.key().toStringRef(), tensor);
  }
  return tensors;
}

/// A stored tensor: in an open safetensors file, or in memory.
struct StoredWeights::Stored {
  Description description;
  std::shared_ptr<const SafetensorsFile> file;
  const SafetensorsEntry* entry = nullptr;  ///< in file->header()
  at::Tensor tensor;                        ///< when in memory
};

StoredWeights::StoredWeights(const NamedTensors& tensors, std::string file) : file_(std::move(file)) {
  stored_ = std::make_shared<std::map<std::string, Stored>>();
  for (const auto& [name, tensor] : tensors) {
    Stored stored;
    stored.description = {tensor.scalar_type(), tensor.sizes().vec()};
    stored.tensor = tensor;
    add(name, std::move(stored));
  }
}

void StoredWeights::add(const std::string& name, Stored stored) {
  if (!stored_->emplace(name, std::move(stored)).second)
    throw ModelFileError(file_, "holds the tensor " + detail::quoted(name) + " twice (in two shards?)");
  order_.push_back(name);
}

StoredWeights StoredWeights::open(const std::string& dir) {
  const fs::path root(dir);
  for (const char* name : {"model.safetensors", "model.safetensors.index.json", "pytorch_model.bin"}) {
    const std::string path = (root / name).string();
    if (!fs::exists(path)) continue;
    if (name == std::string("pytorch_model.bin")) return StoredWeights(read_pytorch_bin(path), path);
    const bool sharded = name == std::string("model.safetensors.index.json");
    StoredWeights weights;
    weights.file_ = path;
    weights.stored_ = std::make_shared<std::map<std::string, Stored>>();
    for (const std::string& shard : sharded ? shard_files(path) : std::set<std::string>{name}) {
      auto file = std::make_shared<const SafetensorsFile>((root / shard).string());
      for (const SafetensorsEntry& entry : file->header().entries)
        weights.add(entry.name, Stored{{entry.scalar_type, entry.shape}, file, &entry, {}});
    }
    return weights;
  }
  throw ModelFileError(dir, "has no weights: model.safetensors, model.safetensors.index.json or pytorch_model.bin");
}

const StoredWeights::Description* StoredWeights::find(const std::string& name) const {
  auto it = stored_->find(name);
  return it == stored_->end() ? nullptr : &it->second.description;
}

at::Tensor StoredWeights::read(const std::string& name) const {
  const Stored& stored = stored_->at(name);
  return stored.file ? stored.file->read(*stored.entry) : stored.tensor;
}

void StoredWeights::read_into(const std::string& name, at::Tensor& destination) const {
  const Stored& stored = stored_->at(name);
  if (stored.file) {
    stored.file->read_into(*stored.entry, destination);
  } else {
    destination.copy_(stored.tensor);
  }
}

namespace {

template <class Stored>
int64_t count_elements(const std::map<std::string, Stored>& stored_tensors, bool floating_point) {
  int64_t count = 0;
  for (const auto& [name, stored] : stored_tensors) {
    if (c10::isFloatingType(stored.description.dtype) != floating_point) continue;
    int64_t elements = 1;
    for (const int64_t size : stored.description.shape) elements *= size;
    count += elements;
  }
  return count;
}

}  // namespace

int64_t StoredWeights::floating_point_elements() const { return count_elements(*stored_, true); }

int64_t StoredWeights::other_elements() const { return count_elements(*stored_, false); }

NamedTensors StoredWeights::read_all() const {
  NamedTensors tensors;
  tensors.reserve(order_.size());
  for (const std::string& name : order_) tensors.emplace_back(name, read(name));
  return tensors;
}

NamedTensors read_weights(const std::string& dir, std::string* file_out) {
  const StoredWeights weights = StoredWeights::open(dir);
  if (file_out != nullptr) *file_out = weights.file();
  return weights.read_all();
}

}  // namespace hf
}  // namespace gradcache
