// The precisions a model can compute in: what GradCacheOptions and the flags name. How a model
// call runs in one (autocast) is precision.h's.
#pragma once

#include <ATen/core/Tensor.h>

#include <string>

namespace gradcache {

/// The precision the models compute in (docs/design.md §2, "Autocast"). The loss, the
/// representations it sees and the gradient cache are always fp32.
/// - fp32: no autocast (default).
/// - bf16: autocast to bfloat16; on CPU and CUDA. No loss scaling needed (fp32's exponent range).
/// - fp16: autocast to float16; on CUDA (on CPU with LibTorch 2.4 or later). Use a GradScaler:
///   small gradients underflow in fp16 otherwise.
enum class Precision { fp32, bf16, fp16 };

/// "fp32", "bf16" or "fp16" (also "float32", "bfloat16", "float16"); throws otherwise.
Precision parse_precision(const std::string& name);
/// "fp32", "bf16" or "fp16".
std::string to_string(Precision precision);
/// `t` in fp32 if it is bf16 or fp16 (differentiably), otherwise `t` itself. What the loss sees.
at::Tensor to_full_precision(const at::Tensor& t);

}  // namespace gradcache
