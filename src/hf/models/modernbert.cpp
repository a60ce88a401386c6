// ModernBertModel as transformers' modeling_modernbert.py computes it with sdpa or eager
// attention over the padded batch (its CPU path; with flash-attn the padding is dropped inside
// the kernel call instead, which changes real tokens only by rounding), on the shared layers:
// x = embeddings.drop(embeddings.norm(tok_embeddings(ids))), then num_hidden_layers blocks of
//     x = x + attn.out_drop(attn.Wo(attention(rope(q), rope(k), v)))     q, k, v = attn.Wqkv(attn_norm(x))
//     x = x + mlp.Wo(mlp.drop(act(a) * g))                               a, g = mlp.Wi(mlp_norm(x)) halves
// then final_norm. Layer 0's attn_norm is the identity (the embeddings were just normalised).
// Global layers see every key; local ones the keys at most local_attention / 2 positions away,
// with their own rotary base. Position ids 0..T-1 on every row, as transformers without them.
#include "hf/models/modernbert.h"

#include "hf/layers/attention.h"
#include "hf/layers/feed_forward.h"
#include "hf/layers/module_tree.h"
#include "hf/layers/token_inputs.h"
#include "hf/layers/norm.h"
#include "hf/layers/rotary.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>
#include <torch/nn/modules/embedding.h>

#include <cmath>
#include <string>
#include <tuple>
#include <vector>

namespace gradcache {
namespace hf {
namespace {

using detail::linear;
using detail::maybe_dropout;
using detail::Norm;
using detail::NormKind;

// What one kind of layer (global or local) attends with: its rotary cos and sin, and its mask.
struct LayerInputs {
  at::Tensor cos, sin, mask;
};

class ModernBertLayerImpl : public torch::nn::Module {
 public:
  ModernBertLayerImpl(const ModernBertConfig& config, int64_t index)
      : heads_(config.num_attention_heads()),
        head_size_(config.head_size()),
        attention_dropout_(config.attention_dropout()),
        mlp_dropout_(config.mlp_dropout()),
        activation_(config.hidden_activation()),
        intermediate_(config.intermediate_size()) {
    const int64_t d = config.hidden_size();
    if (index > 0) attn_norm_ = register_module("attn_norm", norm(config));
    auto attention = detail::scope(*this, "attn");
    wqkv_ = linear(*attention, "Wqkv", d, 3 * d, config.attention_bias());
    attention_out_ = linear(*attention, "Wo", d, d, config.attention_bias());
    mlp_norm_ = register_module("mlp_norm", norm(config));
    auto mlp = detail::scope(*this, "mlp");
    wi_ = linear(*mlp, "Wi", d, 2 * intermediate_, config.mlp_bias());
    mlp_out_ = linear(*mlp, "Wo", intermediate_, d, config.mlp_bias());
  }

  static Norm norm(const ModernBertConfig& config) {
    return Norm(NormKind::LayerNorm, config.hidden_size(), config.norm_eps(), config.norm_bias());
  }

  at::Tensor forward(const at::Tensor& x, const LayerInputs& inputs) {
    const at::Tensor attended = x + attend(attn_norm_.is_empty() ? x : attn_norm_(x), inputs);
    // The GeGLU: Wi's first half is activated, its second half gates it (chunk order).
    const std::vector<at::Tensor> halves = wi_(mlp_norm_(attended)).chunk(2, -1);
    const at::Tensor gated = detail::activate(activation_, halves[0]) * halves[1];
    return attended + mlp_out_(maybe_dropout(gated, mlp_dropout_, is_training()));
  }

  std::vector<Linear> output_projections() const { return {attention_out_, mlp_out_}; }
  std::vector<Linear> input_projections() const { return {wqkv_, wi_}; }

 private:
  at::Tensor attend(const at::Tensor& x, const LayerInputs& inputs) {
    const int64_t batch = x.size(0), length = x.size(1);
    // transformers: view(B, T, 3, heads, d).unbind(-3), each transposed to [B, heads, T, d].
    const std::vector<at::Tensor> qkv = wqkv_(x).view({batch, length, 3, heads_, head_size_}).unbind(-3);
    // The rotation in fp32, cast back (transformers' apply_rotary_pos_emb; a no-op in fp32).
    const auto rotate = [&](const at::Tensor& t) {
      return detail::RotaryEmbedding::apply(t.transpose(1, 2).to(at::kFloat), inputs.cos, inputs.sin)
          .to(t.scalar_type());
    };
    const at::Tensor context = detail::attention(rotate(qkv[0]), rotate(qkv[1]), qkv[2].transpose(1, 2), inputs.mask,
                                                 is_training() ? attention_dropout_ : 0.0);
    const at::Tensor merged = context.transpose(1, 2).reshape({batch, length, heads_ * head_size_});
    return maybe_dropout(attention_out_(merged), attention_dropout_, is_training());
  }

  int64_t heads_, head_size_;
  double attention_dropout_, mlp_dropout_;
  std::string activation_;
  int64_t intermediate_;
  Norm attn_norm_{nullptr}, mlp_norm_{nullptr};
  Linear wqkv_{nullptr}, attention_out_{nullptr}, wi_{nullptr}, mlp_out_{nullptr};
};
TORCH_MODULE(ModernBertLayer);

ModernBertConfig validated(ModernBertConfig config) {
  config.validate("ModernBertConfig");
  return config;
}

// transformers' init.trunc_normal_(w, 0, std, -cutoff std, cutoff std): normal draws, those
// outside redrawn until none is (each lands inside with probability > 0.68 at cutoff >= 1).
void truncated_normal(at::Tensor weight, double std, double cutoff) {
  weight.normal_(0.0, std);
  const double bound = cutoff * std;
  for (int round = 0; round < 64; ++round) {
    const at::Tensor outside = weight.abs() > bound;
    const int64_t count = outside.sum().item<int64_t>();
    if (count == 0) return;
    weight.masked_scatter_(outside, at::randn({count}, weight.options()) * std);
  }
  weight.clamp_(-bound, bound);
}

class ModernBertModelImpl : public TransformerBackbone {
 public:
  explicit ModernBertModelImpl(ModernBertConfig config)
      : config_(validated(std::move(config))),
        global_rotary_(config_.head_size(), config_.global_rope_theta()),
        local_rotary_(config_.head_size(), config_.local_rope_theta()) {
    auto embeddings = detail::scope(*this, "embeddings");
    torch::nn::EmbeddingOptions words(config_.vocab_size(), config_.hidden_size());
    if (config_.pad_token_id() >= 0) words.padding_idx(config_.pad_token_id());
    tok_embeddings_ = embeddings->register_module("tok_embeddings", torch::nn::Embedding(words));
    embedding_norm_ = embeddings->register_module("norm", ModernBertLayerImpl::norm(config_));
    auto layer_list = detail::scope(*this, "layers");
    for (int64_t i = 0; i < config_.num_hidden_layers(); ++i)
      layers_.push_back(layer_list->register_module(std::to_string(i), ModernBertLayer(config_, i)));
    final_norm_ = register_module("final_norm", ModernBertLayerImpl::norm(config_));
    initialise();
  }

  TransformerOutput encode(const at::Tensor& input_ids, const at::Tensor& attention_mask,
                           const at::Tensor& token_type_ids, bool /*with_pooler*/) override {
    check_inputs(input_ids, attention_mask, token_type_ids);
    const at::Tensor embedded = embedding_norm_(detail::widened(tok_embeddings_(input_ids.to(at::kLong))));
    at::Tensor hidden = maybe_dropout(embedded, config_.embedding_dropout(), is_training());
    const int64_t length = input_ids.size(1);
    LayerInputs global, local;
    // cos and sin in the embeddings' dtype, as transformers.
    std::tie(global.cos, global.sin) = global_rotary_.cos_sin(length, hidden);
    std::tie(local.cos, local.sin) = local_rotary_.cos_sin(length, hidden);
    global.mask = detail::attention_mask(attention_mask, {});
    local.mask = detail::attention_mask(attention_mask, local_pattern(length));
    for (size_t i = 0; i < layers_.size(); ++i)
      hidden = layers_[i](hidden, config_.local_layer(static_cast<int64_t>(i)) ? local : global);
    TransformerOutput out;
    out.last_hidden_state = final_norm_(hidden);
    return out;
  }

  std::string model_type() const override { return "modernbert"; }
  std::string config_json() const override { return config_.to_json(); }
  int64_t hidden_size() const override { return config_.hidden_size(); }
  int64_t vocab_size() const override { return config_.vocab_size(); }
  int64_t max_tokens() const override { return config_.max_position_embeddings(); }
  /// ModernBertForMaskedLM (and the classification models) hold the encoder under "model.".
  std::string checkpoint_prefix() const override { return "model."; }

 private:
  // |query - key| <= local_attention / 2 (transformers' sliding_window_bidirectional_overlay).
  // transformers leaves the window out (no mask at all without padding) when the texts are
  // shorter than the half-window, where it hides nothing: so does this, for the same kernel.
  detail::AttentionPattern local_pattern(int64_t length) const {
    detail::AttentionPattern pattern;
    if (length >= config_.half_window()) pattern.window_left = pattern.window_right = config_.half_window();
    return pattern;
  }

  // transformers' _init_weights: truncated normals, the output projections' scaled down by
  // sqrt(2 x layers); norms 1, biases 0.
  void initialise() {
    detail::initialise_weights(*this, config_.initializer_range());
    c10::NoGradGuard no_grad;
    const double std = config_.initializer_range(), cutoff = config_.initializer_cutoff_factor();
    const double out_std = std / std::sqrt(2.0 * static_cast<double>(config_.num_hidden_layers()));
    truncated_normal(tok_embeddings_->weight, std, cutoff);
    for (auto& layer : layers_) {
      for (auto& projection : layer->input_projections()) truncated_normal(projection->weight, std, cutoff);
      for (auto& projection : layer->output_projections()) truncated_normal(projection->weight, out_std, cutoff);
    }
  }

  void check_inputs(const at::Tensor& ids, const at::Tensor& mask, const at::Tensor& types) const {
    detail::check_token_inputs("modernbert", ids, mask, types, config_.vocab_size(),
                               config_.max_position_embeddings());
  }


  ModernBertConfig config_;
  detail::RotaryEmbedding global_rotary_, local_rotary_;
  torch::nn::Embedding tok_embeddings_{nullptr};
  Norm embedding_norm_{nullptr}, final_norm_{nullptr};
  std::vector<ModernBertLayer> layers_;
};

}  // namespace

detail::ReadConfig read_modernbert(const nlohmann::json& config, const std::string& text, const std::string& file) {
  const auto c = ModernBertConfig::from_parsed(config, text, file);
  return {c.parameter_count(), [c] { return std::make_shared<ModernBertModelImpl>(c); }};
}

}  // namespace hf
}  // namespace gradcache
