// A pretrained Hugging Face / sentence-transformers encoder in the retriever (--model-dir): loaded
// from its directory once, described in a form a checkpoint holds (so that a run is evaluated,
// resumed and exported without the directory), and its prompts as a run uses them.
#pragma once

#include "retriever/model/lora_settings.h"
#include "retriever/model/tokenizer.h"

#include <gradcache/hf/lora.h>
#include <gradcache/hf/sentence_transformer.h>

#include <nlohmann/json.hpp>

#include <optional>
#include <string>

namespace gradcache {
namespace retriever {

/// Everything of a pretrained encoder but its weights: its config.json and its
/// sentence-transformers options (pooling, Normalize, max_seq_length, do_lower_case, prompts,
/// tokenizer). Checkpoints hold it; the weights travel with the checkpoint's other tensors.
struct PretrainedModel {
  std::string source;       ///< the directory it was read from
  std::string config_json;  ///< the transformer's config.json
  hf::SentenceTransformerOptions options;
  std::optional<hf::LoraOptions> lora;  ///< the LoRA adapters on the transformer, if any (targets resolved)
};

/// A model directory's description and its module with the pretrained weights (eval mode).
struct LoadedPretrained {
  PretrainedModel description;
  hf::SentenceTransformer module{nullptr};
};

/// Loads `dir` (hf::load_sentence_transformer). Refuses, naming the directory, what the program
/// cannot train: a directory without a tokenizer, and pooling that leaves the prompt out
/// (include_prompt false). Throws hf::ModelFileError / hf::TokenizerError naming the file otherwise.
LoadedPretrained load_pretrained(const std::string& dir);

/// Adds LoRA adapters to `loaded` (nothing when !settings.enabled()): new ones of settings.rank
/// (A from the current generator, B zero), or the PEFT directory settings.adapter's; records them
/// in its description. Throws std::invalid_argument naming the flag (--lora-targets matching no
/// layer, ...) or hf::ModelFileError naming the adapter's file.
void add_adapters(LoadedPretrained& loaded, const LoraSettings& settings);

/// The module `description` describes (its LoRA adapters included), with freshly initialised
/// weights (a checkpoint's are then loaded over them).
hf::SentenceTransformer build_pretrained(const PretrainedModel& description);

/// The tokenizer of the model: its Hugging Face tokenizer, do_lower_case and max_seq_length.
Tokenizer pretrained_tokenizer(const PretrainedModel& description);

/// The prompts of a run: --query-prompt / --passage-prompt when given; else, with --model-prompts
/// (the default), the model's prompts named "query" and "document" (or "passage", "corpus"), as
/// sentence-transformers' encode_query and encode_document choose them; else none.
Prompts resolve_prompts(const PromptSettings& settings, const PretrainedModel* model);

/// One line for the log: the architecture, the tokenizer's model (and its padding side), the
/// pooling, Normalize, the embedding size and max_seq_length, e.g. "qwen3, a BPE tokenizer
/// padding on the left, lasttoken pooling, normalised, 1024 dimensions, up to 512 tokens".
std::string describe(const PretrainedModel& model);

/// The description as a checkpoint stores it, and back (CheckpointError-style messages are the
/// caller's: `name` names the checkpoint in std::runtime_error messages).
nlohmann::json to_json(const PretrainedModel& description);
PretrainedModel pretrained_from_json(const nlohmann::json& j, const std::string& name);

}  // namespace retriever
}  // namespace gradcache
