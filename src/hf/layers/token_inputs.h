// What every architecture refuses before it computes: token ids it cannot look up.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>

namespace gradcache {
namespace hf {
namespace detail {

/// Checks a model's inputs, naming `model` in each refusal (c10::Error): `ids` int64 or int32
/// [batch, tokens]; `mask` of its shape; at most `max_tokens` tokens; no nonzero token types
/// (`types`, when given: these models have none); every id inside `vocab_size` (a tokenizer of
/// another model gives ids past it, which would index out of the embedding table).
void check_token_inputs(const std::string& model, const at::Tensor& ids, const at::Tensor& mask,
                        const at::Tensor& types, int64_t vocab_size, int64_t max_tokens);

}  // namespace detail
}  // namespace hf
}  // namespace gradcache
