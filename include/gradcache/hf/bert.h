// BERT (transformers' BertModel) in LibTorch: all-MiniLM-L6-v2, bge-small, e5-small, gte-small
// and bert-base are this architecture; RoBERTa and XLM-RoBERTa (multilingual-e5, bge-m3) are the
// same layers with positions counted after the padding id. Parameters carry transformers' names.
#pragma once

#include <gradcache/hf/bert_config.h>
#include <gradcache/hf/linear.h>
#include <gradcache/hf/transformer.h>

#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/normalization.h>
#include <torch/nn/pimpl.h>

#include <memory>
#include <string>
#include <vector>

namespace gradcache {
namespace hf {
namespace detail {
class LearnedEmbeddingsImpl;
}

/// One encoder layer: self-attention then feed-forward, each followed by dropout, a residual
/// connection and LayerNorm (post-LN, as BERT).
class BertLayerImpl : public torch::nn::Module {
 public:
  explicit BertLayerImpl(const BertConfig& config);
  /// x [B, T, hidden]; key_mask [B, 1, 1, T] bool (true = real token) or undefined (no padding).
  at::Tensor forward(const at::Tensor& x, const at::Tensor& key_mask);

 private:
  at::Tensor feed_forward(const at::Tensor& x);

  int64_t heads_;
  double hidden_dropout_, attention_dropout_;
  std::string activation_;
  // Names as in transformers: attention.self.{query,key,value}, attention.output.{dense,LayerNorm},
  // intermediate.dense, output.{dense,LayerNorm}.
  Linear query_{nullptr}, key_{nullptr}, value_{nullptr}, attention_dense_{nullptr};
  torch::nn::LayerNorm attention_norm_{nullptr};
  Linear intermediate_{nullptr}, output_dense_{nullptr};
  torch::nn::LayerNorm output_norm_{nullptr};
};
TORCH_MODULE(BertLayer);

/// transformers' BertModel: embeddings (word + token type + position, LayerNorm, dropout),
/// num_hidden_layers BertLayers, and the pooler (tanh(dense([CLS]))). Dropout where BERT has it:
/// after the embeddings, on the attention probabilities, after the attention output and after
/// the feed-forward output; in training mode only. Attention is LibTorch's fused
/// scaled-dot-product attention where the version has it.
class BertModelImpl : public TransformerBackbone {
 public:
  explicit BertModelImpl(BertConfig config);

  TransformerOutput encode(const at::Tensor& input_ids, const at::Tensor& attention_mask,
                           const at::Tensor& token_type_ids = {}, bool with_pooler = true) override;
  using TransformerBackbone::forward;

  const BertConfig& config() const { return config_; }
  std::string model_type() const override { return config_.model_type(); }
  std::string config_json() const override { return config_.to_json(); }
  int64_t hidden_size() const override { return config_.hidden_size(); }
  int64_t vocab_size() const override { return config_.vocab_size(); }
  int64_t max_tokens() const override {
    return config_.max_position_embeddings() - (config_.positions_after_padding() ? config_.pad_token_id() + 1 : 0);
  }
  /// "bert." (BertForMaskedLM, ...) or "roberta." (RobertaForMaskedLM, XLMRobertaForMaskedLM, ...).
  std::string checkpoint_prefix() const override { return config_.model_type() == "bert" ? "bert." : "roberta."; }
  bool has_pooler() const override { return !pooler_.is_empty(); }
  void remove_pooler() override;

 private:
  BertConfig config_;
  std::shared_ptr<detail::LearnedEmbeddingsImpl> embeddings_;
  std::vector<BertLayer> layers_;
  Linear pooler_{nullptr};
};
TORCH_MODULE(BertModel);

/// The "bert", "roberta" and "xlm-roberta" entries of the architecture registry: BertConfig::parse, then a BertModel.
std::shared_ptr<TransformerBackbone> build_bert(const std::string& config_text, const std::string& config_file);
/// Its ParameterCounter: BertConfig::parse(...).parameter_count(false).
int64_t count_bert_parameters(const std::string& config_text, const std::string& config_file);

}  // namespace hf
}  // namespace gradcache
