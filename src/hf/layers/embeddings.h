// Learned input embeddings of the encoder architectures (transformers' BertEmbeddings,
// RobertaEmbeddings): word + absolute position [+ token type], LayerNorm, dropout, under the
// names "word_embeddings", "position_embeddings", "token_type_embeddings", "LayerNorm".
// (Rotary and ALiBi models have only a word table: an Embedding of their own.)
#pragma once

#include <ATen/core/Tensor.h>
#include <torch/arg.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/normalization.h>
#include <torch/nn/pimpl.h>

#include <cstdint>

namespace gradcache {
namespace hf {
namespace detail {

struct LearnedEmbeddingsOptions {
  TORCH_ARG(int64_t, vocab_size) = 0;
  TORCH_ARG(int64_t, hidden_size) = 0;
  TORCH_ARG(int64_t, max_positions) = 0;
  /// 0: no token-type table.
  TORCH_ARG(int64_t, token_types) = 0;
  /// The padding token: its word embedding gets no gradient; -1 for none.
  TORCH_ARG(int64_t, pad_token_id) = -1;
  /// RoBERTa's (fairseq's) positions: a real token's position is pad_token_id + its index
  /// among the row's non-padding tokens (from 1); a padding token's is pad_token_id. Else 0, 1, ...
  TORCH_ARG(bool, positions_after_padding) = false;
  TORCH_ARG(double, layer_norm_eps) = 1e-12;
  TORCH_ARG(double, dropout) = 0.0;
};

class LearnedEmbeddingsImpl : public torch::nn::Module {
 public:
  explicit LearnedEmbeddingsImpl(LearnedEmbeddingsOptions options);
  /// input_ids [B, T] int64; token_type_ids [B, T] or undefined (all 0). [B, T, hidden].
  at::Tensor forward(const at::Tensor& input_ids, const at::Tensor& token_type_ids = {});
  /// The position ids forward uses for `input_ids` ([T] from 0, or [B, T] after padding).
  at::Tensor position_ids(const at::Tensor& input_ids) const;

  const LearnedEmbeddingsOptions& options() const { return options_; }
  torch::nn::Embedding& word_embeddings() { return words_; }

 private:
  LearnedEmbeddingsOptions options_;
  torch::nn::Embedding words_{nullptr}, positions_{nullptr}, token_types_{nullptr};
  torch::nn::LayerNorm norm_{nullptr};
};
TORCH_MODULE(LearnedEmbeddings);

}  // namespace detail
}  // namespace hf
}  // namespace gradcache
