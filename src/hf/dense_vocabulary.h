// A model's vocabulary whose ids are 0..n-1 (WordPiece's and BPE's, as read_dense_vocab reads
// them): the tokens by id and the id of each token, so that both models answer the Model
// interface's look-ups the same way.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace gradcache::hf::detail {

class DenseVocabulary {
 public:
  /// `tokens` by id, each distinct (read_dense_vocab gives them so).
  explicit DenseVocabulary(std::vector<std::string> tokens) : tokens_(std::move(tokens)) {
    ids_.reserve(tokens_.size());
    for (size_t id = 0; id < tokens_.size(); ++id) ids_.emplace(tokens_[id], static_cast<int64_t>(id));
  }

  /// The id of `token`, or -1.
  int64_t find(const std::string& token) const {
    const auto it = ids_.find(token);
    return it == ids_.end() ? -1 : it->second;
  }
  std::optional<int64_t> id(std::string_view token) const {
    const int64_t id = find(std::string(token));
    return id < 0 ? std::nullopt : std::optional<int64_t>(id);
  }
  /// The token of an id, or nullptr for one out of range.
  const std::string* token(int64_t id) const {
    return id >= 0 && static_cast<size_t>(id) < tokens_.size() ? &tokens_[static_cast<size_t>(id)] : nullptr;
  }
  int64_t size() const { return static_cast<int64_t>(tokens_.size()); }
  /// By id.
  const std::vector<std::string>& tokens() const { return tokens_; }

 private:
  std::vector<std::string> tokens_;
  std::unordered_map<std::string, int64_t> ids_;
};

}  // namespace gradcache::hf::detail
