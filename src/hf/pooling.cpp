// Each mode computes what sentence_transformers/sentence_transformer/modules/pooling.py's
// _forward_padded computes, in the same order of operations, so that results agree to rounding.
#include <gradcache/hf/pooling.h>

#include "hf/model_json.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <limits>
#include <set>
#include <utility>

namespace gradcache {
namespace hf {
namespace {

using detail::Json;

// Modes with the older config's flag for each, in the order the older format concatenates them.
const std::pair<PoolingMode, const char*> kLegacyFlags[] = {
    {PoolingMode::Cls, "pooling_mode_cls_token"},
    {PoolingMode::Max, "pooling_mode_max_tokens"},
    {PoolingMode::Mean, "pooling_mode_mean_tokens"},
    {PoolingMode::MeanSqrtLen, "pooling_mode_mean_sqrt_len_tokens"},
    {PoolingMode::WeightedMean, "pooling_mode_weightedmean_tokens"},
    {PoolingMode::LastToken, "pooling_mode_lasttoken"},
};

PoolingMode parse_mode(const Json& name, const std::string& file) {
  if (name.is_string()) {
    for (const auto& [mode, flag] : kLegacyFlags) {
      if (name.get<std::string>() == pooling_mode_name(mode)) return mode;
    }
  }
  std::string known;
  for (const auto& entry : kLegacyFlags) known += (known.empty() ? "" : ", ") + pooling_mode_name(entry.first);
  throw ModelFileError(file, "\"pooling_mode\" " + name.dump(-1, ' ', false, Json::error_handler_t::replace) +
                                 " is not a pooling mode (known: " + known + ")");
}

std::vector<PoolingMode> parse_modes(const Json& config, const std::string& file) {
  std::vector<PoolingMode> modes;
  auto named = config.find("pooling_mode");
  if (named != config.end() && !named->is_null()) {
    if (named->is_array()) {
      for (const Json& name : *named) modes.push_back(parse_mode(name, file));
      if (modes.empty()) throw ModelFileError(file, "\"pooling_mode\" is an empty list");
    } else {
      modes.push_back(parse_mode(*named, file));
    }
    return modes;
  }
  for (const auto& [mode, flag] : kLegacyFlags) {
    if (detail::bool_field(config, flag, false, file)) modes.push_back(mode);
  }
  if (modes.empty()) modes.push_back(PoolingMode::Mean);  // as sentence-transformers: no flag set means mean
  return modes;
}

// The first real token of each row ([B] int64): 0 with right padding, the padding's length with left.
at::Tensor first_real_token(const at::Tensor& mask) { return mask.to(at::kInt).argmax(1); }

at::Tensor mean_variant(const at::Tensor& embeddings, const at::Tensor& mask, bool sqrt_len, at::ScalarType accumulate) {
  const at::Tensor weights = mask.unsqueeze(-1).to(embeddings.scalar_type());
  const at::Tensor sum = (embeddings * weights).sum(1, /*keepdim=*/false, accumulate);
  at::Tensor count = weights.sum(1, /*keepdim=*/false, accumulate).clamp_min(1e-9);
  if (sqrt_len) count = count.sqrt();
  return (sum / count).to(embeddings.scalar_type());
}

at::Tensor weighted_mean(const at::Tensor& embeddings, const at::Tensor& mask, const at::Tensor& original_mask,
                         at::ScalarType accumulate) {
  const int64_t length = embeddings.size(1);
  at::Tensor positions = at::arange(1, length + 1, embeddings.options().dtype(accumulate)).view({1, -1, 1});
  if (original_mask.numel() > 0) positions = positions - first_real_token(original_mask).view({-1, 1, 1});
  const at::Tensor weights = mask.unsqueeze(-1).to(accumulate) * positions;
  const at::Tensor sum = (embeddings * weights).sum(1);
  return (sum / weights.sum(1).clamp_min(1e-9)).to(embeddings.scalar_type());
}

at::Tensor last_token(const at::Tensor& embeddings, const at::Tensor& mask) {
  const int64_t length = embeddings.size(1);
  auto [values, indices] = mask.flip(1).max(1);
  indices = at::where(values == 0, at::full_like(indices, length - 1), indices);
  const at::Tensor gather = (length - indices - 1).view({-1, 1, 1}).expand({-1, 1, embeddings.size(2)});
  const at::Tensor masked = embeddings * mask.unsqueeze(-1).expand_as(embeddings).to(embeddings.scalar_type());
  return masked.gather(1, gather).squeeze(1);
}

// The mask without the prompt's tokens (a copy: the caller's mask is replayed by the cache).
at::Tensor exclude_prompt(const at::Tensor& mask, int64_t prompt_length) {
  at::Tensor out = mask.clone();
  const at::Tensor pad = first_real_token(mask);
  if (pad.sum().item<int64_t>() == 0) {
    out.narrow(1, 0, std::min(prompt_length, out.size(1))).zero_();
  } else {
    const at::Tensor positions = at::arange(out.size(1), mask.options().dtype(at::kLong)).unsqueeze(0);
    out.masked_fill_(positions < (pad + prompt_length).unsqueeze(1), 0);
  }
  return out;
}

}  // namespace

std::string pooling_mode_name(PoolingMode mode) {
  switch (mode) {
    case PoolingMode::Cls: return "cls";
    case PoolingMode::Max: return "max";
    case PoolingMode::Mean: return "mean";
    case PoolingMode::MeanSqrtLen: return "mean_sqrt_len_tokens";
    case PoolingMode::WeightedMean: return "weightedmean";
    case PoolingMode::LastToken: return "lasttoken";
  }
  return "?";
}

int64_t pooled_dimension(const PoolingOptions& options) {
  return options.embedding_dimension() * static_cast<int64_t>(options.modes().size());
}

at::Tensor pool(const at::Tensor& token_embeddings, const at::Tensor& attention_mask, const PoolingOptions& options,
                int64_t prompt_length) {
  TORCH_CHECK(token_embeddings.dim() == 3, "pool: token embeddings must be [batch, tokens, dim], got ",
              token_embeddings.sizes());
  TORCH_CHECK(attention_mask.dim() == 2 && attention_mask.size(0) == token_embeddings.size(0) &&
                  attention_mask.size(1) == token_embeddings.size(1),
              "pool: attention_mask ", attention_mask.sizes(), " does not match the token embeddings ", token_embeddings.sizes());
  at::Tensor mask = attention_mask;
  if (!options.include_prompt() && prompt_length > 0) mask = exclude_prompt(attention_mask, prompt_length);
  const bool low_precision = token_embeddings.scalar_type() == at::kHalf || token_embeddings.scalar_type() == at::kBFloat16;
  const at::ScalarType accumulate = low_precision ? at::kFloat : token_embeddings.scalar_type();
  std::vector<at::Tensor> outputs;
  for (PoolingMode mode : options.modes()) {
    switch (mode) {
      case PoolingMode::Cls: {
        const at::Tensor index = first_real_token(mask).to(at::kLong).view({-1, 1, 1}).expand({-1, 1, token_embeddings.size(2)});
        outputs.push_back(token_embeddings.gather(1, index).squeeze(1));
        break;
      }
      case PoolingMode::Max:
        // max(1), not amax: ties send the gradient to one token, as in Python.
        outputs.push_back(std::get<0>(
            token_embeddings.masked_fill(mask.unsqueeze(-1) == 0, -std::numeric_limits<double>::infinity()).max(1)));
        break;
      case PoolingMode::Mean:
      case PoolingMode::MeanSqrtLen:
        outputs.push_back(mean_variant(token_embeddings, mask, mode == PoolingMode::MeanSqrtLen, accumulate));
        break;
      case PoolingMode::WeightedMean: outputs.push_back(weighted_mean(token_embeddings, mask, attention_mask, accumulate)); break;
      case PoolingMode::LastToken: outputs.push_back(last_token(token_embeddings, mask)); break;
    }
  }
  return outputs.size() == 1 ? outputs.front() : at::cat(outputs, -1);
}

PoolingOptions parse_pooling_config(const std::string& text, const std::string& file) {
  const Json config = detail::parse_json(text, file);
  detail::require_object(config, file);
  constexpr int64_t kMaxDimension = 1 << 20;
  const int64_t legacy = detail::int_field(config, "word_embedding_dimension", 0, 1, kMaxDimension, file);
  PoolingOptions options;
  options.embedding_dimension(detail::int_field(config, "embedding_dimension", legacy, 1, kMaxDimension, file));
  if (options.embedding_dimension() == 0)
    throw ModelFileError(file, "has neither \"embedding_dimension\" nor \"word_embedding_dimension\"");
  options.modes(parse_modes(config, file));
  options.include_prompt(detail::bool_field(config, "include_prompt", true, file));
  return options;
}

std::string pooling_config_json(const PoolingOptions& options) {
  Json config = Json::object();
  std::vector<PoolingMode> in_legacy_order;
  for (const auto& entry : kLegacyFlags) {
    for (PoolingMode mode : options.modes()) {
      if (mode == entry.first) in_legacy_order.push_back(mode);
    }
  }
  const bool distinct = std::set<PoolingMode>(options.modes().begin(), options.modes().end()).size() == options.modes().size();
  if (distinct && in_legacy_order == options.modes()) {  // the older flags say the same: write them
    config["word_embedding_dimension"] = options.embedding_dimension();
    for (const auto& [mode, flag] : kLegacyFlags) {
      bool on = false;
      for (PoolingMode chosen : options.modes()) on = on || chosen == mode;
      config[flag] = on;
    }
  } else {
    config["embedding_dimension"] = options.embedding_dimension();
    Json names = Json::array();
    for (PoolingMode mode : options.modes()) names.push_back(pooling_mode_name(mode));
    config["pooling_mode"] = names;
  }
  config["include_prompt"] = options.include_prompt();
  return config.dump(2) + "\n";
}

}  // namespace hf
}  // namespace gradcache
