// The config.json fields of each architecture beyond BERT's: a bad field is refused naming the
// file and saying what is wrong, and the weights a config declares are the weights the built
// model has (what load_transformer compares with a weights file before building anything).
#include "model_test_util.h"

#include "hf/models/bloom.h"
#include "hf/models/llama.h"
#include "hf/models/modernbert.h"
#include "hf/models/mpnet.h"

namespace hf = gradcache::hf;

namespace {

// The ModelFileError of building `config` (a config.json of any architecture) as c/config.json.
std::string config_error(const nlohmann::json& config) {
  return hftest::model_file_error([&] { hf::build_transformer(config.dump(), "c/config.json"); });
}

// Each change made to `tiny` is refused naming c/config.json and saying what `expected` says.
void expect_refusals(const nlohmann::json& tiny, const std::vector<std::pair<nlohmann::json, std::string>>& cases) {
  for (const auto& [change, expected] : cases) {
    nlohmann::json config = tiny;
    config.update(change);
    const std::string message = config_error(config);
    EXPECT_NE(message.find("c/config.json"), std::string::npos) << message;
    EXPECT_NE(message.find(expected), std::string::npos) << change.dump() << ": " << message;
  }
}

int64_t weights_of(hf::TransformerBackbone& model) {
  int64_t count = 0;
  for (const auto& item : model.named_parameters()) count += item.value().numel();
  return count;
}

}  // namespace

TEST(MPNetConfig, RefusesBadFieldsNamingThem) {
  const nlohmann::json tiny = {{"model_type", "mpnet"}, {"vocab_size", 50}, {"hidden_size", 8}, {"num_hidden_layers", 1},
                               {"num_attention_heads", 2}, {"intermediate_size", 10}, {"max_position_embeddings", 16}};
  const std::vector<std::pair<nlohmann::json, std::string>> cases = {
      {{{"hidden_size", 10}, {"num_attention_heads", 4}}, "hidden_size 10 is not a multiple of num_attention_heads 4"},
      {{{"vocab_size", int64_t{1} << 40}}, "vocab_size"},
      {{{"num_hidden_layers", "12"}}, "num_hidden_layers"},
      {{{"layer_norm_eps", 0}}, "layer_norm_eps"},
      {{{"hidden_act", "mish"}}, "hidden_act"},
      {{{"relative_attention_num_buckets", 16}}, "relative_attention_num_buckets 16 is below the 32 buckets"},
      {{{"max_position_embeddings", 2}}, "max_position_embeddings 2 leaves no position"},
      {{{"pad_token_id", 50}}, "pad_token_id 50 is outside the vocabulary"},
  };
  expect_refusals(tiny, cases);
}

TEST(MPNetConfig, CountsEveryWeightAndPositionsAfterPadding) {
  const std::string text = R"({"model_type": "mpnet", "vocab_size": 50, "hidden_size": 8, "num_hidden_layers": 2,
                               "num_attention_heads": 2, "intermediate_size": 10, "max_position_embeddings": 16,
                               "relative_attention_num_buckets": 40})";
  auto model = hf::build_transformer(text, "c/config.json");
  EXPECT_EQ(weights_of(*model), hf::MPNetConfig::parse(text, "c/config.json").parameter_count(/*with_pooler=*/true));
  EXPECT_EQ(model->max_tokens(), 14);  // positions 2 .. 15
  EXPECT_EQ(model->checkpoint_prefix(), "mpnet.");
}

TEST(ModernBertConfig, RefusesBadFieldsNamingThem) {
  const nlohmann::json tiny = {{"model_type", "modernbert"}, {"vocab_size", 50}, {"hidden_size", 8},
                               {"num_hidden_layers", 2},     {"num_attention_heads", 2}, {"intermediate_size", 10},
                               {"max_position_embeddings", 16}, {"pad_token_id", 0}};
  const nlohmann::json yarn = {{"full_attention", {{"rope_type", "yarn"}, {"factor", 2.0}}}};
  const std::vector<std::pair<nlohmann::json, std::string>> cases = {
      {{{"hidden_size", 10}, {"num_attention_heads", 4}}, "hidden_size 10 is not a multiple of num_attention_heads 4"},
      {{{"hidden_size", 6}}, "the head size 3 is odd"},
      {{{"vocab_size", int64_t{1} << 40}}, "vocab_size"},
      {{{"num_hidden_layers", "12"}}, "num_hidden_layers"},
      {{{"intermediate_size", 0}}, "intermediate_size"},
      {{{"local_attention", 1}}, "local_attention"},
      {{{"global_attn_every_n_layers", 0}}, "global_attn_every_n_layers"},
      {{{"layer_types", {"full_attention"}}}, "\"layer_types\" lists 1 layers, but num_hidden_layers is 2"},
      {{{"layer_types", {"full_attention", "chunked_attention"}}}, "\"chunked_attention\""},
      {{{"layer_types", "full_attention"}}, "\"layer_types\" must be a list"},
      {{{"rope_parameters", yarn}}, "rope_type \"yarn\""},
      {{{"global_rope_theta", 0}}, "global_rope_theta"},
      {{{"hidden_activation", "mish"}}, "hidden_activation"},
      {{{"norm_eps", 0}}, "norm_eps"},
      {{{"attention_dropout", 1}}, "attention_dropout"},
      {{{"norm_bias", "yes"}}, "norm_bias"},
      {{{"pad_token_id", 50}}, "pad_token_id 50 is outside the vocabulary"},
      {{{"head_dim", 8}}, "head_dim 8 differs from hidden_size / num_attention_heads (4)"},
  };
  expect_refusals(tiny, cases);
}

TEST(ModernBertConfig, CountsEveryWeightAndReadsBothSpellings) {
  // Every bias on, and the spelling of checkpoints made before transformers 5 (the layer kinds
  // from global_attn_every_n_layers, the rotary bases as global / local_rope_theta).
  const std::string text = R"({"model_type": "modernbert", "vocab_size": 50, "hidden_size": 8, "num_hidden_layers": 4,
                               "num_attention_heads": 2, "intermediate_size": 10, "max_position_embeddings": 16,
                               "pad_token_id": 0, "norm_bias": true, "attention_bias": true, "mlp_bias": true,
                               "global_attn_every_n_layers": 2, "global_rope_theta": 1000.0, "local_rope_theta": 30.0})";
  auto model = hf::build_transformer(text, "c/config.json");
  const auto config = hf::ModernBertConfig::parse(text, "c/config.json");
  EXPECT_EQ(weights_of(*model), config.parameter_count());
  const std::string plain = R"({"model_type": "modernbert", "vocab_size": 50, "hidden_size": 8, "num_hidden_layers": 3,
                                "num_attention_heads": 2, "intermediate_size": 10, "pad_token_id": 0})";
  EXPECT_EQ(weights_of(*hf::build_transformer(plain, "c")), hf::ModernBertConfig::parse(plain, "c").parameter_count());
  EXPECT_EQ(model->max_tokens(), 16);
  EXPECT_EQ(model->checkpoint_prefix(), "model.");
  EXPECT_EQ(config.global_rope_theta(), 1000.0);
  EXPECT_EQ(config.local_rope_theta(), 30.0);
  const auto saved = nlohmann::json::parse(model->config_json());
  EXPECT_EQ(saved.at("layer_types"),
            nlohmann::json({"full_attention", "sliding_attention", "full_attention", "sliding_attention"}));
  EXPECT_EQ(saved.at("rope_parameters").at("sliding_attention").at("rope_theta"), 30.0);
  // transformers 5's rope_parameters win over the old thetas.
  auto newer = nlohmann::json::parse(text);
  newer["rope_parameters"] = {{"full_attention", {{"rope_type", "default"}, {"rope_theta", 5000.0}}}};
  EXPECT_EQ(hf::ModernBertConfig::parse(newer.dump(), "c").global_rope_theta(), 5000.0);
  EXPECT_EQ(hf::ModernBertConfig::parse(newer.dump(), "c").local_rope_theta(), 30.0);
}

TEST(BloomConfig, RefusesBadFieldsNamingThem) {
  const nlohmann::json tiny = {{"model_type", "bloom"}, {"vocab_size", 50}, {"hidden_size", 8}, {"n_layer", 1},
                               {"n_head", 2}, {"pad_token_id", 0}};
  const std::vector<std::pair<nlohmann::json, std::string>> cases = {
      {{{"hidden_size", 10}, {"n_head", 4}}, "hidden_size 10 is not a multiple of n_head 4"},
      {{{"n_embed", 16}}, "\"hidden_size\" and \"n_embed\" (the same field) disagree"},
      {{{"num_attention_heads", 0}}, "num_attention_heads"},
      {{{"vocab_size", int64_t{1} << 40}}, "vocab_size"},
      {{{"n_layer", "12"}}, "n_layer"},
      {{{"layer_norm_epsilon", 0}}, "layer_norm_epsilon"},
      {{{"hidden_dropout", 1}}, "hidden_dropout"},
      {{{"pad_token_id", 50}}, "pad_token_id 50 is outside the vocabulary"},
      {{{"slow_but_exact", true}, {"pretraining_tp", 4}}, "slow_but_exact with pretraining_tp 4"},
  };
  expect_refusals(tiny, cases);
}

TEST(BloomConfig, ReadsEitherSpellingAndCountsEveryWeight) {
  // n_embed / num_hidden_layers / num_attention_heads, as BloomConfig's attribute_map accepts;
  // written back under the struct's own names only.
  const std::string text = R"({"model_type": "bloom", "vocab_size": 50, "n_embed": 8, "num_hidden_layers": 3,
                               "num_attention_heads": 2})";
  const auto config = hf::BloomConfig::parse(text, "c/config.json");
  EXPECT_EQ(config.hidden_size(), 8);
  EXPECT_EQ(config.n_layer(), 3);
  EXPECT_EQ(config.n_head(), 2);
  const auto written = nlohmann::json::parse(config.to_json());
  EXPECT_FALSE(written.contains("n_embed") || written.contains("num_hidden_layers"));
  EXPECT_EQ(written.at("hidden_size"), 8);
  auto model = hf::build_transformer(text, "c/config.json");
  EXPECT_EQ(weights_of(*model), config.parameter_count());
  EXPECT_EQ(model->checkpoint_prefix(), "transformer.");
}

TEST(LlamaConfig, RefusesBadFieldsNamingThem) {
  const nlohmann::json tiny = {{"model_type", "llama"},      {"vocab_size", 50},        {"hidden_size", 8},
                               {"num_hidden_layers", 1},     {"num_attention_heads", 2}, {"intermediate_size", 10},
                               {"max_position_embeddings", 16}};
  const nlohmann::json llama3 = {{"rope_type", "llama3"}, {"factor", 8.0}, {"low_freq_factor", 1.0},
                                 {"high_freq_factor", 4.0}, {"original_max_position_embeddings", 8}};
  auto with = [&](const char* key, const nlohmann::json& value) {
    nlohmann::json rope = llama3;
    if (value.is_null()) rope.erase(key); else rope[key] = value;
    return nlohmann::json{{"rope_parameters", rope}};
  };
  const std::vector<std::pair<nlohmann::json, std::string>> cases = {
      {{{"hidden_size", 10}, {"num_attention_heads", 4}}, "hidden_size 10 is not a multiple of num_attention_heads 4"},
      {{{"num_key_value_heads", 3}}, "num_attention_heads 2 is not a multiple of num_key_value_heads 3"},
      {{{"head_dim", 3}}, "head size 3 is odd"},
      {{{"vocab_size", int64_t{1} << 40}}, "vocab_size"},
      {{{"pad_token_id", 50}}, "pad_token_id 50 is outside the vocabulary"},
      {{{"rope_scaling", {{"rope_type", "yarn"}, {"factor", 4.0}}}}, "rope_type \"yarn\", which is not supported yet"},
      {{{"rope_parameters", {{"rope_type", "dynamic"}, {"factor", 2.0}}}}, "rope_type \"dynamic\""},
      {{{"rope_parameters", "llama3"}}, "\"rope_parameters\" must be an object"},
      {{{"rope_scaling", {{"type", "linear"}}}}, "rope_scaling of rope_type \"linear\" needs \"factor\""},
      {with("factor", 0.0), "factor"},
      {with("original_max_position_embeddings", nullptr), "needs \"original_max_position_embeddings\""},
      {with("high_freq_factor", 1.0), "high_freq_factor must be larger than low_freq_factor"},
      {{{"use_sliding_window", true}, {"model_type", "qwen2"}}, "sliding-window layers are not supported"},
  };
  expect_refusals(tiny, cases);
}

TEST(LlamaConfig, RopeScalingIsReadAndWrittenAndScalesTheFrequencies) {
  // Llama 3.1's rope_scaling (earlier files) and rope_parameters (transformers 5) read alike;
  // written as rope_parameters with every field. Linear scaling by 2 is the default rotation
  // at half the positions: position 2p of the scaled model turns as far as p of the plain one.
  const nlohmann::json tiny = {{"model_type", "llama"}, {"vocab_size", 50}, {"hidden_size", 8}, {"num_hidden_layers", 1},
                               {"num_attention_heads", 2}, {"intermediate_size", 10}, {"max_position_embeddings", 16}};
  const nlohmann::json llama3 = {{"rope_type", "llama3"}, {"factor", 8.0}, {"low_freq_factor", 1.0},
                                 {"high_freq_factor", 4.0}, {"original_max_position_embeddings", 8}};
  nlohmann::json old_spelling = tiny, new_spelling = tiny;
  old_spelling["rope_scaling"] = llama3;
  new_spelling["rope_parameters"] = llama3;
  new_spelling["rope_parameters"]["rope_theta"] = 500000.0;
  const auto a = hf::LlamaConfig::parse(old_spelling.dump(), "c"), b = hf::LlamaConfig::parse(new_spelling.dump(), "c");
  EXPECT_EQ(a.rope_scaling().kind, hf::detail::RopeScaling::Kind::Llama3);
  EXPECT_EQ(b.rope_scaling().original_max_position_embeddings, 8);
  EXPECT_EQ(b.rope_theta(), 500000.0);
  const auto written = nlohmann::json::parse(b.to_json()).at("rope_parameters");
  EXPECT_EQ(written.at("rope_type"), "llama3");
  EXPECT_EQ(written.at("high_freq_factor"), 4.0);
  EXPECT_EQ(hf::LlamaConfig::parse(b.to_json(), "c").rope_scaling().low_freq_factor, 1.0);

  const hf::detail::RotaryEmbedding plain(8, 10000.0);
  hf::detail::RopeScaling linear;
  linear.kind = hf::detail::RopeScaling::Kind::Linear;
  linear.factor = 2.0;
  const hf::detail::RotaryEmbedding scaled(8, 10000.0, linear);
  const auto like = torch::zeros({1});
  const auto [plain_cos, plain_sin] = plain.cos_sin(8, like);
  const auto [scaled_cos, scaled_sin] = scaled.cos_sin(16, like);
  EXPECT_TRUE(torch::allclose(scaled_cos.index({torch::indexing::Slice(0, 16, 2)}), plain_cos, 1e-6, 1e-6));
  EXPECT_FALSE(torch::allclose(scaled_cos.narrow(0, 0, 8), plain_cos, 1e-3, 1e-3));
}
