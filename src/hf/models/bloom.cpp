// BloomModel as transformers' modeling_bloom.py computes it, in the same order of operations and
// dtypes: word_embeddings, word_embeddings_layernorm, then n_layer blocks of
//     n = input_layernorm(x);           a = r + dropout(dense(attention(query_key_value(n), alibi)))
//     m = post_attention_layernorm(a);  x = s + dropout(dense_4h_to_h(bloom_gelu(dense_h_to_4h(m))))
// (r, s: x and a, or n and m under apply_residual_connection_post_layernorm), then ln_f. The
// attention scores are baddbmm(alibi, q, k^T, beta 1, alpha 1/sqrt(head size)) under a causal
// mask, softmax in fp32, as BloomAttention does: one fused multiply-add, not a scale then a sum.
#include "hf/models/bloom.h"

#include "hf/layers/alibi.h"
#include "hf/layers/attention.h"
#include "hf/layers/module_tree.h"
#include "hf/layers/token_inputs.h"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/normalization.h>

#include <cmath>
#include <limits>

namespace gradcache {
namespace hf {
namespace {

using detail::linear;
using detail::maybe_dropout;
using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

torch::nn::LayerNorm layer_norm(torch::nn::Module& parent, const char* name, const BloomConfig& config) {
  return detail::layer_norm(parent, name, config.hidden_size(), config.layer_norm_epsilon());
}

// bloom_gelu_forward and bloom_gelu_back, operation for operation (transformers' GeLUFunction:
// the tanh approximation with Megatron's rounded constants, and its own backward).
at::Tensor bloom_gelu_forward(const at::Tensor& x) { return x * 0.5 * (at::tanh(x * 0.79788456 * (x * 0.044715 * x + 1)) + 1.0); }

struct BloomGelu : public torch::autograd::Function<BloomGelu> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x) {
    ctx->save_for_backward({x});
    return bloom_gelu_forward(x);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const at::Tensor x = ctx->get_saved_variables()[0];
    const at::Tensor tanh_out = at::tanh(x * 0.79788456 * (x * 0.044715 * x + 1));
    // sqrt(2/pi) * 3 * 0.044715 = 0.1070322243
    const at::Tensor ff = x * 0.5 * ((1 - tanh_out * tanh_out) * (x * 0.1070322243 * x + 0.79788456)) + (tanh_out + 1) * 0.5;
    return {ff * grads[0]};
  }
};

class BloomBlockImpl : public torch::nn::Module {
 public:
  explicit BloomBlockImpl(const BloomConfig& config)
      : heads_(config.n_head()),
        head_size_(config.head_size()),
        hidden_dropout_(config.hidden_dropout()),
        attention_dropout_(config.attention_dropout()),
        post_layernorm_residual_(config.apply_residual_connection_post_layernorm()) {
    const int64_t d = config.hidden_size();
    input_layernorm_ = layer_norm(*this, "input_layernorm", config);
    auto attention = detail::scope(*this, "self_attention");
    query_key_value_ = linear(*attention, "query_key_value", d, 3 * d);
    dense_ = linear(*attention, "dense", d, d);
    post_attention_layernorm_ = layer_norm(*this, "post_attention_layernorm", config);
    auto mlp = detail::scope(*this, "mlp");
    dense_h_to_4h_ = linear(*mlp, "dense_h_to_4h", d, 4 * d);
    dense_4h_to_h_ = linear(*mlp, "dense_4h_to_h", 4 * d, d);
  }

  at::Tensor forward(const at::Tensor& x, const at::Tensor& alibi, const at::Tensor& mask) {
    const at::Tensor normed = input_layernorm_(x);
    const at::Tensor attended = attention(normed, alibi, mask) + (post_layernorm_residual_ ? normed : x);
    const at::Tensor normed_again = post_attention_layernorm_(attended);
    const at::Tensor hidden = BloomGelu::apply(dense_h_to_4h_(normed_again));
    const at::Tensor residual = post_layernorm_residual_ ? normed_again : attended;
    return residual + maybe_dropout(dense_4h_to_h_(hidden), hidden_dropout_, is_training());
  }

 private:
  // BloomAttention's forward up to its dropout_add (the dropped-out output, without the residual).
  at::Tensor attention(const at::Tensor& x, const at::Tensor& alibi, const at::Tensor& mask) {
    const int64_t batch = x.size(0), length = x.size(1);
    // transformers' layout of the fused projection: [heads, 3, head size] per token.
    const at::Tensor fused = query_key_value_(x).view({batch, length, heads_, 3, head_size_});
    auto part = [&](int64_t which) { return fused.select(3, which).transpose(1, 2).reshape({batch * heads_, -1, head_size_}); };
    const at::Tensor q = part(0), k = part(1).transpose(-1, -2), v = part(2);
    const double inverse_norm = 1.0 / std::sqrt(static_cast<double>(head_size_));
    at::Tensor weights = at::baddbmm(alibi, q, k, /*beta=*/1.0, /*alpha=*/inverse_norm).view({batch, heads_, length, -1});
    weights = weights.masked_fill(mask.logical_not(), -std::numeric_limits<double>::infinity());
    at::Tensor probabilities = at::softmax(weights, -1, at::kFloat).to(q.scalar_type());
    probabilities = maybe_dropout(probabilities, attention_dropout_, is_training());
    const at::Tensor context = at::bmm(probabilities.view({batch * heads_, length, -1}), v);
    const at::Tensor merged =
        context.view({batch, heads_, length, head_size_}).permute({0, 2, 1, 3}).reshape({batch, length, heads_ * head_size_});
    return maybe_dropout(dense_(merged), hidden_dropout_, is_training());
  }

  int64_t heads_, head_size_;
  double hidden_dropout_, attention_dropout_;
  bool post_layernorm_residual_;
  torch::nn::LayerNorm input_layernorm_{nullptr}, post_attention_layernorm_{nullptr};
  Linear query_key_value_{nullptr}, dense_{nullptr}, dense_h_to_4h_{nullptr}, dense_4h_to_h_{nullptr};
};
TORCH_MODULE(BloomBlock);

BloomConfig validated(BloomConfig config) {
  config.validate("BloomConfig");
  return config;
}

class BloomModelImpl : public TransformerBackbone {
 public:
  explicit BloomModelImpl(BloomConfig config) : config_(validated(std::move(config))) {
    word_embeddings_ =
        register_module("word_embeddings", torch::nn::Embedding(config_.vocab_size(), config_.hidden_size()));
    word_embeddings_layernorm_ = layer_norm(*this, "word_embeddings_layernorm", config_);
    auto blocks = detail::scope(*this, "h");
    for (int64_t i = 0; i < config_.n_layer(); ++i) blocks_.push_back(blocks->register_module(std::to_string(i), BloomBlock(config_)));
    ln_f_ = layer_norm(*this, "ln_f", config_);
    detail::initialise_weights(*this, config_.initializer_range());
  }

  TransformerOutput encode(const at::Tensor& input_ids, const at::Tensor& attention_mask, const at::Tensor& token_type_ids,
                           bool /*with_pooler*/) override {
    check_inputs(input_ids, attention_mask, token_type_ids);
    at::Tensor hidden = word_embeddings_layernorm_(detail::widened(word_embeddings_(input_ids.to(at::kLong))));
    const at::Tensor alibi = detail::alibi_bias(attention_mask, config_.n_head(), hidden.scalar_type());
    detail::AttentionPattern causal;
    causal.causal = true;
    const at::Tensor mask = detail::attention_mask(attention_mask, causal);
    for (auto& block : blocks_) hidden = block(hidden, alibi, mask);
    TransformerOutput out;
    out.last_hidden_state = ln_f_(hidden);
    return out;
  }

  std::string model_type() const override { return "bloom"; }
  std::string config_json() const override { return config_.to_json(); }
  int64_t hidden_size() const override { return config_.hidden_size(); }
  int64_t vocab_size() const override { return config_.vocab_size(); }
  int64_t max_tokens() const override { return BloomConfig::kMaxTokens; }
  /// BloomForCausalLM and the other task models hold the model under "transformer.".
  std::string checkpoint_prefix() const override { return "transformer."; }

 private:
  void check_inputs(const at::Tensor& ids, const at::Tensor& mask, const at::Tensor& types) const {
    detail::check_token_inputs("BloomModel", ids, mask, types, config_.vocab_size(), max_tokens());
  }


  BloomConfig config_;
  torch::nn::Embedding word_embeddings_{nullptr};
  torch::nn::LayerNorm word_embeddings_layernorm_{nullptr}, ln_f_{nullptr};
  std::vector<BloomBlock> blocks_;
};

}  // namespace

detail::ReadConfig read_bloom(const nlohmann::json& config, const std::string& text, const std::string& file) {
  const auto c = BloomConfig::from_parsed(config, text, file);
  return {c.parameter_count(), [c] { return std::make_shared<BloomModelImpl>(c); }};
}

}  // namespace hf
}  // namespace gradcache
