// libFuzzer target: the configuration files of a Hugging Face / sentence-transformers model
// directory. The first input byte picks the reader (modulo 7), the rest is the file:
// config.json (every architecture's config through the registry's count_parameters, and
// BertConfig's round trip), modules.json,
// 1_Pooling/config.json, sentence_bert_config.json, config_sentence_transformers.json,
// 2_Normalize/config.json (or, when the first byte / 7 is odd, a Dense module's config.json),
// tokenizer_config.json's model_max_length (or, when the first byte / 7 is odd, a LoRA
// adapter's adapter_config.json, written back and read again). No model is built (a valid
// config may ask for gigabytes of weights; load_transformer checks that against the weights file).
// The contract checked on every input, besides no crash, hang or leak:
// - the only exception is ModelFileError, with a valid UTF-8 message naming the file;
// - what parses is within the documented bounds, and a pooling config, a BertConfig or an
//   adapter config written back (pooling_config_json, to_json, lora_config_json) parses to the
//   same values.
#include "fuzz_common.h"

#include <gradcache/hf/bert_config.h>
#include <gradcache/hf/dense.h>
#include <gradcache/hf/lora.h>
#include <gradcache/hf/pooling.h>
#include <gradcache/hf/sentence_transformer_config.h>
#include <gradcache/hf/transformer.h>

#include <cstdint>
#include <string>

namespace hf = gradcache::hf;

namespace {

void check_config(const std::string& text) {
  fuzz::check(hf::count_parameters(text, "config.json") > 0, "a positive parameter count");
  if (text.find("\"bert\"") == std::string::npos) return;
  const hf::BertConfig config = hf::BertConfig::parse(text, "config.json");
  fuzz::check(config.hidden_size() % config.num_attention_heads() == 0, "heads divide the width");
  fuzz::check(config.parameter_count() > 0, "a positive parameter count");
  const hf::BertConfig again = hf::BertConfig::parse(config.to_json(), "config.json");
  fuzz::check(again.to_json() == config.to_json(), "BertConfig round trip", config.to_json());
}

void check_pooling(const std::string& text) {
  const hf::PoolingOptions options = hf::parse_pooling_config(text, "1_Pooling/config.json");
  fuzz::check(options.embedding_dimension() > 0 && !options.modes().empty(), "a pooling of something");
  const hf::PoolingOptions again = hf::parse_pooling_config(hf::pooling_config_json(options), "again");
  fuzz::check(again.modes() == options.modes() && again.embedding_dimension() == options.embedding_dimension() &&
                  again.include_prompt() == options.include_prompt(),
              "pooling config round trip");
}

void check_dense(const std::string& text) {
  const hf::DenseOptions options = hf::parse_dense_config(text, "2_Dense/config.json");
  fuzz::check(options.in_features() > 0 && options.out_features() > 0, "a Dense module of positive sizes");
  const std::string json = hf::dense_config_json(options);
  fuzz::check(hf::dense_config_json(hf::parse_dense_config(json, "again")) == json, "Dense config round trip", json);
}

void check_adapter(const std::string& text) {
  const hf::LoraOptions options = hf::parse_lora_config(text, "adapter_config.json");
  fuzz::check(options.rank() > 0 && options.alpha() > 0 && options.dropout() >= 0 && options.dropout() < 1 &&
                  !options.targets().empty(),
              "an adapter of positive rank and scale, some targets, dropout in [0, 1)");
  const std::string json = hf::lora_config_json(options, "base");
  fuzz::check(hf::lora_config_json(hf::parse_lora_config(json, "again"), "base") == json, "adapter config round trip",
              json);
}

void read(uint8_t choice, const std::string& text) {
  switch (choice % 7) {
    case 0: check_config(text); break;
    case 1: {
      const auto modules = hf::parse_modules_json(text, "modules.json");
      fuzz::check(modules.size() >= 2 && modules.size() <= 3 + hf::kMaxDenseModules, "two to eleven modules");
      break;
    }
    case 2: check_pooling(text); break;
    case 3: {
      const auto settings = hf::parse_sentence_bert_config(text, "sentence_bert_config.json");
      fuzz::check(!settings.max_seq_length || *settings.max_seq_length > 0, "a positive max_seq_length");
      break;
    }
    case 4: {
      const auto settings = hf::parse_model_settings(text, "config_sentence_transformers.json");
      fuzz::check(settings.default_prompt_name.empty() || settings.prompts.count(settings.default_prompt_name),
                  "the default prompt exists");
      break;
    }
    case 5:
      if ((choice / 7) % 2 == 0) {
        hf::check_normalize_config(text, "2_Normalize/config.json");
      } else {
        check_dense(text);
      }
      break;
    default:
      if ((choice / 7) % 2 == 0) {
        const auto length = hf::tokenizer_max_length(text, "tokenizer_config.json");
        fuzz::check(!length || *length > 0, "a positive model_max_length");
      } else {
        check_adapter(text);
      }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    read(data[0], text);
  } catch (const hf::ModelFileError& error) {
    fuzz::check_message(error.what());
    fuzz::check(!error.file().empty(), "the error names a file");
  }
  return 0;
}
