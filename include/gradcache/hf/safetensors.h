// The safetensors format (huggingface/safetensors): an 8-byte little-endian header length N,
// N bytes of JSON naming each tensor's dtype, shape and byte range, then the raw little-endian
// data. Reading validates the whole header before anything is allocated; writing produces what
// the Python `safetensors` package writes (same layout, same header).
#pragma once

#include <gradcache/hf/model_file_error.h>

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gradcache {
namespace hf {

/// Tensors by name, in the order of their data in the file (or the order to write them in).
using NamedTensors = std::vector<std::pair<std::string, at::Tensor>>;

/// The reference implementation's limit on the header (100 MB): larger is refused.
constexpr uint64_t kMaxSafetensorsHeader = 100'000'000;

/// One tensor of a safetensors header. Offsets are relative to the data region.
struct SafetensorsEntry {
  std::string name;
  std::string dtype;  ///< as the file names it: "F32", "BF16", "I64", ...
  c10::ScalarType scalar_type = c10::ScalarType::Float;
  std::vector<int64_t> shape;
  uint64_t begin = 0;
  uint64_t end = 0;
};

/// A validated header: every entry's dtype is one LibTorch holds, its byte range matches its
/// shape, and the ranges tile the data region exactly (no gap, no overlap, nothing after).
struct SafetensorsHeader {
  std::vector<SafetensorsEntry> entries;  ///< in data order
  std::map<std::string, std::string> metadata;  ///< "__metadata__"
  uint64_t data_offset = 0;  ///< where the data region starts in the file: 8 + N
};

/// Parses and validates the header of a safetensors file of `file_size` bytes, given (at least)
/// its first 8 + N bytes in `prefix`. Throws ModelFileError naming `file` on any violation of
/// the format: header length past the file or over kMaxSafetensorsHeader, not a JSON object,
/// duplicate names, an unknown or unsupported dtype, a negative or overflowing shape, offsets
/// out of range, reversed, of the wrong size, overlapping, or leaving part of the data uncovered,
/// or a "__metadata__" that is not a string-to-string map.
SafetensorsHeader parse_safetensors_header(std::string_view prefix, uint64_t file_size, const std::string& file);

/// What a safetensors file holds.
struct SafetensorsContents {
  NamedTensors tensors;  ///< CPU tensors, in data order
  std::map<std::string, std::string> metadata;
  /// The tensor called `name`, or nullptr.
  const at::Tensor* find(const std::string& name) const;
};

/// Reads a safetensors file: the header first (validated), then each tensor straight into its
/// own storage, so memory is bounded by the file's size. Throws ModelFileError naming the path.
SafetensorsContents read_safetensors(const std::string& path);

/// A safetensors file opened for reading one tensor at a time: the header is read and validated
/// when it opens, the data when a tensor is asked for, so that a model's weights can go into its
/// parameters without the whole file in memory beside them. Copies share the open file.
class SafetensorsFile {
 public:
  /// Throws ModelFileError naming `path` (missing, not a regular file, an invalid header).
  explicit SafetensorsFile(const std::string& path);
  const std::string& path() const { return path_; }
  const SafetensorsHeader& header() const { return *header_; }
  /// A new CPU tensor holding `entry` (one of header().entries). Throws ModelFileError when the
  /// file has become shorter or cannot be read, or for BOOL bytes other than 0 and 1.
  at::Tensor read(const SafetensorsEntry& entry) const;
  /// Copies `entry` into `destination` (a CPU tensor of its shape): straight from the file when
  /// the dtypes agree and `destination` is contiguous, through read() otherwise.
  void read_into(const SafetensorsEntry& entry, at::Tensor& destination) const;

 private:
  std::string path_;
  std::shared_ptr<const int> fd_;  ///< closed with the last copy
  std::shared_ptr<const SafetensorsHeader> header_;
};

/// The same from bytes in memory; `name` is used in messages.
SafetensorsContents read_safetensors_bytes(std::string_view bytes, const std::string& name);

/// Writes `tensors` (any device, dtype F64/F32/F16/BF16/I64/I32/I16/I8/U8/BOOL, dense) in the
/// layout of the Python package: tensors sorted by dtype alignment (largest first) then name,
/// the header padded with spaces to a multiple of 8. Throws std::invalid_argument for tensors it
/// cannot write (a duplicate name, "__metadata__", an unsupported dtype, sparse).
void write_safetensors(std::ostream& out, const NamedTensors& tensors,
                       const std::map<std::string, std::string>& metadata = {{"format", "pt"}});

/// write_safetensors into `path`, atomically: a temporary file flushed to disk and renamed over
/// `path`, so a crash never leaves a torn file. Throws std::runtime_error naming the path.
void save_safetensors(const std::string& path, const NamedTensors& tensors,
                      const std::map<std::string, std::string>& metadata = {{"format", "pt"}});

/// write_safetensors into a string.
std::string safetensors_bytes(const NamedTensors& tensors,
                              const std::map<std::string, std::string>& metadata = {{"format", "pt"}});

}  // namespace hf
}  // namespace gradcache
