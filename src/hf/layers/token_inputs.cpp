#include "hf/layers/token_inputs.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

namespace gradcache {
namespace hf {
namespace detail {

void check_token_inputs(const std::string& model, const at::Tensor& ids, const at::Tensor& mask,
                        const at::Tensor& types, int64_t vocab_size, int64_t max_tokens) {
  TORCH_CHECK(ids.dim() == 2 && (ids.scalar_type() == at::kLong || ids.scalar_type() == at::kInt), model,
              ": input_ids must be int64 or int32 [batch, tokens], got ", ids.scalar_type(), " ", ids.sizes());
  TORCH_CHECK(mask.sizes() == ids.sizes(), model, ": attention_mask ", mask.sizes(), " does not match input_ids ",
              ids.sizes());
  TORCH_CHECK(ids.size(1) <= max_tokens, model, ": ", ids.size(1), " tokens, more than the ", max_tokens,
              " the model takes: truncate the texts (max_seq_length)");
  TORCH_CHECK(!types.defined() || types.numel() == 0 || !types.ne(0).any().item<bool>(), model,
              ": the model has no token types, yet token_type_ids holds nonzero ones");
  if (ids.numel() == 0) return;
  const int64_t low = ids.min().item<int64_t>(), high = ids.max().item<int64_t>();
  TORCH_CHECK(low >= 0 && high < vocab_size, model, ": token id ", low < 0 ? low : high,
              " is outside the vocabulary of ", vocab_size, " pieces (a tokenizer of another model?)");
}

}  // namespace detail
}  // namespace hf
}  // namespace gradcache
