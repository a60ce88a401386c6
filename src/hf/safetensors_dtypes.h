// The dtypes of the safetensors format and the LibTorch scalar types they map to. Private to
// gradcache_hf (the reader and the writer share it).
#pragma once

#include <gradcache/hf/model_file_error.h>

#include "hf/model_json.h"

#include <c10/core/ScalarType.h>

#include <cstdint>
#include <string>

namespace gradcache {
namespace hf {
namespace detail {

struct SafetensorsDtype {
  const char* name;
  c10::ScalarType scalar_type;
  uint64_t size;  ///< bytes per element
  int alignment_rank;  ///< position in the reference's Dtype enum ("increasing alignment order")
};

/// The dtypes read and written, and their rank in the reference implementation's Dtype enum,
/// by which its writer orders tensors (largest alignment first).
inline constexpr SafetensorsDtype kSafetensorsDtypes[] = {
    {"BOOL", c10::ScalarType::Bool, 1, 0},      {"U8", c10::ScalarType::Byte, 1, 4},
    {"I8", c10::ScalarType::Char, 1, 5},        {"I16", c10::ScalarType::Short, 2, 11},
    {"F16", c10::ScalarType::Half, 2, 13},      {"BF16", c10::ScalarType::BFloat16, 2, 14},
    {"I32", c10::ScalarType::Int, 4, 15},       {"F32", c10::ScalarType::Float, 4, 17},
    {"F64", c10::ScalarType::Double, 8, 19},    {"I64", c10::ScalarType::Long, 8, 20},
};

/// Dtypes the format defines that LibTorch does not hold in every supported version (or at all).
inline constexpr const char* kUnsupportedSafetensorsDtypes[] = {
    "F4", "F6_E2M3", "F6_E3M2", "F8_E5M2", "F8_E4M3", "F8_E8M0", "F8_E4M3FNUZ", "F8_E5M2FNUZ", "U16", "U32", "C64", "U64"};

/// "BOOL, U8, ..., I64".
inline std::string supported_safetensors_dtypes() {
  std::string names;
  for (const auto& dtype : kSafetensorsDtypes) names += (names.empty() ? "" : ", ") + std::string(dtype.name);
  return names;
}

/// The dtype called `name`; ModelFileError naming `file` and `tensor` for one unknown to the
/// format or not supported here.
inline const SafetensorsDtype* find_safetensors_dtype(const std::string& name, const std::string& tensor,
                                                      const std::string& file) {
  for (const auto& dtype : kSafetensorsDtypes) {
    if (name == dtype.name) return &dtype;
  }
  bool known = false;
  for (const char* other : kUnsupportedSafetensorsDtypes) known = known || name == other;
  throw ModelFileError(file, "tensor " + quoted(tensor) + ": " + (known ? "dtype " : "unknown dtype ") + quoted(name) +
                                 (known ? " is not supported" : "") +
                                 " (supported: " + supported_safetensors_dtypes() + ")");
}

/// The dtype of tensors of `type`, or nullptr.
inline const SafetensorsDtype* find_safetensors_dtype(c10::ScalarType type) {
  for (const auto& dtype : kSafetensorsDtypes) {
    if (type == dtype.scalar_type) return &dtype;
  }
  return nullptr;
}

}  // namespace detail
}  // namespace hf
}  // namespace gradcache
