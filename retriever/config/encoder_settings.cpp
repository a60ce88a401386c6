// The settings of the tokenizer and the encoder (the built-in one's shape, --model, --model-dir,
// the prompts, what trains) as rows of train's settings table.
#include "retriever/config/encoder_settings.h"

namespace gradcache {
namespace retriever {
namespace {

using Table = SettingsTable<TrainConfig>;

// The text put before each query and passage (sentence-transformers' prompts).
void add_prompt_settings(Table& t, const char* group) {
  t.add(nested_field("query_prompt", &TrainConfig::encoder, &EncoderSettings::query_prompt, "--query-prompt",
                     "Text put before each query, e.g. \"query: \" (default: a --model-dir model's prompt named "
                     "\"query\", if it has one)")
            .in_group(group));
  t.add(nested_field("passage_prompt", &TrainConfig::encoder, &EncoderSettings::passage_prompt, "--passage-prompt",
                     "Text put before each passage, e.g. \"passage: \" (default: a --model-dir model's prompt named "
                     "\"document\", \"passage\" or \"corpus\", if it has one)")
            .in_group(group));
  t.add(nested_field("model_prompts", &TrainConfig::encoder, &EncoderSettings::model_prompts, "--model-prompts",
                     "Use a --model-dir model's own query and document prompts when no --query-prompt or "
                     "--passage-prompt is given (false: none)")
            .in_group(group));
  t.add(nested_field("specb", &TrainConfig::encoder, &EncoderSettings::specb, "--specb",
                     "SGPT's bracket markers (with --model-dir): each query's tokens between \"[\" and \"]\", each "
                     "passage's between \"{\" and \"}\", so that one encoder tells the sides apart")
            .in_group(group)
            .as_switch());
}

}  // namespace

void add_model_settings(Table& t) {
  const char* group = "Tokenizer and model";
  t.add(nested_field("tokenizer", &TrainConfig::tokenizer, &TokenizerSettings::file, "--tokenizer",
                     "sentencepiece .model; default: train one on the training texts")
            .in_group(group));
  t.add(nested_field("vocab_size", &TrainConfig::tokenizer, &TokenizerSettings::vocab_size, "--vocab-size",
                     "Pieces of a trained tokenizer")
            .in_group(group)
            .checked(at_least(16)));
  t.add(nested_field("query_max_len", &TrainConfig::tokenizer, &TokenizerSettings::query_max_len, "--query-max-len",
                     "Query tokens kept (with --model-dir: default 512, at most the model's max_seq_length)")
            .in_group(group)
            .checked(positive()));
  t.add(nested_field("passage_max_len", &TrainConfig::tokenizer, &TokenizerSettings::passage_max_len,
                     "--passage-max-len", "Passage tokens kept (with --model-dir: default 512, at most the model's max_seq_length)")
            .in_group(group)
            .checked(positive()));
  t.add(nested_field("model_dir", &TrainConfig::encoder, &EncoderSettings::pretrained, "--model-dir",
                     "A pretrained Hugging Face / sentence-transformers model directory (BERT family: "
                     "all-MiniLM-L6-v2, bge, e5, gte) to fine-tune, with its tokenizer; --dim, --layers, --heads, "
                     "--ffn-dim, --projection, --dropout, --normalize and --vocab-size are the model's")
            .in_group(group)
            .hint("DIR"));
  t.add(nested_field("model", &TrainConfig::encoder, &EncoderSettings::torchscript, "--model",
                     "TorchScript encoder: forward(input_ids, attention_mask) -> [B, d] or [B, T, d]; default: the "
                     "built-in Transformer")
            .in_group(group));
  t.add(nested_field("dim", &TrainConfig::encoder, &EncoderSettings::dim, "--dim", "Built-in encoder width")
            .in_group(group)
            .checked(positive()));
  t.add(nested_field("layers", &TrainConfig::encoder, &EncoderSettings::layers, "--layers", "Transformer layers")
            .in_group(group)
            .checked([](const nlohmann::json& v) -> std::string {
              // 0 trained an encoder that only averages token embeddings, with exit 0 (issue 27)
              return v.get<double>() >= 1 ? "" : "must be at least 1 (with 0 the encoder has no Transformer layer)";
            }));
  t.add(nested_field("heads", &TrainConfig::encoder, &EncoderSettings::heads, "--heads", "Attention heads")
            .in_group(group)
            .checked(positive()));
  t.add(nested_field("ffn_dim", &TrainConfig::encoder, &EncoderSettings::ffn_dim, "--ffn-dim", "Feed-forward width")
            .in_group(group)
            .checked(positive()));
  t.add(nested_field("projection_dim", &TrainConfig::encoder, &EncoderSettings::projection_dim, "--projection",
                     "Projection after pooling (0: none)")
            .in_group(group)
            .checked(at_least(0)));
  t.add(nested_field("dropout", &TrainConfig::encoder, &EncoderSettings::dropout, "--dropout", "Dropout")
            .in_group(group)
            .checked(in_range(0, 1)));
  t.add(nested_field("normalize", &TrainConfig::encoder, &EncoderSettings::normalize, "--normalize",
                     "L2-normalise the representations (cosine similarity)")
            .in_group(group));
  t.add(nested_field("untie", &TrainConfig::encoder, &EncoderSettings::untie, "--untie",
                     "Separate query and passage encoders (default: one shared encoder)")
            .in_group(group)
            .as_switch());
  t.add(nested_field("train_params", &TrainConfig::encoder, &EncoderSettings::train_params, "--train-params",
                     "Which encoder parameters train: all (default), bias (BitFit: names containing \"bias\", "
                     "as SGPT's --freezenonbias), or a regular expression searched in each parameter's "
                     "Hugging Face name; the others are frozen (no gradient, no optimizer state)")
            .in_group(group)
            .hint("bias|REGEX")
            .parsed_by([](const std::string& text) {
              return nlohmann::json{{"train_params", text == "all" ? std::string() : text}};
            })
            .checked([](const nlohmann::json& v) { return pattern_error(v.get<std::string>()); }));
  t.add(nested_field("freeze_embeddings", &TrainConfig::encoder, &EncoderSettings::freeze_embeddings,
                     "--freeze-embeddings", "Freeze the embeddings (parameters whose name contains \"embed\")")
            .in_group(group)
            .as_switch());
  add_prompt_settings(t, group);
}

}  // namespace retriever
}  // namespace gradcache
