// The split behaviours of `tokenizers` (tokenizer/normalizer.rs, NormalizedString::split with a
// SplitDelimiterBehavior, over the pieces of tokenizer/pattern.rs's find_matches): the text is
// cut into pieces that alternate between delimiters (the matches) and the rest, and each
// behaviour decides what becomes of the delimiters. An empty match is a piece too: it takes part
// in the merging (a match after an empty match is not merged with the piece before) even though
// the empty word it makes is dropped.
#include "hf/split_behavior.h"

#include <algorithm>

#include "hf/json_fields.h"

namespace gradcache::hf::detail {
namespace {

struct BehaviorName {
  SplitBehavior behavior;
  const char* name;
};

constexpr BehaviorName kBehaviorNames[] = {
    {SplitBehavior::kRemoved, "Removed"},
    {SplitBehavior::kIsolated, "Isolated"},
    {SplitBehavior::kMergedWithPrevious, "MergedWithPrevious"},
    {SplitBehavior::kMergedWithNext, "MergedWithNext"},
    {SplitBehavior::kContiguous, "Contiguous"},
};

/// A piece of the text: [begin, end), and whether it is a delimiter (a match, or with invert the
/// rest). After the behaviour is applied, `is_match` says whether the piece goes.
struct Piece {
  size_t begin;
  size_t end;
  bool is_match;
};

// pattern.rs's find_matches: the matches and the stretches between them, in order, covering the
// text (an empty match included, an empty stretch not).
void make_pieces(size_t length, const std::vector<Match>& matches, bool invert, std::vector<Piece>& pieces) {
  size_t previous = 0;
  for (const auto& [begin, end] : matches) {
    if (previous != begin) pieces.push_back({previous, begin, invert});
    pieces.push_back({begin, end, !invert});
    previous = end;
  }
  if (previous != length) pieces.push_back({previous, length, invert});
}

// Joins the delimiters to their neighbours as the behaviour says; afterwards `is_match` marks the
// pieces to drop (only Removed drops any).
void apply(SplitBehavior behavior, std::vector<Piece>& pieces) {
  std::vector<Piece> merged;
  merged.reserve(pieces.size());
  bool previous_match = false;
  switch (behavior) {
    case SplitBehavior::kRemoved: return;
    case SplitBehavior::kIsolated:
      for (Piece& piece : pieces) piece.is_match = false;
      return;
    case SplitBehavior::kContiguous:
      // A piece of the same kind as the one before joins it.
      for (const Piece& piece : pieces) {
        if (piece.is_match == previous_match && !merged.empty())
          merged.back().end = piece.end;
        else
          merged.push_back({piece.begin, piece.end, false});
        previous_match = piece.is_match;
      }
      break;
    case SplitBehavior::kMergedWithPrevious:
      // A delimiter joins the piece before it, unless that piece is a delimiter too.
      for (const Piece& piece : pieces) {
        if (piece.is_match && !previous_match && !merged.empty())
          merged.back().end = piece.end;
        else
          merged.push_back({piece.begin, piece.end, false});
        previous_match = piece.is_match;
      }
      break;
    case SplitBehavior::kMergedWithNext:
      // A delimiter joins the piece after it, unless that piece is a delimiter too: the same
      // fold, from the end.
      for (auto it = pieces.rbegin(); it != pieces.rend(); ++it) {
        if (it->is_match && !previous_match && !merged.empty())
          merged.back().begin = it->begin;
        else
          merged.push_back({it->begin, it->end, false});
        previous_match = it->is_match;
      }
      std::reverse(merged.begin(), merged.end());
      break;
  }
  pieces.swap(merged);
}

}  // namespace

SplitBehavior read_split_behavior(const Json& config, const char* key, const Source& source) {
  const std::string name = read_string(config, key, source);
  for (const BehaviorName& entry : kBehaviorNames)
    if (name == entry.name) return entry.behavior;
  fail(source.at(key), "unknown split behavior " + quote_for_message(name) +
                           " (expected one of Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous)");
}

const char* split_behavior_name(SplitBehavior behavior) {
  for (const BehaviorName& entry : kBehaviorNames)
    if (behavior == entry.behavior) return entry.name;
  return "Isolated";
}

void split_at_matches(std::u32string_view text, const std::vector<Match>& matches, SplitBehavior behavior,
                      bool invert, bool at_origin, Words& out) {
  if (text.empty()) return;  // find_matches gives one empty piece, which is dropped
  thread_local std::vector<Piece> pieces;
  pieces.clear();
  make_pieces(text.size(), matches, invert, pieces);
  apply(behavior, pieces);
  for (const Piece& piece : pieces)
    if (!piece.is_match) out.push(text.substr(piece.begin, piece.end - piece.begin), at_origin && piece.begin == 0);
}

}  // namespace gradcache::hf::detail
