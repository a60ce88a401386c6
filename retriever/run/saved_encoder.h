// An encoder ready to turn texts into vectors, loaded from a training run, from the directory
// `gradcache export` wrote, or from a pretrained model's directory (zero-shot): what `gradcache
// eval`, `encode` and `mine` encode with.
#pragma once

#include "retriever/model/encoders.h"
#include "retriever/model/tokenizer.h"
#include "retriever/run/checkpoint.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace gradcache {
namespace retriever {

/// A model, its tokenizer and its lengths: everything needed to encode a text as training did.
struct TextEncoder {
  BiEncoder model;
  Tokenizer tokenizer;
  int64_t query_max_len = 0, passage_max_len = 0;  ///< tokens kept per side
  bool normalize = false;                           ///< whether the vectors are L2-normalised
  nlohmann::json source;                            ///< what it was loaded from (for manifests)
  std::string description;                          ///< a pretrained model's describe(), for the log; "" otherwise

  /// The ids of `text` as a query or a passage: the side's prompt, cut at the side's max_len.
  std::vector<int64_t> tokens(std::string_view text, bool query) const {
    return query ? tokenizer.encode_query(text, static_cast<size_t>(query_max_len))
                 : tokenizer.encode_passage(text, static_cast<size_t>(passage_max_len));
  }
};

/// A pretrained model directory as eval, encode and mine read it (--model-dir, the prompt flags,
/// --query-max-len, --passage-max-len).
struct PretrainedSource {
  std::string dir;  ///< "" = none
  std::string adapter;  ///< a PEFT LoRA adapter directory of the model (--adapter); "" = none
  std::string query_prompt, passage_prompt;
  bool model_prompts = true;
  bool specb = false;                               ///< SGPT's bracket markers
  int64_t query_max_len = 0, passage_max_len = 0;  ///< tokens kept; 0: the model's max_seq_length
  PromptSettings prompts() const { return {query_prompt, passage_prompt, model_prompts, specb}; }
};

/// The checkpoint file of `run`: `run` itself, or run/checkpoint.pt when it is a directory.
std::string checkpoint_of_run(const std::string& run);

/// What an embeddings manifest records as the model that made its vectors: `encoder.source` (a
/// checkpoint and step, an export file, a model directory) and a digest of its weights
/// (weights_digest), which tells apart a run trained again at the same path and step. Reads
/// every weight once: called where a manifest is written or compared, not on every load.
nlohmann::json model_identity(const TextEncoder& encoder);

/// The encoder of a run (checkpoint.pt or a run's output directory), with its weights and the
/// tokenizer stored in the checkpoint. Throws CheckpointError naming the file.
/// `info`, when given, receives the checkpoint's info (its run's settings, step, ...).
TextEncoder load_run_encoder(const std::string& run, CheckpointInfo* info = nullptr);

/// A pretrained model as it is (zero-shot): hf::load_sentence_transformer's module, tokenizer and
/// prompts. Throws hf::ModelFileError / hf::TokenizerError naming the file.
TextEncoder load_pretrained_encoder(const PretrainedSource& source);

/// The encoder of `side` ("query" or "passage") from an export directory (export.json,
/// tokenizer.model and the TorchScript files it names). Throws std::runtime_error naming the
/// file for a missing or malformed export, or an export without that side.
TextEncoder load_exported_encoder(const std::string& dir, const std::string& side);

}  // namespace retriever
}  // namespace gradcache
