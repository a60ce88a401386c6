// The tensors of a Hugging Face model directory's weight files, by name, read one at a time.
#pragma once

#include <gradcache/hf/safetensors.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace gradcache {
namespace hf {

/// What a model directory stores under each name: model.safetensors, or the shards that
/// model.safetensors.index.json lists, are opened and their headers validated, and a tensor's
/// bytes are read only when it is asked for, so that loading a model holds its parameters and
/// one stored tensor at a time instead of the whole file beside them (a 1.7B-parameter bf16
/// file is 3.4 GB). A pytorch_model.bin is read whole (LibTorch's unpickler cannot do
/// otherwise). Copies share the open files.
class StoredWeights {
 public:
  struct Description {
    c10::ScalarType dtype;
    std::vector<int64_t> shape;
  };

  /// The weights of directory `dir`: model.safetensors; else the shards of
  /// model.safetensors.index.json; else pytorch_model.bin (read_pytorch_bin). Throws
  /// ModelFileError naming the file (or `dir` when it has none of them).
  static StoredWeights open(const std::string& dir);

  /// Tensors already in memory; `file` names them in messages.
  StoredWeights(const NamedTensors& tensors, std::string file);

  /// The file read (or the index of the shards): what messages name.
  const std::string& file() const { return file_; }
  /// What is stored under `name`, or nullptr.
  const Description* find(const std::string& name) const;
  /// The tensor stored under `name` (which find() must know), read now.
  at::Tensor read(const std::string& name) const;
  /// Copies the tensor stored under `name` into `destination` (of its shape), converting the
  /// dtype; from the file straight into `destination` when the dtypes agree.
  void read_into(const std::string& name, at::Tensor& destination) const;
  /// The number of floating-point elements stored: what a config.json's model may not exceed.
  int64_t floating_point_elements() const;
  /// The number of elements stored in integer or boolean tensors (a quantized model's weights).
  int64_t other_elements() const;
  /// Every tensor, read now, in file order.
  NamedTensors read_all() const;

 private:
  struct Stored;  // a description, and where the bytes are
  StoredWeights() = default;
  void add(const std::string& name, Stored stored);

  std::string file_;
  std::vector<std::string> order_;
  std::shared_ptr<std::map<std::string, Stored>> stored_;
};

}  // namespace hf
}  // namespace gradcache
