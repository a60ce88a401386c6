// BPE, as `tokenizers` (models/bpe/{model,word}.rs) runs it on one word: each character is a
// symbol (its vocabulary id; else its bytes' <0xNN> tokens with byte_fallback; else the unknown
// token, consecutive ones fused with fuse_unk; else dropped, as `tokenizers` drops it), the
// continuing_subword_prefix on every symbol but the first and the end_of_word_suffix on the last;
// then merges by rank until none applies. The merge loop is `tokenizers`' own (Word::merge_all):
// a heap of (rank, position), lowest rank first and leftmost among equals, where an entry whose
// pair has changed since it was queued is skipped unless the new pair merges into the same token.
// That last rule is not the textbook algorithm, and copying it is what makes the ids equal on
// every word. With ignore_merges (Llama-3), a word that is itself in the vocabulary is that token.
#include <algorithm>
#include <array>
#include <cmath>
#include <unordered_map>

#include "hf/components.h"
#include "hf/dense_vocabulary.h"
#include "hf/json_fields.h"
#include "hf/unicode.h"

namespace gradcache::hf::detail {
namespace {

/// As WordPiece's: real vocabularies have up to a few hundred thousand tokens.
constexpr uint64_t kMaxBpeVocabSize = uint64_t{1} << 22;
/// The most merges a file may declare (real ones: the vocabulary's size at most).
constexpr uint64_t kMaxMerges = uint64_t{1} << 22;

struct MergeTarget {
  uint32_t rank;
  uint32_t id;
};

uint64_t pair_key(int64_t left, int64_t right) {
  return (static_cast<uint64_t>(left) << 32) | static_cast<uint64_t>(right);
}

class Bpe final : public Model {
 public:
  struct Options {
    std::optional<double> dropout;
    std::optional<std::string> unk_token;
    std::optional<std::string> prefix;  // continuing_subword_prefix
    std::optional<std::string> suffix;  // end_of_word_suffix
    bool fuse_unk = false;
    bool byte_fallback = false;
    bool ignore_merges = false;
  };

  Bpe(std::vector<std::string> tokens, const std::vector<std::pair<std::string, std::string>>& merges, Options options,
      const Source& source)
      : vocab_(std::move(tokens)), options_(std::move(options)) {
    index_characters();
    if (options_.unk_token) {
      // `tokenizers` only looks the unknown token up when it needs it (and fails then); a file
      // naming one that is not there is refused here instead of failing on some text later.
      unk_id_ = vocab_.find(*options_.unk_token);
      if (unk_id_ < 0)
        fail(source.at("unk_token"), "the unknown token " + quote_for_message(*options_.unk_token) +
                                         " is not in the vocabulary; add it or set unk_token to null");
    }
    for (int byte = 0; byte < 256; ++byte) {
      static const char* const kHex = "0123456789ABCDEF";
      const std::string name = std::string("<0x") + kHex[byte >> 4] + kHex[byte & 15] + ">";
      byte_ids_[byte] = vocab_.find(name);
    }
    read_merges(merges, source.at("merges"));
  }

  void tokenize(std::u32string_view word, std::vector<int64_t>& ids) const override {
    thread_local std::string buffer;
    if (options_.ignore_merges) {
      buffer.clear();
      for (const char32_t c : word) unicode::append_utf8(buffer, c);
      const int64_t id = vocab_.find(buffer);
      if (id >= 0) {
        ids.push_back(id);
        return;
      }
    }
    thread_local std::vector<Symbol> symbols;
    symbols.clear();
    initial_symbols(word, symbols, buffer);
    merge_all(symbols);
    for (const Symbol& symbol : symbols)
      if (symbol.alive) ids.push_back(symbol.id);
  }

  std::optional<int64_t> token_to_id(std::string_view token) const override { return vocab_.id(token); }
  const std::string* id_to_token(int64_t id) const override { return vocab_.token(id); }
  int64_t size() const override { return vocab_.size(); }
  int64_t unk_id() const override { return unk_id_; }

  OrderedJson to_json() const override {
    const auto optional_string = [](const std::optional<std::string>& value) {
      return value ? OrderedJson(*value) : OrderedJson(nullptr);
    };
    OrderedJson j;
    j["type"] = "BPE";
    j["dropout"] = options_.dropout ? OrderedJson(*options_.dropout) : OrderedJson(nullptr);
    j["unk_token"] = optional_string(options_.unk_token);
    j["continuing_subword_prefix"] = optional_string(options_.prefix);
    j["end_of_word_suffix"] = optional_string(options_.suffix);
    j["fuse_unk"] = options_.fuse_unk;
    j["byte_fallback"] = options_.byte_fallback;
    j["ignore_merges"] = options_.ignore_merges;
    j["vocab"] = dense_vocab_json(vocab_.tokens());
    // By rank, as pairs ([["Ġ", "t"], ...]: the form `tokenizers` writes today).
    std::vector<std::pair<uint32_t, uint64_t>> by_rank;
    by_rank.reserve(merges_.size());
    for (const auto& [key, target] : merges_) by_rank.emplace_back(target.rank, key);
    std::sort(by_rank.begin(), by_rank.end());
    OrderedJson merges = OrderedJson::array();
    for (const auto& [rank, key] : by_rank)
      merges.push_back(OrderedJson::array({*vocab_.token(key >> 32), *vocab_.token(key & 0xFFFFFFFFu)}));
    j["merges"] = std::move(merges);
    return j;
  }

 private:
  struct Symbol {
    int64_t id;
    int32_t prev;
    int32_t next;
    bool alive;
  };

  struct QueuedMerge {
    uint32_t rank;
    uint32_t pos;
    uint32_t new_id;
    // The heap pops the largest: the lowest rank, then the leftmost position.
    bool operator<(const QueuedMerge& other) const {
      return rank != other.rank ? rank > other.rank : pos > other.pos;
    }
  };

  // The id of each single character that is a token, for the characters below 0x3000 (every
  // byte-level alphabet character among them): the common case costs no string and no hash.
  void index_characters() {
    char_ids_.assign(0x3000, -1);
    const std::vector<std::string>& tokens = vocab_.tokens();
    for (size_t id = 0; id < tokens.size(); ++id) {
      const std::u32string chars = unicode::decode_utf8(tokens[id]);
      if (chars.size() == 1 && chars[0] < char_ids_.size() && unicode::encode_utf8(chars) == tokens[id])
        char_ids_[chars[0]] = static_cast<int64_t>(id);
    }
  }

  void read_merges(const std::vector<std::pair<std::string, std::string>>& merges, const Source& source) {
    const size_t prefix_length = options_.prefix ? options_.prefix->size() : 0;
    merges_.reserve(merges.size());
    for (size_t rank = 0; rank < merges.size(); ++rank) {
      const auto& [left, right] = merges[rank];
      const Source at = source.at(std::to_string(rank));
      const int64_t left_id = vocab_.find(left);
      const int64_t right_id = vocab_.find(right);
      for (const auto* token : {&left, &right})
        if (vocab_.find(*token) < 0)
          fail(at, "merges the token " + quote_for_message(*token) +
                       ", which is not in the vocabulary; the merges and the vocabulary are of different models");
      // The merged token is left + right without the prefix's bytes, as `tokenizers` builds it.
      if (right.size() < prefix_length)
        fail(at, "the token " + quote_for_message(right) + " is shorter than the continuing_subword_prefix " +
                     quote_for_message(*options_.prefix));
      const std::string merged = left + right.substr(prefix_length);
      const int64_t merged_id = vocab_.find(merged);
      if (merged_id < 0)
        fail(at, "merging " + quote_for_message(left) + " and " + quote_for_message(right) + " gives " +
                     quote_for_message(merged) + ", which is not in the vocabulary");
      // A repeated pair takes its last rank, as `tokenizers`' map does.
      merges_[pair_key(left_id, right_id)] =
          MergeTarget{static_cast<uint32_t>(rank), static_cast<uint32_t>(merged_id)};
    }
  }

  std::optional<MergeTarget> find_merge(int64_t left, int64_t right) const {
    const auto it = merges_.find(pair_key(left, right));
    if (it == merges_.end()) return std::nullopt;
    return it->second;
  }

  void push(std::vector<Symbol>& symbols, int64_t id) const {
    const auto index = static_cast<int32_t>(symbols.size());
    symbols.push_back(Symbol{id, index - 1, index + 1, true});
  }

  void initial_symbols(std::u32string_view word, std::vector<Symbol>& symbols, std::string& buffer) const {
    const bool plain = !options_.prefix && !options_.suffix;
    int64_t pending_unk = -1;  // an unknown-token symbol not yet pushed (fuse_unk extends it)
    for (size_t i = 0; i < word.size(); ++i) {
      const char32_t c = word[i];
      int64_t id = -1;
      if (plain && c < char_ids_.size()) {
        id = char_ids_[c];
      } else {
        buffer.clear();
        if (i > 0 && options_.prefix) buffer += *options_.prefix;
        unicode::append_utf8(buffer, c);
        if (i + 1 == word.size() && options_.suffix) buffer += *options_.suffix;
        id = vocab_.find(buffer);
      }
      if (id >= 0) {
        if (pending_unk >= 0) push(symbols, pending_unk);
        pending_unk = -1;
        push(symbols, id);
        continue;
      }
      if (options_.byte_fallback && byte_fallback(c, i, word.size(), symbols, buffer)) continue;
      if (unk_id_ >= 0) {
        if (pending_unk >= 0 && !options_.fuse_unk) push(symbols, pending_unk);
        pending_unk = unk_id_;
      }
    }
    if (pending_unk >= 0) push(symbols, pending_unk);
    if (!symbols.empty()) symbols.back().next = -1;
  }

  // The <0xNN> tokens of the symbol's bytes (prefix and suffix included, as `tokenizers` takes
  // the bytes of the whole symbol string), if the vocabulary has all of them. An unknown token
  // still pending stays pending, after these bytes: `tokenizers` does not flush it here either.
  bool byte_fallback(char32_t c, size_t i, size_t length, std::vector<Symbol>& symbols, std::string& buffer) const {
    buffer.clear();
    if (i > 0 && options_.prefix) buffer += *options_.prefix;
    unicode::append_utf8(buffer, c);
    if (i + 1 == length && options_.suffix) buffer += *options_.suffix;
    for (const char byte : buffer)
      if (byte_ids_[static_cast<unsigned char>(byte)] < 0) return false;
    for (const char byte : buffer) push(symbols, byte_ids_[static_cast<unsigned char>(byte)]);
    return true;
  }

  void merge_all(std::vector<Symbol>& symbols) const {
    if (symbols.size() < 2 || merges_.empty()) return;
    // A heap kept in a buffer of the thread's (std::priority_queue's own algorithm and order,
    // without allocating a queue for every word).
    thread_local std::vector<QueuedMerge> queue;
    queue.clear();
    const auto enqueue = [](const QueuedMerge& merge) {
      queue.push_back(merge);
      std::push_heap(queue.begin(), queue.end());
    };
    for (size_t pos = 0; pos + 1 < symbols.size(); ++pos)
      if (const auto merge = find_merge(symbols[pos].id, symbols[pos + 1].id))
        enqueue(QueuedMerge{merge->rank, static_cast<uint32_t>(pos), merge->id});
    while (!queue.empty()) {
      std::pop_heap(queue.begin(), queue.end());
      const QueuedMerge top = queue.back();
      queue.pop_back();
      Symbol& left = symbols[top.pos];
      if (!left.alive || left.next < 0) continue;
      const auto right_pos = static_cast<size_t>(left.next);
      const Symbol right = symbols[right_pos];
      // An entry queued for a pair that has changed since: skipped, unless the pair now there
      // merges into the same token (then `tokenizers` merges it, at the old entry's rank).
      const auto current = find_merge(left.id, right.id);
      if (!current || current->id != top.new_id) continue;
      left.id = top.new_id;
      left.next = right.next;
      symbols[right_pos].alive = false;
      if (right.next >= 0) symbols[static_cast<size_t>(right.next)].prev = static_cast<int32_t>(top.pos);
      if (left.prev >= 0) {
        if (const auto merge = find_merge(symbols[static_cast<size_t>(left.prev)].id, left.id))
          enqueue(QueuedMerge{merge->rank, static_cast<uint32_t>(left.prev), merge->id});
      }
      if (left.next >= 0) {
        if (const auto merge = find_merge(left.id, symbols[static_cast<size_t>(left.next)].id))
          enqueue(QueuedMerge{merge->rank, top.pos, merge->id});
      }
    }
  }

  DenseVocabulary vocab_;
  std::unordered_map<uint64_t, MergeTarget> merges_;  // (left id, right id) -> rank, merged id
  std::vector<int64_t> char_ids_;                     // see index_characters()
  std::array<int64_t, 256> byte_ids_{};               // <0xNN> tokens, -1 where absent
  Options options_;
  int64_t unk_id_ = -1;
};

std::optional<std::string> read_optional_string(const Json& config, const char* key, const Source& source) {
  const auto it = config.find(key);
  if (it == config.end() || it->is_null()) return std::nullopt;
  return read_string(config, key, source);
}

// "merges": [["a", "b"], ...] (what `tokenizers` writes today) or ["a b", ...] (the older form,
// each exactly two tokens separated by one space).
std::vector<std::pair<std::string, std::string>> read_merges(const Json& merges, const Source& source) {
  if (!merges.is_array()) fail(source, "expected an array of merges, found " + describe_json(merges));
  if (merges.size() > kMaxMerges)
    fail(source, std::to_string(merges.size()) + " merges, more than the " + std::to_string(kMaxMerges) +
                     " this reader accepts");
  std::vector<std::pair<std::string, std::string>> pairs;
  pairs.reserve(merges.size());
  for (size_t i = 0; i < merges.size(); ++i) {
    const Json& merge = merges[i];
    const Source at = source.at(std::to_string(i));
    if (merge.is_string()) {
      const std::string& line = merge.get_ref<const std::string&>();
      const size_t space = line.find(' ');
      if (space == std::string::npos || line.find(' ', space + 1) != std::string::npos)
        fail(at, quote_for_message(line) + " is not two tokens separated by one space");
      pairs.emplace_back(line.substr(0, space), line.substr(space + 1));
    } else if (merge.is_array() && merge.size() == 2 && merge[0].is_string() && merge[1].is_string()) {
      pairs.emplace_back(merge[0].get<std::string>(), merge[1].get<std::string>());
    } else {
      fail(at, "a merge is [\"left\", \"right\"] or \"left right\", found " + describe_json(merge));
    }
  }
  return pairs;
}

}  // namespace

std::unique_ptr<Model> bpe_from_json(const Json& config, const Source& source) {
  expect_object(config, source);
  Bpe::Options options;
  const auto dropout = config.find("dropout");
  if (dropout != config.end() && !dropout->is_null()) {
    if (!dropout->is_number() || !std::isfinite(dropout->get<double>()) || dropout->get<double>() < 0 ||
        dropout->get<double>() > 1)
      fail(source.at("dropout"), "expected null or a probability between 0 and 1, found " + describe_json(*dropout));
    // BPE-dropout skips merges at random on every call: the ids of a text would change from one
    // call to the next, which a retriever's encoder must never see.
    if (dropout->get<double>() > 0)
      fail(source.at("dropout"), "BPE-dropout (" + dropout->dump() +
                                     ") makes the ids random; it is a training-time augmentation this reader does "
                                     "not apply: set \"dropout\" to null");
    options.dropout = dropout->get<double>();
  }
  options.unk_token = read_optional_string(config, "unk_token", source);
  options.prefix = read_optional_string(config, "continuing_subword_prefix", source);
  options.suffix = read_optional_string(config, "end_of_word_suffix", source);
  options.fuse_unk = read_bool(config, "fuse_unk", source, false);
  options.byte_fallback = read_bool(config, "byte_fallback", source, false);
  options.ignore_merges = read_bool(config, "ignore_merges", source, false);
  // Each of 0..n-1 exactly once, as WordPiece's: an embedding table has a row per id.
  std::vector<std::string> tokens =
      read_dense_vocab(require_field(config, "vocab", source), source.at("vocab"), kMaxBpeVocabSize);
  const auto merges = read_merges(require_field(config, "merges", source), source.at("merges"));
  return std::make_unique<Bpe>(std::move(tokens), merges, std::move(options), source);
}

}  // namespace gradcache::hf::detail
