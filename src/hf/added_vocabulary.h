// The added tokens ([CLS], [MASK]...: tokenizer.json's "added_tokens"), which `tokenizers`
// (tokenizer/added_vocabulary.rs) takes out of the text before the model sees it: those with
// normalized=false are found in the raw text, the others in the normalised text, leftmost-longest
// first, honouring single_word, lstrip and rstrip. "[MASK]" in a text is the id of [MASK].
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "hf/components.h"
#include "hf/prefix_trie.h"

namespace gradcache::hf::detail {

struct AddedToken {
  std::string content;
  int64_t id = -1;
  bool single_word = false;
  bool lstrip = false;
  bool rstrip = false;
  bool normalized = true;
  bool special = false;
};

/// A piece of a text once the added tokens are out: code points [begin, end), and the id of the
/// added token it is, or -1 for text to tokenise.
struct TextPiece {
  size_t begin;
  size_t end;
  int64_t id;
};

class AddedVocabulary {
 public:
  /// `tokens` with their ids resolved (tokenizer_json.cpp); `normalizer` (may be null) gives the
  /// form in which the normalized=true ones are looked for.
  AddedVocabulary(std::vector<AddedToken> tokens, const Normalizer* normalizer);

  /// Appends the pieces of `text`: the tokens looked for in raw text (normalized=false) when
  /// `in_normalized_text` is false, the normalized=true ones when it is true.
  void split(std::u32string_view text, bool in_normalized_text, std::vector<TextPiece>& pieces) const;

  /// Sorted by id, as `tokenizers` writes them.
  const std::vector<AddedToken>& tokens() const { return tokens_; }
  std::optional<int64_t> token_to_id(std::string_view content) const;
  const std::string* id_to_token(int64_t id) const;

 private:
  std::vector<AddedToken> tokens_;
  std::unordered_map<std::string, size_t> by_content_;
  std::unordered_map<int64_t, size_t> by_id_;
  PrefixTrie<char32_t> raw_;  // values: indices into tokens_
  PrefixTrie<char32_t> normalized_;
};

}  // namespace gradcache::hf::detail
