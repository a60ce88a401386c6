// The settings of the tokenizer and the encoder (the built-in one's shape, --model, --model-dir,
// the prompts, what trains) as rows of train's settings table.
#include "retriever/config/encoder_settings.h"

#include "retriever/launch/process_memory.h"

#include <algorithm>
#include <cmath>
#include <string>

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

// What trains (--train-params, --freeze-embeddings) and the type the frozen weights are held in.
void add_trainable_settings(Table& t, const char* group) {
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
  t.add(nested_choice_field("base_precision", &TrainConfig::encoder, &EncoderSettings::base_precision,
                            "--base-precision",
                            "The type the frozen weight matrices of a --model-dir model are held in: fp32, or bf16 "
                            "(half their memory; what trains, the optimizer's state and the computation stay fp32)",
                            ChoiceNames<Precision>{{Precision::fp32, "fp32"}, {Precision::bf16, "bf16"}})
            .in_group(group));
  t.add_check([](const TrainConfig& c) -> std::string {
    if (c.encoder.base_precision == Precision::fp32) return "";
    if (!c.encoder.is_pretrained()) return "--base-precision bf16 goes with --model-dir";
    if (c.encoder.trainable().everything())
      return "--base-precision bf16 holds the frozen weights in bf16, but every weight trains: add --lora-rank, "
             "--adapter, --train-params or --freeze-embeddings";
    return "";
  });
}

// Access to the LoRA settings of a config.
LoraSettings& lora_of(TrainConfig& c) { return c.encoder.lora; }

template <class T>
Setting<TrainConfig> lora_field(const char* key, T LoraSettings::*member, const char* flag, const char* help,
                                const char* group) {
  return detail::accessed_field<T, TrainConfig>(
             key, [member](TrainConfig& c) -> T& { return lora_of(c).*member; }, flag, help)
      .in_group(group);
}

// LoRA adapters on a --model-dir model: new ones, or a PEFT directory's; then they alone train.
void add_lora_settings(Table& t, const char* group) {
  t.add(lora_field("lora_rank", &LoraSettings::rank, "--lora-rank",
                   "Train LoRA adapters of this rank on the frozen model (PEFT's r; 0: none); only they train, "
                   "and export writes them as a PEFT adapter directory",
                   group)
            .checked(at_least(0)));
  t.add(lora_field("lora_alpha", &LoraSettings::alpha, "--lora-alpha",
                   "LoRA's alpha: the adapters' update is scaled by alpha / rank (default: the rank, scaling 1)", group)
            .checked(at_least(0)));
  t.add(lora_field("lora_dropout", &LoraSettings::dropout, "--lora-dropout",
                   "Dropout on the adapters' inputs (replayed by the cache as every random op)", group)
            .checked([](const nlohmann::json& v) -> std::string {
              const double p = v.get<double>();
              return p >= 0 && p < 1 ? "" : "must be in [0, 1)";
            }));
  t.add(lora_field("lora_targets", &LoraSettings::targets, "--lora-targets",
                   "Modules that get adapters, comma-separated, matched as PEFT's target_modules (a name, or the end "
                   "of one after a dot); default: q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj for "
                   "decoders, query,key,value,dense for BERT-like encoders (each architecture's in docs/huggingface.md)",
                   group)
            .hint("NAMES"));
  t.add(lora_field("adapter", &LoraSettings::adapter, "--adapter",
                   "A PEFT LoRA adapter directory (adapter_config.json, adapter_model.safetensors) of the --model-dir "
                   "model to continue training", group)
            .hint("DIR"));
  t.add_check([](const TrainConfig& c) -> std::string {
    const LoraSettings& l = c.encoder.lora;
    if (l.enabled() && !c.encoder.is_pretrained()) return "--lora-rank and --adapter go with --model-dir";
    if (l.enabled() && (!c.encoder.train_params.empty() || c.encoder.freeze_embeddings))
      return "with LoRA only the adapters train: leave out --train-params and --freeze-embeddings (they choose among "
             "the model's own parameters), or LoRA";
    if (!l.adapter.empty() && l.rank > 0) return "--adapter's adapter_config.json gives the rank: leave out --lora-rank";
    if (l.rank == 0 && (l.alpha > 0 || l.dropout > 0 || !l.targets.empty()))
      return "--lora-alpha, --lora-dropout and --lora-targets go with --lora-rank";
    return "";
  });
}

// The built-in encoder's size, from its flags, against the memory this process may have: a
// --dim, --ffn-dim, --layers, --projection or max length of 1e9 failed after seconds inside the
// allocator (std::bad_alloc), or not at all until the machine swapped. Training holds each
// parameter four times in fp32 (weight, gradient, AdamW's two moments): 16 bytes, a floor.
std::string built_in_encoder_fits(const TrainConfig& c) {
  if (c.encoder.is_pretrained() || !c.encoder.torchscript.empty()) return "";
  const EncoderSettings& e = c.encoder;
  const double dim = e.dim, ffn = e.ffn_dim, positions = std::max(c.tokenizer.query_max_len, c.tokenizer.passage_max_len);
  const double layer = 4 * (dim * dim + dim) + 2 * dim * ffn + ffn + dim + 4 * dim;
  const double per_encoder = (c.tokenizer.vocab_size + positions) * dim + e.layers * layer + 2 * dim +
                             (e.projection_dim > 0 ? (dim + 1) * e.projection_dim : 0);
  const double parameters = per_encoder * (e.untie ? 2 : 1), bytes = 16 * parameters;
  const int64_t limit = memory_limit_bytes();
  if (limit <= 0 || bytes <= static_cast<double>(limit)) return "";
  const auto gib = [](double b) { return std::to_string(static_cast<int64_t>(std::ceil(b / (1 << 30)))) + " GiB"; };
  return "the built-in encoder that --vocab-size, --dim, --layers, --ffn-dim, --projection and the longer of "
         "--query-max-len/--passage-max-len (" + std::to_string(static_cast<int64_t>(positions)) +
         " positions) describe has " + std::to_string(static_cast<int64_t>(parameters)) +
         " parameters: training them needs at least " + gib(bytes) +
         " (weight, gradient and AdamW's two moments, 4 bytes each), and this process may have " +
         gib(static_cast<double>(limit)) + " (physical memory or ulimit -v): make them smaller";
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
            // At most sentencepiece's candidate pieces (its seed_sentencepiece_size, 1,000,000):
            // no larger vocabulary can come out, and asking for one made it spin for minutes.
            .checked(between(16, 1000000)));
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
  add_trainable_settings(t, group);
  add_lora_settings(t, "LoRA (with --model-dir)");
  add_prompt_settings(t, group);
  t.add_check(built_in_encoder_fits);
}

}  // namespace retriever
}  // namespace gradcache
