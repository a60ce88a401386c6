#include "hf/layers/embeddings.h"

#include "hf/layers/module_tree.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

namespace gradcache {
namespace hf {
namespace detail {

LearnedEmbeddingsImpl::LearnedEmbeddingsImpl(LearnedEmbeddingsOptions options) : options_(std::move(options)) {
  const int64_t d = options_.hidden_size();
  torch::nn::EmbeddingOptions words(options_.vocab_size(), d);
  if (options_.pad_token_id() >= 0) words.padding_idx(options_.pad_token_id());
  words_ = register_module("word_embeddings", torch::nn::Embedding(words));
  positions_ = register_module("position_embeddings", torch::nn::Embedding(options_.max_positions(), d));
  if (options_.token_types() > 0)
    token_types_ = register_module("token_type_embeddings", torch::nn::Embedding(options_.token_types(), d));
  norm_ = register_module("LayerNorm",
                          torch::nn::LayerNorm(torch::nn::LayerNormOptions({d}).eps(options_.layer_norm_eps())));
}

at::Tensor LearnedEmbeddingsImpl::position_ids(const at::Tensor& input_ids) const {
  if (!options_.positions_after_padding()) return at::arange(input_ids.size(1), input_ids.options().dtype(at::kLong));
  const at::Tensor real = input_ids.ne(options_.pad_token_id()).to(at::kInt);
  return (at::cumsum(real, 1).to(at::kInt) * real).to(at::kLong) + options_.pad_token_id();
}

at::Tensor LearnedEmbeddingsImpl::forward(const at::Tensor& input_ids, const at::Tensor& token_type_ids) {
  const at::Tensor ids = input_ids.to(at::kLong);
  at::Tensor summed = widened(words_(ids));
  if (!token_types_.is_empty()) {
    // Absent token types are all 0: row 0 broadcast (transformers gathers it for every position).
    summed = summed + widened(token_type_ids.defined() ? token_types_(token_type_ids.to(at::kLong))
                                                       : token_types_->weight.select(0, 0));
  }
  const at::Tensor positions = widened(options_.positions_after_padding() ? positions_(position_ids(ids))
                                                                          : positions_->weight.narrow(0, 0, ids.size(1)));
  return maybe_dropout(norm_(summed + positions), options_.dropout(), is_training());
}

}  // namespace detail
}  // namespace hf
}  // namespace gradcache
