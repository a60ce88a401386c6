// BertModel as transformers' modeling_bert.py computes it (BertEmbeddings, BertLayer, BertPooler),
// in the same order of operations, on the shared layers (src/hf/layers/): learned embeddings,
// attention, activations. RoBERTa and XLM-RoBERTa are this model with RoBERTa's positions.
// One mask per forward; the head split and merge are views except the one copy that joins the
// heads after attention.
#include <gradcache/hf/bert.h>

#include "hf/model_json.h"
#include "hf/models/architectures.h"

#include "hf/layers/attention.h"
#include "hf/layers/embeddings.h"
#include "hf/layers/feed_forward.h"
#include "hf/layers/module_tree.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

namespace gradcache {
namespace hf {
namespace {

using detail::linear;
using detail::maybe_dropout;
using detail::scope;

torch::nn::LayerNorm layer_norm(torch::nn::Module& parent, const BertConfig& config) {
  return detail::layer_norm(parent, "LayerNorm", config.hidden_size(), config.layer_norm_eps());
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
  const at::Tensor hidden = detail::activate(activation_, intermediate_(x));
  return output_norm_(maybe_dropout(output_dense_(hidden), hidden_dropout_, is_training()) + x);
}

BertModelImpl::BertModelImpl(BertConfig config) : config_(std::move(config)) {
  config_.validate("BertConfig");
  const int64_t d = config_.hidden_size();
  embeddings_ = register_module("embeddings", std::make_shared<detail::LearnedEmbeddingsImpl>(
                                                  detail::LearnedEmbeddingsOptions()
                                                      .vocab_size(config_.vocab_size())
                                                      .hidden_size(d)
                                                      .max_positions(config_.max_position_embeddings())
                                                      .token_types(config_.type_vocab_size())
                                                      .pad_token_id(config_.pad_token_id())
                                                      .positions_after_padding(config_.positions_after_padding())
                                                      .layer_norm_eps(config_.layer_norm_eps())
                                                      .dropout(config_.hidden_dropout_prob())));
  auto layer_list = scope(*scope(*this, "encoder"), "layer");
  for (int64_t i = 0; i < config_.num_hidden_layers(); ++i)
    layers_.push_back(layer_list->register_module(std::to_string(i), BertLayer(config_)));
  pooler_ = linear(*scope(*this, "pooler"), "dense", d, d);
  detail::initialise_weights(*this, config_.initializer_range());
  c10::NoGradGuard no_grad;
  embeddings_->word_embeddings()->weight[config_.pad_token_id()].zero_();
}

void BertModelImpl::remove_pooler() {
  unregister_module("pooler");
  pooler_ = Linear(nullptr);
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
  // RoBERTa's positions start after pad_token_id: that many fewer tokens fit.
  TORCH_CHECK(input_ids.size(1) <= max_tokens(), "BertModel: ", input_ids.size(1), " tokens, more than the ", max_tokens(),
              " positions of the model (max_position_embeddings ", config_.max_position_embeddings(),
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
  at::Tensor hidden = embeddings_->forward(input_ids, token_type_ids);
  // Built once for all layers; none at all when nothing is padding (the fused kernels' fast path).
  const at::Tensor key_mask = detail::attention_mask(attention_mask, detail::AttentionPattern());
  for (auto& layer : layers_) hidden = layer(hidden, key_mask);
  TransformerOutput out;
  out.last_hidden_state = hidden;
  if (with_pooler && has_pooler()) out.pooler_output = at::tanh(pooler_(hidden.select(1, 0)));
  return out;
}

detail::ReadConfig detail::read_bert(const nlohmann::json& config, const std::string& text, const std::string& file) {
  const auto c = BertConfig::from_parsed(config, text, file);
  return {c.parameter_count(/*with_pooler=*/false), [c] { return BertModel(c).ptr(); }};
}

std::shared_ptr<TransformerBackbone> build_bert(const std::string& config_text, const std::string& config_file) {
  return detail::read_bert(detail::parse_json(config_text, config_file), config_text, config_file).build();
}

int64_t count_bert_parameters(const std::string& config_text, const std::string& config_file) {
  return detail::read_bert(detail::parse_json(config_text, config_file), config_text, config_file).parameters;
}

}  // namespace hf
}  // namespace gradcache
