// Writing safetensors as the reference implementation does (safetensors/src/tensor.rs, prepare):
// tensors ordered by dtype alignment, largest first, then by name; a compact JSON header with
// "__metadata__" first, padded with spaces to a multiple of 8 bytes. A file we write is then
// byte for byte the file Python's `safetensors.torch.save_file` writes for the same tensors.
#include <gradcache/hf/safetensors.h>

#include "files/atomic_file.h"
#include "hf/safetensors_dtypes.h"

#include <ATen/core/Tensor.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "safetensors data is little-endian; this writer copies memory");

namespace gradcache {
namespace hf {
namespace {

struct Planned {
  const std::string* name;
  const at::Tensor* tensor;
  const detail::SafetensorsDtype* dtype;
};

std::vector<Planned> plan(const NamedTensors& tensors) {
  std::vector<Planned> planned;
  std::set<std::string> names;
  for (const auto& [name, tensor] : tensors) {
    if (name == "__metadata__")
      throw std::invalid_argument("safetensors: a tensor cannot be named " + detail::quoted(name));
    if (!names.insert(name).second) throw std::invalid_argument("safetensors: two tensors named " + detail::quoted(name));
    if (!tensor.defined() || tensor.layout() != c10::kStrided)
      throw std::invalid_argument("safetensors: tensor " + detail::quoted(name) + " is undefined or not dense");
    const detail::SafetensorsDtype* dtype = detail::find_safetensors_dtype(tensor.scalar_type());
    if (dtype == nullptr)
      throw std::invalid_argument("safetensors: tensor " + detail::quoted(name) + " has dtype " +
                                  std::string(c10::toString(tensor.scalar_type())) + "; supported: " +
                                  detail::supported_safetensors_dtypes());
    planned.push_back({&name, &tensor, dtype});
  }
  std::sort(planned.begin(), planned.end(), [](const Planned& a, const Planned& b) {
    if (a.dtype->alignment_rank != b.dtype->alignment_rank) return a.dtype->alignment_rank > b.dtype->alignment_rank;
    return *a.name < *b.name;
  });
  return planned;
}

std::string header_json(const std::vector<Planned>& planned, const std::map<std::string, std::string>& metadata) {
  std::ostringstream json;
  json << '{';
  bool first = true;
  if (!metadata.empty()) {
    json << "\"__metadata__\":{";
    for (const auto& [key, value] : metadata) {
      json << (first ? "" : ",") << detail::quoted(key) << ':' << detail::quoted(value);
      first = false;
    }
    json << '}';
  }
  uint64_t offset = 0;
  bool first_entry = metadata.empty();
  for (const Planned& entry : planned) {
    json << (first_entry ? "" : ",") << detail::quoted(*entry.name) << ":{\"dtype\":\""
         << entry.dtype->name << "\",\"shape\":[";
    for (int64_t d = 0; d < entry.tensor->dim(); ++d) json << (d ? "," : "") << entry.tensor->size(d);
    const uint64_t bytes = static_cast<uint64_t>(entry.tensor->numel()) * entry.dtype->size;
    json << "],\"data_offsets\":[" << offset << ',' << offset + bytes << "]}";
    offset += bytes;
    first_entry = false;
  }
  json << '}';
  std::string text = json.str();
  text.resize((text.size() + 7) / 8 * 8, ' ');
  return text;
}

}  // namespace

void write_safetensors(std::ostream& out, const NamedTensors& tensors, const std::map<std::string, std::string>& metadata) {
  const std::vector<Planned> planned = plan(tensors);
  const std::string header = header_json(planned, metadata);
  uint64_t length = header.size();
  char length_bytes[8];
  for (char& byte : length_bytes) {
    byte = static_cast<char>(length & 0xff);
    length >>= 8;
  }
  out.write(length_bytes, 8);
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  for (const Planned& entry : planned) {
    // One tensor at a time on the CPU, contiguous: memory beyond the tensors is one tensor's copy.
    const at::Tensor data = entry.tensor->detach().to(c10::kCPU).contiguous();
    out.write(static_cast<const char*>(data.data_ptr()), static_cast<std::streamsize>(data.nbytes()));
  }
}

std::string safetensors_bytes(const NamedTensors& tensors, const std::map<std::string, std::string>& metadata) {
  std::ostringstream out;
  write_safetensors(out, tensors, metadata);
  return out.str();
}

void save_safetensors(const std::string& path, const NamedTensors& tensors,
                      const std::map<std::string, std::string>& metadata) {
  const std::string tmp = files::temporary_path(path);
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw std::runtime_error("cannot write " + tmp);
    try {
      write_safetensors(out, tensors, metadata);
    } catch (...) {
      std::remove(tmp.c_str());
      throw;
    }
    out.close();
    if (!out) {
      std::remove(tmp.c_str());
      throw std::runtime_error("cannot write " + tmp + " (is the disk full?)");
    }
  }
  files::commit_file(tmp, path);
}

}  // namespace hf
}  // namespace gradcache
