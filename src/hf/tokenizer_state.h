// What a Tokenizer holds (immutable once built, shared by its copies), and the readers and the
// writer of the files it comes from.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "gradcache/hf/tokenizer.h"
#include "hf/added_vocabulary.h"
#include "hf/components.h"

namespace gradcache::hf::detail {

struct TokenizerState {
  std::string name;
  std::unique_ptr<Normalizer> normalizer;       // may be null: the text as it is
  std::unique_ptr<PreTokenizer> pre_tokenizer;  // may be null: the whole text is one word
  std::unique_ptr<Model> model;
  std::unique_ptr<PostProcessor> post_processor;  // may be null: no special tokens
  std::unique_ptr<AddedVocabulary> added;
  // Sections encode() does not apply, kept for to_json() (null when absent).
  Json truncation;
  Json padding;
  Json decoder;
  std::optional<size_t> truncation_max_length;
  Side padding_side = Side::kRight;
  Side truncation_side = Side::kRight;
  std::optional<size_t> model_max_length;
  int64_t pad_id = -1;
  int64_t vocab_size = 0;
};

/// Reads a tokenizer.json (tokenizer_json.cpp).
std::unique_ptr<TokenizerState> parse_tokenizer_json(std::string_view text, const std::string& name);
/// Reads a tokenizer.json already parsed (from_vocab builds one); `source` names it for messages.
std::unique_ptr<TokenizerState> tokenizer_from_json(const Json& root, const Source& source);
/// Takes padding_side, truncation_side and model_max_length from a tokenizer_config.json's text
/// (transformers applies them over the tokenizer.json's; vocab_files.cpp).
void apply_tokenizer_config(TokenizerState& state, std::string_view config_json, const std::string& config_name);
/// Writes the state as a tokenizer.json.
std::string write_tokenizer_json(const TokenizerState& state);

}  // namespace gradcache::hf::detail
