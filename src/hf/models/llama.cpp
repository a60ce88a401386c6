// LlamaModel as transformers' modeling_llama.py computes it (and modeling_mistral / qwen2 /
// qwen3, which differ by the switches of LlamaConfig), on the shared layers: embed_tokens, then
// num_hidden_layers blocks of
//     x = x + o_proj(attention(rope(q_norm(q_proj(n))), rope(k_norm(k_proj(n))), v_proj(n)))   n = input_layernorm(x)
//     x = x + down_proj(silu(gate_proj(n)) * up_proj(n))                                      n = post_attention_layernorm(x)
// then the final norm. Causal attention with grouped key-value heads; position ids 0..T-1 on
// every row, as transformers uses without a cache, whichever side the batch is padded on.
#include "hf/models/llama.h"

#include "hf/layers/attention.h"
#include "hf/layers/feed_forward.h"
#include "hf/layers/module_tree.h"
#include "hf/layers/token_inputs.h"
#include "hf/layers/norm.h"
#include "hf/layers/rotary.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>
#include <torch/nn/modules/embedding.h>

namespace gradcache {
namespace hf {
namespace {

using detail::linear;
using detail::Norm;
using detail::NormKind;

class LlamaLayerImpl : public torch::nn::Module {
 public:
  explicit LlamaLayerImpl(const LlamaConfig& config)
      : heads_(config.num_attention_heads()), head_size_(config.head_size()), dropout_(config.attention_dropout()) {
    const int64_t d = config.hidden_size(), q = heads_ * head_size_, kv = config.key_value_heads() * head_size_;
    const bool qkv_bias = config.attention_bias() || config.qkv_bias();
    auto attention = detail::scope(*this, "self_attn");
    q_proj_ = linear(*attention, "q_proj", d, q, qkv_bias);
    k_proj_ = linear(*attention, "k_proj", d, kv, qkv_bias);
    v_proj_ = linear(*attention, "v_proj", d, kv, qkv_bias);
    o_proj_ = linear(*attention, "o_proj", q, d, config.attention_bias());
    if (config.qk_norm()) {
      q_norm_ = attention->register_module("q_norm", Norm(NormKind::RmsNorm, head_size_, config.rms_norm_eps()));
      k_norm_ = attention->register_module("k_norm", Norm(NormKind::RmsNorm, head_size_, config.rms_norm_eps()));
    }
    mlp_ = register_module("mlp", detail::GatedFeedForward(d, config.intermediate_size(), config.hidden_act(), config.mlp_bias()));
    input_norm_ = register_module("input_layernorm", Norm(NormKind::RmsNorm, d, config.rms_norm_eps()));
    post_attention_norm_ = register_module("post_attention_layernorm", Norm(NormKind::RmsNorm, d, config.rms_norm_eps()));
  }

  at::Tensor forward(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin, const at::Tensor& mask) {
    const int64_t batch = x.size(0), length = x.size(1);
    const at::Tensor normed = input_norm_(x);
    // [B, T, heads x d] -> [B, heads, T, d]; Qwen3 normalises each head before the transpose.
    auto heads = [&](const at::Tensor& projected, Norm& norm) {
      at::Tensor split = projected.view({batch, length, -1, head_size_});
      if (!norm.is_empty()) split = norm(split);
      return split.transpose(1, 2);
    };
    const at::Tensor q = detail::RotaryEmbedding::apply(heads(q_proj_(normed), q_norm_), cos, sin);
    const at::Tensor k = detail::RotaryEmbedding::apply(heads(k_proj_(normed), k_norm_), cos, sin);
    Norm none{nullptr};
    const at::Tensor v = heads(v_proj_(normed), none);
    const at::Tensor context = detail::attention(q, k, v, mask, is_training() ? dropout_ : 0.0);
    const at::Tensor attended = x + o_proj_(context.transpose(1, 2).reshape({batch, length, heads_ * head_size_}));
    return attended + mlp_(post_attention_norm_(attended));
  }

 private:
  int64_t heads_, head_size_;
  double dropout_;
  Linear q_proj_{nullptr}, k_proj_{nullptr}, v_proj_{nullptr}, o_proj_{nullptr};
  Norm q_norm_{nullptr}, k_norm_{nullptr}, input_norm_{nullptr}, post_attention_norm_{nullptr};
  detail::GatedFeedForward mlp_{nullptr};
};
TORCH_MODULE(LlamaLayer);

LlamaConfig validated(LlamaConfig config) {
  config.validate("LlamaConfig");
  return config;
}

class LlamaModelImpl : public TransformerBackbone {
 public:
  explicit LlamaModelImpl(LlamaConfig config)
      : config_(validated(std::move(config))), rotary_(config_.head_size(), config_.rope_theta(), config_.rope_scaling()) {
    torch::nn::EmbeddingOptions words(config_.vocab_size(), config_.hidden_size());
    if (config_.pad_token_id() >= 0) words.padding_idx(config_.pad_token_id());
    embed_tokens_ = register_module("embed_tokens", torch::nn::Embedding(words));
    auto layer_list = detail::scope(*this, "layers");
    for (int64_t i = 0; i < config_.num_hidden_layers(); ++i)
      layers_.push_back(layer_list->register_module(std::to_string(i), LlamaLayer(config_)));
    norm_ = register_module("norm", Norm(NormKind::RmsNorm, config_.hidden_size(), config_.rms_norm_eps()));
    detail::initialise_weights(*this, config_.initializer_range());
    c10::NoGradGuard no_grad;
    if (config_.pad_token_id() >= 0) embed_tokens_->weight[config_.pad_token_id()].zero_();
  }

  TransformerOutput encode(const at::Tensor& input_ids, const at::Tensor& attention_mask, const at::Tensor& token_type_ids,
                           bool /*with_pooler*/) override {
    check_inputs(input_ids, attention_mask, token_type_ids);
    at::Tensor hidden = detail::widened(embed_tokens_(input_ids.to(at::kLong)));
    // cos and sin in the embeddings' dtype (fp32 under autocast too), as transformers.
    const auto [cos, sin] = rotary_.cos_sin(input_ids.size(1), hidden);
    detail::AttentionPattern pattern;
    pattern.causal = true;
    pattern.window_left = config_.sliding_window() > 0 ? config_.sliding_window() - 1 : 0;
    const at::Tensor mask = detail::attention_mask(attention_mask, pattern);
    for (auto& layer : layers_) hidden = layer(hidden, cos, sin, mask);
    TransformerOutput out;
    out.last_hidden_state = norm_(hidden);
    return out;
  }

  std::string model_type() const override { return config_.model_type(); }
  std::string config_json() const override { return config_.to_json(); }
  int64_t hidden_size() const override { return config_.hidden_size(); }
  int64_t vocab_size() const override { return config_.vocab_size(); }
  int64_t max_tokens() const override { return config_.max_position_embeddings(); }
  /// LlamaForCausalLM, Qwen3ForCausalLM, ... hold the model under "model." (beside lm_head).
  std::string checkpoint_prefix() const override { return "model."; }

 private:
  void check_inputs(const at::Tensor& ids, const at::Tensor& mask, const at::Tensor& types) const {
    detail::check_token_inputs(config_.model_type(), ids, mask, types, config_.vocab_size(),
                               config_.max_position_embeddings());
  }


  LlamaConfig config_;
  detail::RotaryEmbedding rotary_;
  torch::nn::Embedding embed_tokens_{nullptr};
  std::vector<LlamaLayer> layers_;
  Norm norm_{nullptr};
};

}  // namespace

detail::ReadConfig read_llama(const nlohmann::json& config, const std::string& text, const std::string& file) {
  const auto c = LlamaConfig::from_parsed(config, text, file);
  return {c.parameter_count(), [c] { return std::make_shared<LlamaModelImpl>(c); }};
}

}  // namespace hf
}  // namespace gradcache
