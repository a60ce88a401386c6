// Reading safetensors: the header is validated completely (the checks of the reference
// implementation's Metadata::validate and read_metadata, plus duplicate names) before a single
// tensor is allocated, then each tensor's bytes go straight into its storage.
#include <gradcache/hf/safetensors.h>

#include "files/atomic_file.h"
#include "hf/model_json.h"
#include "hf/safetensors_dtypes.h"

#include <ATen/ops/empty.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <functional>
#include <limits>

namespace gradcache {
namespace hf {
namespace {

using detail::Json;
using detail::quoted;

uint64_t little_endian_u64(const char* bytes) {
  uint64_t value = 0;
  for (int i = 7; i >= 0; --i) value = (value << 8) | static_cast<unsigned char>(bytes[i]);
  return value;
}

std::string tensor_label(const std::string& name) { return "tensor " + quoted(name); }

uint64_t non_negative(const Json& value, const std::string& what, const std::string& name, const std::string& file) {
  if (!value.is_number_integer() || (!value.is_number_unsigned() && value.get<int64_t>() < 0))
    throw ModelFileError(file, tensor_label(name) + ": " + what + " must be non-negative integers, not " +
                                   detail::json_kind(value) + (value.is_number() ? " " + value.dump() : ""));
  return value.get<uint64_t>();
}

const Json& required(const Json& entry, const char* key, const std::string& name, const std::string& file) {
  auto it = entry.find(key);
  if (it == entry.end()) throw ModelFileError(file, tensor_label(name) + " has no \"" + key + "\"");
  return *it;
}

// One header entry, checked on its own: known dtype, a shape whose size does not overflow, and a
// byte range that matches it and lies within the data region.
SafetensorsEntry parse_entry(const std::string& name, const Json& value, uint64_t data_size, const std::string& file) {
  if (!value.is_object()) throw ModelFileError(file, tensor_label(name) + " must be a JSON object, not " + detail::json_kind(value));
  SafetensorsEntry entry;
  entry.name = name;
  const Json& dtype = required(value, "dtype", name, file);
  if (!dtype.is_string()) throw ModelFileError(file, tensor_label(name) + ": \"dtype\" must be a string");
  entry.dtype = dtype.get<std::string>();
  const detail::SafetensorsDtype* kind = detail::find_safetensors_dtype(entry.dtype, name, file);
  entry.scalar_type = kind->scalar_type;

  const Json& shape = required(value, "shape", name, file);
  if (!shape.is_array()) throw ModelFileError(file, tensor_label(name) + ": \"shape\" must be an array");
  uint64_t elements = 1;
  for (const Json& dim : shape) {
    const uint64_t size = non_negative(dim, "the sizes of \"shape\"", name, file);
    if (size > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ||
        __builtin_mul_overflow(elements, size, &elements) || elements > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      throw ModelFileError(file, tensor_label(name) + ": \"shape\" " + shape.dump() + " has more elements than can be counted");
    entry.shape.push_back(static_cast<int64_t>(size));
  }
  uint64_t bytes = 0;
  if (__builtin_mul_overflow(elements, kind->size, &bytes))
    throw ModelFileError(file, tensor_label(name) + ": \"shape\" " + shape.dump() + " has more bytes than can be counted");

  const Json& offsets = required(value, "data_offsets", name, file);
  if (!offsets.is_array() || offsets.size() != 2)
    throw ModelFileError(file, tensor_label(name) + ": \"data_offsets\" must be [begin, end]");
  entry.begin = non_negative(offsets[0], "\"data_offsets\"", name, file);
  entry.end = non_negative(offsets[1], "\"data_offsets\"", name, file);
  if (entry.begin > entry.end)
    throw ModelFileError(file, tensor_label(name) + ": \"data_offsets\" " + offsets.dump() + " end before they begin");
  if (entry.end > data_size)
    throw ModelFileError(file, tensor_label(name) + ": \"data_offsets\" " + offsets.dump() + " run past the end of the data (" +
                                   std::to_string(data_size) + " bytes); the file is truncated or its header lies");
  if (entry.end - entry.begin != bytes)
    throw ModelFileError(file, tensor_label(name) + ": \"data_offsets\" " + offsets.dump() + " span " +
                                   std::to_string(entry.end - entry.begin) + " bytes but " + entry.dtype + " " + shape.dump() +
                                   " takes " + std::to_string(bytes));
  return entry;
}

std::map<std::string, std::string> parse_metadata(const Json& value, const std::string& file) {
  if (!value.is_object()) throw ModelFileError(file, "\"__metadata__\" must be a map of strings to strings");
  std::map<std::string, std::string> metadata;
  for (const auto& item : value.items()) {
    if (!item.value().is_string())
      throw ModelFileError(file, "\"__metadata__\" value of " + quoted(item.key()) + " must be a string, not " +
                                     detail::json_kind(item.value()));
    metadata[item.key()] = item.value().get<std::string>();
  }
  return metadata;
}

// The ranges, in data order, must tile [0, data_size): each starts where the one before ended
// ("the byte buffer needs to be entirely indexed, and cannot contain holes").
void check_tiling(std::vector<SafetensorsEntry>& entries, uint64_t data_size, const std::string& file) {
  std::stable_sort(entries.begin(), entries.end(), [](const SafetensorsEntry& a, const SafetensorsEntry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t covered = 0;
  for (size_t i = 0; i < entries.size(); ++i) {
    const SafetensorsEntry& entry = entries[i];
    if (entry.begin < covered)
      throw ModelFileError(file, tensor_label(entry.name) + " overlaps " + tensor_label(entries[i - 1].name) +
                                     " (bytes " + std::to_string(entry.begin) + " to " + std::to_string(covered) + ")");
    if (entry.begin > covered)
      throw ModelFileError(file, "bytes " + std::to_string(covered) + " to " + std::to_string(entry.begin) +
                                     " of the data belong to no tensor (before " + tensor_label(entry.name) + ")");
    covered = entry.end;
  }
  if (covered != data_size)
    throw ModelFileError(file, "the tensors cover " + std::to_string(covered) + " bytes of data but the file holds " +
                                   std::to_string(data_size) + " after its header");
}

using ReadAt = std::function<void(uint64_t offset, void* destination, size_t size)>;

at::Tensor read_tensor(const SafetensorsEntry& entry, uint64_t data_offset, const ReadAt& read_at, const std::string& file) {
  at::Tensor tensor = at::empty(entry.shape, at::TensorOptions().dtype(entry.scalar_type));
  const size_t bytes = static_cast<size_t>(entry.end - entry.begin);
  if (bytes > 0) read_at(data_offset + entry.begin, tensor.data_ptr(), bytes);
  if (entry.scalar_type == at::kBool) {  // a bool byte other than 0 or 1 is undefined behaviour in C++
    const auto* data = static_cast<const unsigned char*>(tensor.data_ptr());
    if (std::any_of(data, data + bytes, [](unsigned char b) { return b > 1; }))
      throw ModelFileError(file, tensor_label(entry.name) + ": BOOL data holds bytes other than 0 and 1");
  }
  return tensor;
}

SafetensorsContents read_tensors(const SafetensorsHeader& header, const ReadAt& read_at, const std::string& file) {
  SafetensorsContents contents;
  contents.metadata = header.metadata;
  contents.tensors.reserve(header.entries.size());
  for (const SafetensorsEntry& entry : header.entries)
    contents.tensors.emplace_back(entry.name, read_tensor(entry, header.data_offset, read_at, file));
  return contents;
}

void read_exactly(int fd, uint64_t offset, void* destination, size_t size, const std::string& path) {
  auto* out = static_cast<char*>(destination);
  while (size > 0) {
    const ssize_t got = ::pread(fd, out, size, static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) throw ModelFileError(path, got == 0 ? "shorter than its header says (changed while reading?)"
                                                      : std::string("read error: ") + std::strerror(errno));
    out += got;
    offset += static_cast<uint64_t>(got);
    size -= static_cast<size_t>(got);
  }
}

}  // namespace

SafetensorsHeader parse_safetensors_header(std::string_view prefix, uint64_t file_size, const std::string& file) {
  if (file_size < 8 || prefix.size() < 8)
    throw ModelFileError(file, "too short for a safetensors file (" + std::to_string(file_size) +
                                   " bytes; the header length alone takes 8)");
  const uint64_t header_size = little_endian_u64(prefix.data());
  if (header_size > kMaxSafetensorsHeader)
    throw ModelFileError(file, "header length " + std::to_string(header_size) + " exceeds the format's limit of " +
                                   std::to_string(kMaxSafetensorsHeader) + " bytes; not a safetensors file?");
  if (header_size > file_size - 8)
    throw ModelFileError(file, "header length " + std::to_string(header_size) + " runs past the end of the file (" +
                                   std::to_string(file_size) + " bytes); the file is truncated or not safetensors");
  TORCH_CHECK(prefix.size() >= 8 + header_size, "parse_safetensors_header: prefix holds ", prefix.size(),
              " bytes, the header needs ", 8 + header_size);
  const std::string_view text = prefix.substr(8, static_cast<size_t>(header_size));
  if (text.empty() || text.front() != '{') throw ModelFileError(file, "the header does not start with '{'");
  // Depth 3 at most: {name: {"shape": [...]}}.
  const Json json = detail::parse_json(text, file, /*max_depth=*/3);
  if (!json.is_object()) throw ModelFileError(file, "the header is not a JSON object");

  SafetensorsHeader header;
  header.data_offset = 8 + header_size;
  const uint64_t data_size = file_size - header.data_offset;
  for (const auto& item : json.items()) {
    if (item.key() == "__metadata__") {
      header.metadata = parse_metadata(item.value(), file);
    } else {
      header.entries.push_back(parse_entry(item.key(), item.value(), data_size, file));
    }
  }
  check_tiling(header.entries, data_size, file);
  return header;
}

const at::Tensor* SafetensorsContents::find(const std::string& name) const {
  for (const auto& [key, tensor] : tensors) {
    if (key == name) return &tensor;
  }
  return nullptr;
}

SafetensorsContents read_safetensors_bytes(std::string_view bytes, const std::string& name) {
  const SafetensorsHeader header = parse_safetensors_header(bytes, bytes.size(), name);
  return read_tensors(
      header, [&](uint64_t offset, void* destination, size_t size) { std::memcpy(destination, bytes.data() + offset, size); },
      name);
}

SafetensorsFile::SafetensorsFile(const std::string& path) : path_(path) {
  if (const auto problem = files::regular_file_problem(path); !problem.empty())
    throw ModelFileError(path, problem);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw ModelFileError(path, std::string("cannot open: ") + std::strerror(errno));
  fd_ = std::shared_ptr<const int>(new int(fd), [](const int* descriptor) {
    ::close(*descriptor);
    delete descriptor;
  });
  struct stat status {};
  if (::fstat(fd, &status) != 0 || !S_ISREG(status.st_mode)) throw ModelFileError(path, "not a regular file");
  const auto file_size = static_cast<uint64_t>(status.st_size);
  std::string prefix(static_cast<size_t>(std::min<uint64_t>(file_size, 8)), '\0');
  read_exactly(fd, 0, prefix.data(), prefix.size(), path);
  if (file_size >= 8) {
    // The length is checked against the limit and the file before the header is read.
    const uint64_t header_size = little_endian_u64(prefix.data());
    if (header_size <= std::min(kMaxSafetensorsHeader, file_size - 8)) {
      prefix.resize(static_cast<size_t>(8 + header_size));
      read_exactly(fd, 8, prefix.data() + 8, static_cast<size_t>(header_size), path);
    }
  }
  header_ = std::make_shared<const SafetensorsHeader>(parse_safetensors_header(prefix, file_size, path));
}

at::Tensor SafetensorsFile::read(const SafetensorsEntry& entry) const {
  const int fd = *fd_;
  return read_tensor(
      entry, header_->data_offset,
      [&](uint64_t offset, void* destination, size_t size) { read_exactly(fd, offset, destination, size, path_); }, path_);
}

void SafetensorsFile::read_into(const SafetensorsEntry& entry, at::Tensor& destination) const {
  TORCH_CHECK(destination.device().is_cpu() && destination.sizes() == c10::IntArrayRef(entry.shape),
              "SafetensorsFile::read_into: a CPU tensor of the entry's shape is needed");
  if (destination.scalar_type() != entry.scalar_type || !destination.is_contiguous() || entry.scalar_type == at::kBool) {
    destination.copy_(read(entry));
    return;
  }
  const size_t bytes = static_cast<size_t>(entry.end - entry.begin);
  if (bytes > 0) read_exactly(*fd_, header_->data_offset + entry.begin, destination.data_ptr(), bytes, path_);
}

SafetensorsContents read_safetensors(const std::string& path) {
  const SafetensorsFile file(path);
  SafetensorsContents contents;
  contents.metadata = file.header().metadata;
  contents.tensors.reserve(file.header().entries.size());
  for (const SafetensorsEntry& entry : file.header().entries) contents.tensors.emplace_back(entry.name, file.read(entry));
  return contents;
}

}  // namespace hf
}  // namespace gradcache
