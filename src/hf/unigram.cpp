// Unigram (SentencePiece's model), as `tokenizers` runs it (models/unigram/model.rs): the
// vocabulary is a list of [piece, score] (the index is the id); a word is cut into the pieces
// whose scores add up to the most, found by Viterbi over the word's UTF-8 bytes
// (Unigram::encode_optimized). A character no piece covers on its own is the unknown piece with
// the score min_score - 10; consecutive unknown pieces are fused into one string (`tokenizers`
// always fuses them), and Model::tokenize turns each string into its id: the piece's, or with
// byte_fallback the "<0xNN>" pieces of its bytes when every one of them is in the vocabulary, or
// unk_id.
//
// Ties: a position keeps the first path that reached it with the best score (a later one must
// score strictly more), and paths are tried from the leftmost start, shortest piece first.
//
// Scores: `tokenizers` reads them with serde_json, whose default float parser is not correctly
// rounded (about one float32 score in eight comes out one unit in the last place off), and the
// last places decide ties. The scores here are read the way serde_json reads them
// (tokenizers_score below), so the sums, and the cuts, are the same.
#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "gradcache/hf/tokenizer.h"
#include "hf/components.h"
#include "hf/json_fields.h"
#include "hf/unicode.h"

namespace gradcache::hf::detail {
namespace {

/// The most pieces a vocabulary may have: real ones have up to a few hundred thousand
/// (XLM-RoBERTa 250,002), and a file declaring more is more likely broken than a model.
constexpr uint64_t kMaxUnigramVocabSize = uint64_t{1} << 23;
/// What an unknown character scores below the lowest piece (K_UNK_PENALTY in model.rs).
constexpr double kUnknownPenalty = 10.0;

// ---- scores as serde_json reads them ----------------------------------------------------------
//
// serde_json (without its float_roundtrip feature, which `tokenizers` does not enable) reads a
// number as its decimal digits in a u64 significand and a power of ten, then computes
// significand as f64 times or divided by 10^|exponent| (de.rs, f64_from_parts): two roundings
// where strtod has one. The JSON reader here has already turned the text into the nearest
// double; the text `tokenizers` and Python write for a double is its shortest round-trip form,
// which std::to_chars gives back, so the digits serde_json saw are known and its arithmetic can
// be redone. (A file written with more digits than the shortest form may differ in the last
// place; `tokenizers` itself and Python's json write the shortest form.)

/// 1e0..1e308 as Rust's literals are: the doubles nearest to them (strtod rounds correctly).
const double* powers_of_ten() {
  static const auto table = [] {
    std::array<double, 309> powers{};
    for (int k = 0; k <= 308; ++k) {
      char text[8];
      std::snprintf(text, sizeof text, "1e%d", k);
      powers[static_cast<size_t>(k)] = std::strtod(text, nullptr);
    }
    return powers;
  }();
  return table.data();
}

/// serde_json's f64_from_parts; nothing for a number it refuses as out of range.
std::optional<double> serde_f64_from_parts(bool positive, uint64_t significand, int exponent) {
  const double* pow10 = powers_of_ten();
  double f = static_cast<double>(significand);
  for (;;) {
    const int magnitude = exponent < 0 ? -exponent : exponent;
    if (magnitude <= 308) {
      if (exponent >= 0) {
        f *= pow10[magnitude];
        if (std::isinf(f)) return std::nullopt;
      } else {
        f /= pow10[magnitude];
      }
      break;
    }
    if (f == 0.0) break;
    if (exponent >= 0) return std::nullopt;
    f /= 1e308;
    exponent += 308;
  }
  return positive ? f : -f;
}

/// The score `tokenizers` holds for a JSON number; nothing where serde_json refuses it.
std::optional<double> tokenizers_score(const Json& value) {
  if (value.is_number_unsigned()) return static_cast<double>(value.get<uint64_t>());  // `u64 as f64`
  if (value.is_number_integer()) return static_cast<double>(value.get<int64_t>());
  const double parsed = value.get<double>();
  if (!std::isfinite(parsed)) return std::nullopt;
  // The shortest round-trip digits, "d.ddde±x": the significand and the power of ten.
  char text[64];
  const auto written = std::to_chars(text, text + sizeof text, std::fabs(parsed), std::chars_format::scientific);
  uint64_t significand = 0;
  int fraction_digits = 0;
  bool in_fraction = false;
  const char* p = text;
  for (; p < written.ptr && *p != 'e'; ++p) {
    if (*p == '.') {
      in_fraction = true;
      continue;
    }
    significand = significand * 10 + static_cast<uint64_t>(*p - '0');  // at most 17 digits
    if (in_fraction) ++fraction_digits;
  }
  int exponent = 0;
  if (p < written.ptr) std::from_chars(p + (p[1] == '+' ? 2 : 1), written.ptr, exponent);
  return serde_f64_from_parts(!std::signbit(parsed), significand, exponent - fraction_digits);
}

// ---- the pieces' trie ---------------------------------------------------------------------------

/// The pieces as a trie over their UTF-8 bytes, in flat arrays: the children of a node are
/// consecutive (breadth-first order) and sorted by byte, the root's are a 256-entry table. It
/// answers which pieces the text at a position begins with (every one, shortest first: the
/// Viterbi edges) and which piece a string is (exact lookup). A piece given twice answers with
/// its last id, as `tokenizers`' token_to_ids map does.
class PieceTrie {
 public:
  explicit PieceTrie(const std::vector<std::string>& pieces) {
    // Sorted ids (equal pieces by id, so the last one's id is written last), then the nodes level
    // by level: a node is the range of sorted pieces sharing its prefix.
    std::vector<uint32_t> order(pieces.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<uint32_t>(i);
    std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return pieces[a] < pieces[b]; });
    struct Range {
      size_t begin, end, depth;
      uint32_t node;
    };
    std::vector<Range> level{{0, order.size(), 0, 0}}, next;
    append_node(0);
    root_children_.fill(0);
    while (!level.empty()) {
      next.clear();
      for (const Range& range : level) {
        size_t i = range.begin;
        // The pieces that end here sort first.
        for (; i < range.end && pieces[order[i]].size() == range.depth; ++i)
          nodes_[range.node].value = static_cast<int32_t>(order[i]);
        nodes_[range.node].first_child = static_cast<uint32_t>(labels_.size());
        while (i < range.end) {
          const auto label = static_cast<uint8_t>(pieces[order[i]][range.depth]);
          size_t j = i + 1;
          while (j < range.end && static_cast<uint8_t>(pieces[order[j]][range.depth]) == label) ++j;
          const auto child = static_cast<uint32_t>(labels_.size());
          append_node(label);
          if (range.node == 0) root_children_[label] = child;
          next.push_back({i, j, range.depth + 1, child});
          i = j;
        }
        nodes_[range.node].child_count = static_cast<uint16_t>(labels_.size() - nodes_[range.node].first_child);
      }
      level.swap(next);
    }
  }

  /// Calls found(length, id) for each piece that `bytes` begins with at `from`, shortest first.
  template <class Found>
  void prefixes(std::string_view bytes, size_t from, Found&& found) const {
    if (from >= bytes.size()) return;
    uint32_t node = root_children_[static_cast<uint8_t>(bytes[from])];
    for (size_t i = from;;) {
      if (node == 0) return;
      if (nodes_[node].value >= 0) found(i + 1 - from, nodes_[node].value);
      if (++i == bytes.size()) return;
      node = child(node, static_cast<uint8_t>(bytes[i]));
    }
  }

  /// The id of the piece `bytes` is, or -1.
  int64_t find(std::string_view bytes) const {
    uint32_t node = 0;
    for (size_t i = 0; i < bytes.size(); ++i) {
      node = i == 0 ? root_children_[static_cast<uint8_t>(bytes[0])] : child(node, static_cast<uint8_t>(bytes[i]));
      if (node == 0) return -1;
    }
    return nodes_[node].value;
  }

 private:
  void append_node(uint8_t label) {
    labels_.push_back(label);
    nodes_.push_back({0, -1, 0});
  }

  /// The child of `node` by `label`, or 0 (the root is nobody's child).
  uint32_t child(uint32_t node, uint8_t label) const {
    uint32_t low = nodes_[node].first_child;
    uint32_t high = low + nodes_[node].child_count;
    while (low < high) {
      const uint32_t middle = (low + high) / 2;
      if (labels_[middle] < label) {
        low = middle + 1;
      } else if (labels_[middle] > label) {
        high = middle;
      } else {
        return middle;
      }
    }
    return 0;
  }

  struct Node {
    uint32_t first_child;
    int32_t value;         // the id of the piece ending here, or -1
    uint16_t child_count;  // at most 256
  };
  std::vector<Node> nodes_;
  std::vector<uint8_t> labels_;  // by node: the byte leading to it (siblings' side by side, for the search)
  std::array<uint32_t, 256> root_children_{};
};

// ---- the model ------------------------------------------------------------------------------------

/// The length of the UTF-8 sequence a lead byte begins (the bytes are written here, so valid).
inline size_t sequence_length(uint8_t lead) { return lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4; }

class Unigram final : public Model {
 public:
  Unigram(std::vector<std::string> pieces, std::vector<double> scores, std::optional<uint64_t> unk_id,
          bool byte_fallback, Source source)
      : pieces_(std::move(pieces)),
        scores_(std::move(scores)),
        trie_(pieces_),
        unk_id_(unk_id ? static_cast<int64_t>(*unk_id) : -1),
        byte_fallback_(byte_fallback),
        source_(std::move(source)) {
    double min_score = INFINITY;
    for (const double score : scores_) min_score = std::min(min_score, score);
    unknown_score_ = min_score - kUnknownPenalty;
    for (int byte = 0; byte < 256; ++byte) {
      char name[8];
      std::snprintf(name, sizeof name, "<0x%02X>", byte);
      byte_ids_[static_cast<size_t>(byte)] = trie_.find(name);
    }
  }

  void tokenize(std::u32string_view word, std::vector<int64_t>& ids) const override {
    thread_local std::string bytes;
    thread_local std::vector<Step> best;  // best[i]: the best path through bytes[0, i)
    thread_local std::vector<Piece> path;
    bytes.clear();
    for (const char32_t c : word) unicode::append_utf8(bytes, c);
    viterbi(bytes, best);

    // The best path, from the end back; the unknown pieces on it fused.
    path.clear();
    for (size_t end = bytes.size(); end > 0;) {
      const Step& step = best[end];
      const bool unknown = unk_id_ >= 0 && step.id == unk_id_;
      if (unknown && !path.empty() && path.back().id == kFusedUnknown) {
        path.back().start = step.start;  // extends the fused string to the left
      } else {
        path.push_back({step.start, static_cast<uint32_t>(end), unknown ? kFusedUnknown : step.id});
      }
      end = step.start;
    }
    for (auto it = path.rbegin(); it != path.rend(); ++it) {
      if (it->id != kFusedUnknown) {
        ids.push_back(it->id);  // a piece the trie found: its string's id is its id
      } else {
        append_unknown(std::string_view(bytes).substr(it->start, it->end - it->start), ids);
      }
    }
  }

  std::optional<int64_t> token_to_id(std::string_view token) const override {
    const int64_t id = trie_.find(token);
    if (id < 0) return std::nullopt;
    return id;
  }

  const std::string* id_to_token(int64_t id) const override {
    return id >= 0 && static_cast<size_t>(id) < pieces_.size() ? &pieces_[static_cast<size_t>(id)] : nullptr;
  }

  int64_t size() const override { return static_cast<int64_t>(pieces_.size()); }
  int64_t unk_id() const override { return unk_id_; }

  OrderedJson to_json() const override {
    OrderedJson j;
    j["type"] = "Unigram";
    j["unk_id"] = unk_id_ >= 0 ? OrderedJson(unk_id_) : OrderedJson(nullptr);
    OrderedJson vocab = OrderedJson::array();
    auto& entries = vocab.get_ref<OrderedJson::array_t&>();
    entries.reserve(pieces_.size());
    for (size_t id = 0; id < pieces_.size(); ++id) entries.push_back(OrderedJson::array({pieces_[id], scores_[id]}));
    j["vocab"] = std::move(vocab);
    j["byte_fallback"] = byte_fallback_;
    return j;
  }

 private:
  /// The best path through bytes[0, i): its score, and its last piece, bytes[start, i) with the
  /// id `id` (kUnreached before a path reaches i).
  struct Step {
    double score;
    uint32_t start;
    int32_t id;
  };
  /// A piece of the best path, or (kFusedUnknown) a run of unknown pieces fused.
  struct Piece {
    uint32_t start, end;
    int32_t id;
  };
  static constexpr int32_t kUnreached = -2;
  static constexpr int32_t kFusedUnknown = -3;

  // encode_optimized: best[i] is the best path ending at byte i. Every character boundary is
  // reached (a character is a piece, or the unknown piece), so the walk goes character by
  // character, each start trying every piece the text there begins with.
  void viterbi(const std::string& bytes, std::vector<Step>& best) const {
    const size_t size = bytes.size();
    if (size > UINT32_MAX) fail(source_, "a word of " + std::to_string(size) + " bytes is too long for the model");
    best.assign(size + 1, Step{0.0, 0, kUnreached});
    for (size_t start = 0; start < size;) {
      const double score_here = best[start].score;
      const size_t char_length = sequence_length(static_cast<uint8_t>(bytes[start]));
      bool has_single_char_piece = false;
      trie_.prefixes(bytes, start, [&](size_t length, int64_t id) {
        Step& target = best[start + length];
        const double candidate = scores_[static_cast<size_t>(id)] + score_here;
        if (target.id == kUnreached || candidate > target.score)
          target = {candidate, static_cast<uint32_t>(start), static_cast<int32_t>(id)};
        if (length == char_length) has_single_char_piece = true;
      });
      if (!has_single_char_piece) {
        Step& target = best[start + char_length];
        const double candidate = unknown_score_ + score_here;
        if (target.id == kUnreached || candidate > target.score) {
          // Only here does `tokenizers` need the unk_id: a character no piece covers, whose end
          // no longer piece reached with a better score.
          if (unk_id_ < 0) fail_unknown(bytes.substr(start, char_length));
          target = {candidate, static_cast<uint32_t>(start), static_cast<int32_t>(unk_id_)};
        }
      }
      start += char_length;
    }
  }

  // Model::tokenize for a fused string of unknown characters: a piece if it is one, else with
  // byte_fallback its bytes' pieces if the vocabulary has all of them, else unk_id.
  void append_unknown(std::string_view text, std::vector<int64_t>& ids) const {
    const int64_t id = trie_.find(text);
    if (id >= 0) {
      ids.push_back(id);
      return;
    }
    if (byte_fallback_) {
      bool all_bytes = true;
      for (const char byte : text) all_bytes = all_bytes && byte_ids_[static_cast<uint8_t>(byte)] >= 0;
      if (all_bytes) {
        for (const char byte : text) ids.push_back(byte_ids_[static_cast<uint8_t>(byte)]);
        return;
      }
    }
    ids.push_back(unk_id_);
  }

  [[noreturn]] void fail_unknown(const std::string& character) const {
    const std::u32string c = unicode::decode_utf8(character);
    char code[16];
    std::snprintf(code, sizeof code, "U+%04X", c.empty() ? 0u : static_cast<unsigned>(c[0]));
    fail(source_, std::string("the text has the character ") + code + " " + quote_for_message(character) +
                      ", which no piece of the vocabulary covers, and the model has no unk_id to give it "
                      "(tokenizers fails the same way: \"Encountered an unknown token but `unk_id` is missing\"); "
                      "a vocabulary for open text needs an unknown piece and its unk_id");
  }

  std::vector<std::string> pieces_;  // by id
  std::vector<double> scores_;       // by id, as `tokenizers` reads them
  PieceTrie trie_;
  int64_t unk_id_;
  bool byte_fallback_;
  double unknown_score_;
  std::array<int64_t, 256> byte_ids_{};  // the id of "<0xNN>" for each byte, or -1
  Source source_;                        // for the one error encoding can meet
};

// The vocabulary: [[piece, score], ...] in id order, as serde reads Vec<(String, f64)>.
void read_vocab(const Json& vocab, const Source& source, std::vector<std::string>& pieces,
                std::vector<double>& scores) {
  if (!vocab.is_array()) fail(source, "expected an array of [piece, score] pairs, found " + describe_json(vocab));
  if (vocab.empty())
    fail(source,
         "the vocabulary is empty; a Unigram model needs at least its unknown piece (tokenizers: "
         "\"The vocabulary is empty but at least <unk> is needed\")");
  if (vocab.size() > kMaxUnigramVocabSize)
    fail(source, "declares " + std::to_string(vocab.size()) + " pieces, more than the " +
                     std::to_string(kMaxUnigramVocabSize) + " this reader accepts");
  pieces.reserve(vocab.size());
  scores.reserve(vocab.size());
  for (size_t id = 0; id < vocab.size(); ++id) {
    const Json& entry = vocab[id];
    const Source at = source.at(std::to_string(id));
    if (!entry.is_array() || entry.size() != 2 || !entry[0].is_string() || !entry[1].is_number())
      fail(at,
           "expected a [piece, score] pair (a string and a number), found " +
               (entry.is_array() ? "an array of " + std::to_string(entry.size()) + " values" : describe_json(entry)));
    const std::optional<double> score = tokenizers_score(entry[1]);
    if (!score || !std::isfinite(*score))
      fail(at, "the score of " + quote_for_message(entry[0].get_ref<const std::string&>()) + " is " + entry[1].dump() +
                   ", out of the range of a finite double");
    pieces.push_back(entry[0].get<std::string>());
    scores.push_back(*score);
  }
}

}  // namespace

std::unique_ptr<Model> unigram_from_json(const Json& config, const Source& source) {
  std::vector<std::string> pieces;
  std::vector<double> scores;
  read_vocab(require_field(config, "vocab", source), source.at("vocab"), pieces, scores);
  // unk_id: absent and null are "none", as serde reads Option<usize>.
  std::optional<uint64_t> unk_id;
  const auto unk = config.find("unk_id");
  if (unk != config.end() && !unk->is_null()) {
    unk_id = as_count(*unk, source.at("unk_id"), UINT64_MAX);
    if (*unk_id >= pieces.size())
      fail(source.at("unk_id"), "is " + std::to_string(*unk_id) + ", out of range for a vocabulary of " +
                                    std::to_string(pieces.size()) + " pieces (ids 0.." +
                                    std::to_string(pieces.size() - 1) + ")");
  }
  const bool byte_fallback = read_bool(config, "byte_fallback", source, false);
  return std::make_unique<Unigram>(std::move(pieces), std::move(scores), unk_id, byte_fallback, source);
}

}  // namespace gradcache::hf::detail
