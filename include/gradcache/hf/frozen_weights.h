// A frozen base held in bf16 (--base-precision bf16): the weight matrices that do not train
// (requires_grad false: a LoRA run's base, a bias-only run's matrices) stored at half the bytes,
// while the computation, what trains and the optimizer's state stay in fp32. A linear layer
// converts its held weight for each product, and its backward converts it again rather than
// keeping a converted copy (hf/linear.h); an embedding table's rows are converted as they are
// looked up. The model then computes what an fp32 model with the bf16-rounded weights computes.
#pragma once

#include <c10/core/ScalarType.h>

#include <cstdint>

namespace gradcache {
namespace hf {

class TransformerBackbone;

/// Holds every frozen weight matrix of `model` (its linear layers' weights and its embedding
/// tables whose requires_grad is false) in `type` (at::kBFloat16 or at::kHalf). Vectors (biases,
/// norms) stay as they are: they are few numbers, and a norm computes in its own type. Returns
/// how many numbers it converted. std::invalid_argument for another type.
int64_t hold_frozen_weights_in(TransformerBackbone& model, at::ScalarType type);

}  // namespace hf
}  // namespace gradcache
