// WordPiece, as `tokenizers` (models/wordpiece/mod.rs) runs it: a word longer than
// max_input_chars_per_word characters is the unknown token; otherwise, from the start, the
// longest vocabulary entry that the rest of the word begins with (after the first piece, entries
// carry the continuing_subword_prefix, "##"), and the whole word is the unknown token as soon as
// no entry fits. `tokenizers` tries every shorter end in turn; a trie finds the same longest
// entry in one walk, so a word costs its length times the longest entry at worst.
#include <unordered_map>

#include "hf/components.h"
#include "hf/json_fields.h"
#include "hf/prefix_trie.h"
#include "hf/unicode.h"

namespace gradcache::hf::detail {
namespace {

/// The most tokens a vocabulary may have: real ones have up to a few hundred thousand, and a
/// file declaring more is more likely broken (or hostile) than a model.
constexpr uint64_t kMaxVocabSize = uint64_t{1} << 22;

class WordPiece final : public Model {
 public:
  WordPiece(std::vector<std::string> tokens, std::string unk_token, std::string prefix, uint64_t max_chars,
            const Source& source)
      : tokens_(std::move(tokens)),
        unk_token_(std::move(unk_token)),
        prefix_(std::move(prefix)),
        max_chars_(max_chars) {
    ids_.reserve(tokens_.size());
    for (size_t id = 0; id < tokens_.size(); ++id) {
      const std::string& token = tokens_[id];
      ids_.emplace(token, static_cast<int64_t>(id));
      start_.insert(token, static_cast<int64_t>(id));
      if (token.size() > prefix_.size() && token.compare(0, prefix_.size(), prefix_) == 0)
        continuation_.insert(std::string_view(token).substr(prefix_.size()), static_cast<int64_t>(id));
    }
    const auto unk = ids_.find(unk_token_);
    if (unk == ids_.end())
      fail(source.at("unk_token"), "the unknown token " + quote_for_message(unk_token_) +
                                       " is not in the vocabulary; WordPiece needs it for words it cannot spell");
    unk_id_ = unk->second;
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

  std::optional<int64_t> token_to_id(std::string_view token) const override {
    const auto it = ids_.find(std::string(token));
    if (it == ids_.end()) return std::nullopt;
    return it->second;
  }

  const std::string* id_to_token(int64_t id) const override {
    return id >= 0 && static_cast<size_t>(id) < tokens_.size() ? &tokens_[static_cast<size_t>(id)] : nullptr;
  }

  int64_t size() const override { return static_cast<int64_t>(tokens_.size()); }
  int64_t unk_id() const override { return unk_id_; }

  OrderedJson to_json() const override {
    OrderedJson j;
    j["type"] = "WordPiece";
    j["unk_token"] = unk_token_;
    j["continuing_subword_prefix"] = prefix_;
    j["max_input_chars_per_word"] = max_chars_;
    // By id, as `tokenizers` writes it. The ordered object's own insert looks for the key first
    // (quadratic over a vocabulary); the tokens are known to be distinct, so they are appended
    // to the vector it is made of.
    OrderedJson vocab = OrderedJson::object();
    auto& entries = static_cast<OrderedJson::object_t::Container&>(vocab.get_ref<OrderedJson::object_t&>());
    entries.reserve(tokens_.size());
    for (size_t id = 0; id < tokens_.size(); ++id) entries.emplace_back(tokens_[id], id);
    j["vocab"] = std::move(vocab);
    return j;
  }

 private:
  std::vector<std::string> tokens_;  // by id
  std::unordered_map<std::string, int64_t> ids_;
  PrefixTrie<char> start_;         // every entry: the first piece of a word
  PrefixTrie<char> continuation_;  // the entries with the prefix, without it: the other pieces
  std::string unk_token_;
  std::string prefix_;
  uint64_t max_chars_;
  int64_t unk_id_ = -1;
};

// The vocabulary object {token: id}. `tokenizers` takes any ids; a WordPiece vocabulary is
// vocab.txt's line numbers, so this reader wants each of 0..n-1 exactly once (an embedding
// table has a row per id, and a gap or a repeat means the file is not what the model was
// trained with).
std::vector<std::string> read_vocab(const Json& vocab, const Source& source) {
  expect_object(vocab, source);
  if (vocab.empty()) fail(source, "the vocabulary is empty");
  if (vocab.size() > kMaxVocabSize)
    fail(source, "declares " + std::to_string(vocab.size()) + " tokens, more than the " +
                     std::to_string(kMaxVocabSize) + " this reader accepts");
  std::vector<std::string> tokens(vocab.size());
  std::vector<bool> seen(vocab.size(), false);
  for (const auto& [token, id_value] : vocab.items()) {
    const uint64_t id = as_count(id_value, source.at(token), UINT32_MAX);
    if (id >= vocab.size())
      fail(source, "the id of " + quote_for_message(token) + " is " + std::to_string(id) + ", out of range: " +
                       std::to_string(vocab.size()) + " tokens need the ids 0.." + std::to_string(vocab.size() - 1));
    if (seen[id])
      fail(source, "the id " + std::to_string(id) + " is given to both " + quote_for_message(tokens[id]) + " and " +
                       quote_for_message(token) + "; each id must name one token");
    seen[id] = true;
    tokens[id] = token;
  }
  return tokens;
}

}  // namespace

std::unique_ptr<Model> wordpiece_from_json(const Json& config, const Source& source) {
  // All four fields are required, as `tokenizers` requires them.
  std::string unk_token = read_string(config, "unk_token", source);
  std::string prefix = read_string(config, "continuing_subword_prefix", source);
  const uint64_t max_chars = read_count(config, "max_input_chars_per_word", source, std::nullopt, UINT32_MAX);
  std::vector<std::string> tokens = read_vocab(require_field(config, "vocab", source), source.at("vocab"));
  return std::make_unique<WordPiece>(std::move(tokens), std::move(unk_token), std::move(prefix), max_chars, source);
}

}  // namespace gradcache::hf::detail
