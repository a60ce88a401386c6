// BertModel as transformers' modeling_bert.py computes it (BertEmbeddings, BertLayer, BertPooler),
// in the same order of operations. One mask per forward; the head split and merge are views
// except the one copy that joins the heads after attention.
#include <gradcache/hf/bert.h>

#include "hf/attention.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/init.h>

namespace gradcache {
namespace hf {
namespace {

// A module that only gives its children a name prefix ("attention", "self", "output", ...).
std::shared_ptr<torch::nn::Module> scope(torch::nn::Module& parent, const std::string& name) {
  return parent.register_module(name, std::make_shared<torch::nn::Module>());
}

torch::nn::Linear linear(torch::nn::Module& parent, const std::string& name, int64_t in, int64_t out) {
  return parent.register_module(name, torch::nn::Linear(in, out));
}

torch::nn::LayerNorm layer_norm(torch::nn::Module& parent, const BertConfig& config) {
  return parent.register_module(
      "LayerNorm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({config.hidden_size()}).eps(config.layer_norm_eps())));
}

at::Tensor maybe_dropout(const at::Tensor& x, double p, bool training) {
  return training && p > 0 ? at::dropout(x, p, /*train=*/true) : x;
}

// transformers' _init_weights: normal(0, initializer_range) weights, zero biases, LayerNorm 1
// and 0, the padding token's embedding zero. Loading a checkpoint replaces all of it.
void initialise(torch::nn::Module& model, const BertConfig& config) {
  c10::NoGradGuard no_grad;
  for (auto& item : model.named_parameters()) {
    const std::string& name = item.key();
    at::Tensor& parameter = item.value();
    if (name.find("LayerNorm.") != std::string::npos) {
      parameter.fill_(name.size() >= 6 && name.compare(name.size() - 6, 6, "weight") == 0 ? 1.0 : 0.0);
    } else if (name.size() >= 4 && name.compare(name.size() - 4, 4, "bias") == 0) {
      parameter.zero_();
    } else {
      parameter.normal_(0.0, config.initializer_range());
    }
  }
}

}  // namespace

BertLayerImpl::BertLayerImpl(const BertConfig& config)
    : heads_(config.num_attention_heads()),
      hidden_dropout_(config.hidden_dropout_prob()),
      attention_dropout_(config.attention_probs_dropout_prob()),
      activation_(config.hidden_act()) {
  const int64_t d = config.hidden_size();
  auto attention = scope(*this, "attention");
  auto self = scope(*attention, "self");
  query_ = linear(*self, "query", d, d);
  key_ = linear(*self, "key", d, d);
  value_ = linear(*self, "value", d, d);
  auto attention_output = scope(*attention, "output");
  attention_dense_ = linear(*attention_output, "dense", d, d);
  attention_norm_ = layer_norm(*attention_output, config);
  intermediate_ = linear(*scope(*this, "intermediate"), "dense", d, config.intermediate_size());
  auto output = scope(*this, "output");
  output_dense_ = linear(*output, "dense", config.intermediate_size(), d);
  output_norm_ = layer_norm(*output, config);
}

at::Tensor BertLayerImpl::forward(const at::Tensor& x, const at::Tensor& key_mask) {
  const int64_t batch = x.size(0), length = x.size(1), width = x.size(2);
  // [B, T, hidden] -> [B, heads, T, head size]: a view of the projection's output.
  auto split_heads = [&](const at::Tensor& projected) { return projected.view({batch, length, heads_, -1}).transpose(1, 2); };
  const at::Tensor context = detail::attention(split_heads(query_(x)), split_heads(key_(x)), split_heads(value_(x)),
                                               key_mask, is_training() ? attention_dropout_ : 0.0);
  const at::Tensor joined = context.transpose(1, 2).reshape({batch, length, width});
  const at::Tensor attended = attention_norm_(maybe_dropout(attention_dense_(joined), hidden_dropout_, is_training()) + x);
  return feed_forward(attended);
}

at::Tensor BertLayerImpl::feed_forward(const at::Tensor& x) {
  at::Tensor hidden = intermediate_(x);
  if (activation_ == "gelu") {
    hidden = at::gelu(hidden);
  } else if (activation_ == "relu") {
    hidden = at::relu(hidden);
  } else if (activation_ == "silu" || activation_ == "swish") {
    hidden = at::silu(hidden);
  } else {  // gelu_new, gelu_pytorch_tanh, gelu_fast: the tanh approximation
    hidden = at::gelu(hidden, "tanh");
  }
  return output_norm_(maybe_dropout(output_dense_(hidden), hidden_dropout_, is_training()) + x);
}

BertModelImpl::BertModelImpl(BertConfig config) : config_(std::move(config)) {
  config_.validate("BertConfig");
  const int64_t d = config_.hidden_size();
  auto embeddings = scope(*this, "embeddings");
  word_embeddings_ = embeddings->register_module(
      "word_embeddings",
      torch::nn::Embedding(torch::nn::EmbeddingOptions(config_.vocab_size(), d).padding_idx(config_.pad_token_id())));
  position_embeddings_ =
      embeddings->register_module("position_embeddings", torch::nn::Embedding(config_.max_position_embeddings(), d));
  token_type_embeddings_ =
      embeddings->register_module("token_type_embeddings", torch::nn::Embedding(config_.type_vocab_size(), d));
  embeddings_norm_ = layer_norm(*embeddings, config_);
  auto layer_list = scope(*scope(*this, "encoder"), "layer");
  for (int64_t i = 0; i < config_.num_hidden_layers(); ++i)
    layers_.push_back(layer_list->register_module(std::to_string(i), BertLayer(config_)));
  pooler_ = linear(*scope(*this, "pooler"), "dense", d, d);
  initialise(*this, config_);
  c10::NoGradGuard no_grad;
  word_embeddings_->weight[config_.pad_token_id()].zero_();
}

void BertModelImpl::remove_pooler() {
  unregister_module("pooler");
  pooler_ = torch::nn::Linear(nullptr);
}

at::Tensor BertModelImpl::embed(const at::Tensor& input_ids, const at::Tensor& token_type_ids) {
  const int64_t length = input_ids.size(1);
  const at::Tensor ids = input_ids.to(at::kLong);
  // Absent token types are all 0: row 0 broadcast (transformers gathers it for every position).
  const at::Tensor types = token_type_ids.defined() ? token_type_embeddings_(token_type_ids.to(at::kLong))
                                                    : token_type_embeddings_->weight.select(0, 0);
  const at::Tensor positions = position_embeddings_->weight.narrow(0, 0, length);
  const at::Tensor summed = word_embeddings_(ids) + types + positions;
  return maybe_dropout(embeddings_norm_(summed), config_.hidden_dropout_prob(), is_training());
}

TransformerOutput BertModelImpl::encode(const at::Tensor& input_ids, const at::Tensor& attention_mask,
                                        const at::Tensor& token_type_ids, bool with_pooler) {
  TORCH_CHECK(input_ids.dim() == 2 && (input_ids.scalar_type() == at::kLong || input_ids.scalar_type() == at::kInt),
              "BertModel: input_ids must be int64 or int32 [batch, tokens], got ", input_ids.scalar_type(), " ",
              input_ids.sizes());
  TORCH_CHECK(attention_mask.sizes() == input_ids.sizes(), "BertModel: attention_mask ", attention_mask.sizes(),
              " does not match input_ids ", input_ids.sizes());
  TORCH_CHECK(!token_type_ids.defined() || token_type_ids.sizes() == input_ids.sizes(), "BertModel: token_type_ids ",
              token_type_ids.sizes(), " does not match input_ids ", input_ids.sizes());
  TORCH_CHECK(input_ids.size(1) <= config_.max_position_embeddings(), "BertModel: ", input_ids.size(1),
              " tokens, more than max_position_embeddings (", config_.max_position_embeddings(),
              "): truncate the texts (max_seq_length)");
  if (input_ids.numel() > 0) {
    const int64_t low = input_ids.min().item<int64_t>(), high = input_ids.max().item<int64_t>();
    TORCH_CHECK(low >= 0 && high < config_.vocab_size(), "BertModel: token id ", low < 0 ? low : high,
                " is outside the vocabulary of ", config_.vocab_size(), " pieces (a tokenizer of another model?)");
    if (token_type_ids.defined()) {
      const int64_t types_high = token_type_ids.max().item<int64_t>();
      TORCH_CHECK(token_type_ids.min().item<int64_t>() >= 0 && types_high < config_.type_vocab_size(),
                  "BertModel: token type ids must be in [0, ", config_.type_vocab_size(), ")");
    }
  }
  at::Tensor hidden = embed(input_ids, token_type_ids);
  // Built once for all layers; none at all when nothing is padding (the fused kernels' fast path).
  const at::Tensor real = attention_mask.to(at::kBool);
  const at::Tensor key_mask = real.all().item<bool>() ? at::Tensor() : real.view({real.size(0), 1, 1, real.size(1)});
  for (auto& layer : layers_) hidden = layer(hidden, key_mask);
  TransformerOutput out;
  out.last_hidden_state = hidden;
  if (with_pooler && has_pooler()) out.pooler_output = at::tanh(pooler_(hidden.select(1, 0)));
  return out;
}

std::shared_ptr<TransformerBackbone> build_bert(const std::string& config_text, const std::string& config_file) {
  return BertModel(BertConfig::parse(config_text, config_file)).ptr();
}

int64_t count_bert_parameters(const std::string& config_text, const std::string& config_file) {
  return BertConfig::parse(config_text, config_file).parameter_count(/*with_pooler=*/false);
}

}  // namespace hf
}  // namespace gradcache
