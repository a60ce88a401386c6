#include <gradcache/precision_kind.h>

#include <c10/util/Exception.h>

#include <algorithm>
#include <cctype>

namespace gradcache {

Precision parse_precision(const std::string& name) {
  std::string n = name;
  std::transform(n.begin(), n.end(), n.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (n == "fp32" || n == "float32" || n == "float") return Precision::fp32;
  if (n == "bf16" || n == "bfloat16") return Precision::bf16;
  if (n == "fp16" || n == "float16" || n == "half") return Precision::fp16;
  TORCH_CHECK(false, "precision must be fp32, bf16 or fp16, got '", name, "'");
}

std::string to_string(Precision precision) {
  switch (precision) {
    case Precision::fp32:
      return "fp32";
    case Precision::bf16:
      return "bf16";
    case Precision::fp16:
      return "fp16";
  }
  return "?";
}

at::Tensor to_full_precision(const at::Tensor& t) {
  if (t.defined() && (t.scalar_type() == c10::kBFloat16 || t.scalar_type() == c10::kHalf)) return t.to(c10::kFloat);
  return t;
}

}  // namespace gradcache
