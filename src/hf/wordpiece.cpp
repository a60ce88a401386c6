// WordPiece, as `tokenizers` (models/wordpiece/mod.rs) runs it: a word longer than
// max_input_chars_per_word characters is the unknown token; otherwise, from the start, the
// longest vocabulary entry that the rest of the word begins with (after the first piece, entries
// carry the continuing_subword_prefix, "##"), and the whole word is the unknown token as soon as
// no entry fits. `tokenizers` tries every shorter end in turn; a trie finds the same longest
// entry in one walk, so a word costs its length times the longest entry at worst.
#include <unordered_map>

#include "hf/components.h"
#include "hf/dense_vocabulary.h"
#include "hf/json_fields.h"
#include "hf/prefix_trie.h"
#include "hf/unicode.h"

namespace gradcache::hf::detail {
namespace {

/// The most tokens a vocabulary may have: real ones have up to a few hundred thousand, and a
/// file declaring more is more likely broken (or hostile) than a model.
constexpr uint64_t kMaxWordPieceVocabSize = uint64_t{1} << 22;

class WordPiece final : public Model {
 public:
  WordPiece(std::vector<std::string> tokens, std::string unk_token, std::string prefix, uint64_t max_chars,
            const Source& source)
      : vocab_(std::move(tokens)),
        unk_token_(std::move(unk_token)),
        prefix_(std::move(prefix)),
        max_chars_(max_chars) {
    for (size_t id = 0; id < vocab_.tokens().size(); ++id) {
      const std::string& token = vocab_.tokens()[id];
      start_.insert(token, static_cast<int64_t>(id));
      if (token.size() > prefix_.size() && token.compare(0, prefix_.size(), prefix_) == 0)
        continuation_.insert(std::string_view(token).substr(prefix_.size()), static_cast<int64_t>(id));
    }
    unk_id_ = vocab_.find(unk_token_);
    if (unk_id_ < 0)
      fail(source.at("unk_token"), "the unknown token " + quote_for_message(unk_token_) +
                                       " is not in the vocabulary; WordPiece needs it for words it cannot spell");
  }

  void tokenize(std::u32string_view word, std::vector<int64_t>& ids) const override {
    if (word.size() > max_chars_) {
      ids.push_back(unk_id_);
      return;
    }
    thread_local std::string bytes;
    bytes.clear();
    for (const char32_t c : word) unicode::append_utf8(bytes, c);
    const size_t first = ids.size();
    size_t start = 0;
    while (start < bytes.size()) {
      const PrefixTrie<char>& entries = (start == 0 || prefix_.empty()) ? start_ : continuation_;
      const auto [length, id] = entries.longest_prefix(bytes, start);
      if (length == 0) {
        ids.resize(first);
        ids.push_back(unk_id_);
        return;
      }
      ids.push_back(id);
      start += length;
    }
  }

  std::optional<int64_t> token_to_id(std::string_view token) const override { return vocab_.id(token); }
  const std::string* id_to_token(int64_t id) const override { return vocab_.token(id); }
  int64_t size() const override { return vocab_.size(); }
  int64_t unk_id() const override { return unk_id_; }

  OrderedJson to_json() const override {
    OrderedJson j;
    j["type"] = "WordPiece";
    j["unk_token"] = unk_token_;
    j["continuing_subword_prefix"] = prefix_;
    j["max_input_chars_per_word"] = max_chars_;
    j["vocab"] = dense_vocab_json(vocab_.tokens());
    return j;
  }

 private:
  DenseVocabulary vocab_;
  PrefixTrie<char> start_;         // every entry: the first piece of a word
  PrefixTrie<char> continuation_;  // the entries with the prefix, without it: the other pieces
  std::string unk_token_;
  std::string prefix_;
  uint64_t max_chars_;
  int64_t unk_id_ = -1;
};

}  // namespace

std::unique_ptr<Model> wordpiece_from_json(const Json& config, const Source& source) {
  // All four fields are required, as `tokenizers` requires them.
  std::string unk_token = read_string(config, "unk_token", source);
  std::string prefix = read_string(config, "continuing_subword_prefix", source);
  const uint64_t max_chars = read_count(config, "max_input_chars_per_word", source, std::nullopt, UINT32_MAX);
  // `tokenizers` takes any ids; a WordPiece vocabulary is vocab.txt's line numbers, so this reader
  // wants each of 0..n-1 exactly once (an embedding table has a row per id, and a gap or a repeat
  // means the file is not what the model was trained with).
  std::vector<std::string> tokens =
      read_dense_vocab(require_field(config, "vocab", source), source.at("vocab"), kMaxWordPieceVocabSize);
  if (tokens.empty()) fail(source.at("vocab"), "the vocabulary is empty");
  return std::make_unique<WordPiece>(std::move(tokens), std::move(unk_token), std::move(prefix), max_chars, source);
}

}  // namespace gradcache::hf::detail
