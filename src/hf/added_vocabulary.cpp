// Taking the added tokens out of a text, as AddedVocabulary::find_matches does in `tokenizers`.
#include "hf/added_vocabulary.h"

#include <algorithm>

#include "hf/unicode.h"

namespace gradcache::hf::detail {

AddedVocabulary::AddedVocabulary(std::vector<AddedToken> tokens, const Normalizer* normalizer)
    : tokens_(std::move(tokens)) {
  std::stable_sort(tokens_.begin(), tokens_.end(),
                   [](const AddedToken& a, const AddedToken& b) { return a.id < b.id; });
  for (size_t i = 0; i < tokens_.size(); ++i) {
    const AddedToken& token = tokens_[i];
    by_content_[token.content] = i;
    by_id_[token.id] = i;
    std::u32string pattern = unicode::decode_utf8(token.content);
    if (token.normalized && normalizer != nullptr) normalizer->normalize(pattern);
    if (pattern.empty()) continue;  // nothing to find (a token that normalises to nothing)
    (token.normalized ? normalized_ : raw_).insert(pattern, static_cast<int64_t>(i));
  }
}

void AddedVocabulary::split(std::u32string_view text, bool in_normalized_text, std::vector<TextPiece>& pieces) const {
  const PrefixTrie<char32_t>& trie = in_normalized_text ? normalized_ : raw_;
  const size_t n = text.size();
  size_t taken = 0;  // the text before this is in `pieces`
  size_t at = 0;     // where the next match is looked for
  while (!trie.empty() && at < n) {
    const auto [length, index] = trie.longest_prefix(text, at);
    if (length == 0) {
      ++at;
      continue;
    }
    const AddedToken& token = tokens_[static_cast<size_t>(index)];
    size_t start = at;
    size_t stop = at + length;
    at = stop;  // the next match starts after this one, taken or not (as the matcher's iterator)
    if (token.single_word) {
      const bool alone_before = start == 0 || !unicode::is_word_char(text[start - 1]);
      const bool alone_after = stop == n || !unicode::is_word_char(text[stop]);
      if (!alone_before || !alone_after) continue;
    }
    if (token.lstrip) {
      while (start > taken && unicode::is_whitespace(text[start - 1])) --start;
    }
    if (token.rstrip) {
      while (stop < n && unicode::is_whitespace(text[stop])) ++stop;
    }
    if (taken < start) pieces.push_back({taken, start, -1});
    pieces.push_back({start, stop, token.id});
    taken = std::max(taken, stop);
  }
  if (taken < n) pieces.push_back({taken, n, -1});
}

std::optional<int64_t> AddedVocabulary::token_to_id(std::string_view content) const {
  const auto it = by_content_.find(std::string(content));
  if (it == by_content_.end()) return std::nullopt;
  return tokens_[it->second].id;
}

const std::string* AddedVocabulary::id_to_token(int64_t id) const {
  const auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : &tokens_[it->second].content;
}

}  // namespace gradcache::hf::detail
