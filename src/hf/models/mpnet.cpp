// MPNetModel as transformers' modeling_mpnet.py computes it, in the same order of operations, on
// the shared layers: RoBERTa-style learned embeddings (no token types), then num_hidden_layers
// post-norm blocks
//     a = LayerNorm(dropout(o(attention(q(x), k(x), v(x), bias))) + x)        "attention"
//     x = LayerNorm(dropout(output.dense(act(intermediate.dense(a)))) + a)    "intermediate", "output"
// where bias is the relative-position bias, looked up once per forward from
// encoder.relative_attention_bias by T5 buckets of key - query, and added in every layer; then
// the BERT pooler (tanh(dense(first token))), which MPNetForMaskedLM's checkpoints lack.
#include "hf/models/mpnet.h"

#include "hf/layers/attention.h"
#include "hf/layers/embeddings.h"
#include "hf/layers/feed_forward.h"
#include "hf/layers/module_tree.h"
#include "hf/layers/token_inputs.h"
#include "hf/layers/relative_position.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/normalization.h>

namespace gradcache {
namespace hf {
namespace {

using detail::linear;
using detail::maybe_dropout;
using detail::scope;

torch::nn::LayerNorm layer_norm(torch::nn::Module& parent, const MPNetConfig& config) {
  return detail::layer_norm(parent, "LayerNorm", config.hidden_size(), config.layer_norm_eps());
}

class MPNetLayerImpl : public torch::nn::Module {
 public:
  explicit MPNetLayerImpl(const MPNetConfig& config)
      : heads_(config.num_attention_heads()),
        hidden_dropout_(config.hidden_dropout_prob()),
        attention_dropout_(config.attention_probs_dropout_prob()),
        activation_(config.hidden_act()) {
    const int64_t d = config.hidden_size(), ffn = config.intermediate_size();
    auto attention = scope(*this, "attention");
    auto attn = scope(*attention, "attn");
    q_ = linear(*attn, "q", d, d);
    k_ = linear(*attn, "k", d, d);
    v_ = linear(*attn, "v", d, d);
    o_ = linear(*attn, "o", d, d);
    attention_norm_ = layer_norm(*attention, config);
    intermediate_ = linear(*scope(*this, "intermediate"), "dense", d, ffn);
    auto output = scope(*this, "output");
    output_dense_ = linear(*output, "dense", ffn, d);
    output_norm_ = layer_norm(*output, config);
  }

  at::Tensor forward(const at::Tensor& x, const at::Tensor& key_mask, const at::Tensor& position_bias) {
    const int64_t batch = x.size(0), length = x.size(1), width = x.size(2);
    auto split_heads = [&](const at::Tensor& projected) { return projected.view({batch, length, heads_, -1}).transpose(1, 2); };
    // MPNet's eager attention adds the bias between the scaling and the mask, then softmax, as
    // attention_by_definition does: the fused kernel would round otherwise.
    const at::Tensor context = detail::attention_by_definition(split_heads(q_(x)), split_heads(k_(x)), split_heads(v_(x)), key_mask,
                                                               is_training() ? attention_dropout_ : 0.0, position_bias);
    const at::Tensor joined = context.transpose(1, 2).reshape({batch, length, width});
    const at::Tensor attended = attention_norm_(maybe_dropout(o_(joined), hidden_dropout_, is_training()) + x);
    const at::Tensor hidden = detail::activate(activation_, intermediate_(attended));
    return output_norm_(maybe_dropout(output_dense_(hidden), hidden_dropout_, is_training()) + attended);
  }

 private:
  int64_t heads_;
  double hidden_dropout_, attention_dropout_;
  std::string activation_;
  Linear q_{nullptr}, k_{nullptr}, v_{nullptr}, o_{nullptr}, intermediate_{nullptr}, output_dense_{nullptr};
  torch::nn::LayerNorm attention_norm_{nullptr}, output_norm_{nullptr};
};
TORCH_MODULE(MPNetLayer);

MPNetConfig validated(MPNetConfig config) {
  config.validate("MPNetConfig");
  return config;
}

class MPNetModelImpl : public TransformerBackbone {
 public:
  explicit MPNetModelImpl(MPNetConfig config) : config_(validated(std::move(config))) {
    const int64_t d = config_.hidden_size(), padding = MPNetConfig::kPaddingIndex;
    embeddings_ = register_module("embeddings", detail::LearnedEmbeddings(detail::LearnedEmbeddingsOptions()
                                                                              .vocab_size(config_.vocab_size())
                                                                              .hidden_size(d)
                                                                              .max_positions(config_.max_position_embeddings())
                                                                              .pad_token_id(padding)
                                                                              .positions_after_padding(true)
                                                                              .layer_norm_eps(config_.layer_norm_eps())
                                                                              .dropout(config_.hidden_dropout_prob())));
    auto encoder = scope(*this, "encoder");
    auto layer_list = scope(*encoder, "layer");
    for (int64_t i = 0; i < config_.num_hidden_layers(); ++i)
      layers_.push_back(layer_list->register_module(std::to_string(i), MPNetLayer(config_)));
    relative_attention_bias_ = encoder->register_module(
        "relative_attention_bias", torch::nn::Embedding(config_.relative_attention_num_buckets(), config_.num_attention_heads()));
    pooler_ = linear(*scope(*this, "pooler"), "dense", d, d);
    detail::initialise_weights(*this, config_.initializer_range());
    // transformers zeroes the padding rows of both tables (nn.Embedding's padding_idx).
    c10::NoGradGuard no_grad;
    for (auto& item : embeddings_->named_parameters(/*recurse=*/true))
      if (item.key() == "word_embeddings.weight" || item.key() == "position_embeddings.weight") item.value()[padding].zero_();
  }

  TransformerOutput encode(const at::Tensor& input_ids, const at::Tensor& attention_mask, const at::Tensor& token_type_ids,
                           bool with_pooler) override {
    check_inputs(input_ids, attention_mask, token_type_ids);
    at::Tensor hidden = embeddings_->forward(input_ids.to(at::kLong));
    const at::Tensor key_mask = detail::attention_mask(attention_mask, detail::AttentionPattern());
    // [T, T, heads] -> [1, heads, T, T], shared by the batch and by every layer.
    const at::Tensor buckets = detail::relative_position_bucket(detail::relative_positions(input_ids.size(1), input_ids),
                                                                /*bidirectional=*/true, MPNetConfig::kBuckets, MPNetConfig::kMaxDistance);
    const at::Tensor position_bias = detail::widened(relative_attention_bias_(buckets)).permute({2, 0, 1}).unsqueeze(0);
    for (auto& layer : layers_) hidden = layer(hidden, key_mask, position_bias);
    TransformerOutput out;
    out.last_hidden_state = hidden;
    if (with_pooler && has_pooler()) out.pooler_output = at::tanh(pooler_(hidden.select(1, 0)));
    return out;
  }

  std::string model_type() const override { return "mpnet"; }
  std::string config_json() const override { return config_.to_json(); }
  int64_t hidden_size() const override { return config_.hidden_size(); }
  int64_t vocab_size() const override { return config_.vocab_size(); }
  /// Positions start after the padding index: that many fewer tokens fit.
  int64_t max_tokens() const override { return config_.max_position_embeddings() - MPNetConfig::kPaddingIndex - 1; }
  /// MPNetForMaskedLM and the other task models hold the encoder under "mpnet.".
  std::string checkpoint_prefix() const override { return "mpnet."; }
  bool has_pooler() const override { return !pooler_.is_empty(); }
  void remove_pooler() override {
    unregister_module("pooler");
    pooler_ = Linear(nullptr);
  }

 private:
  void check_inputs(const at::Tensor& ids, const at::Tensor& mask, const at::Tensor& types) const {
    detail::check_token_inputs("MPNetModel", ids, mask, types, config_.vocab_size(), max_tokens());
  }


  MPNetConfig config_;
  detail::LearnedEmbeddings embeddings_{nullptr};
  std::vector<MPNetLayer> layers_;
  torch::nn::Embedding relative_attention_bias_{nullptr};
  Linear pooler_{nullptr};
};

}  // namespace

detail::ReadConfig read_mpnet(const nlohmann::json& config, const std::string& text, const std::string& file) {
  const auto c = MPNetConfig::from_parsed(config, text, file);
  return {c.parameter_count(/*with_pooler=*/false), [c] { return std::make_shared<MPNetModelImpl>(c); }};
}

}  // namespace hf
}  // namespace gradcache
