// A trie answering "which key is the longest prefix of the text at this position": WordPiece's
// greedy longest-match-first over bytes, and the added tokens' leftmost-longest match over code
// points. A lookup costs the length of the match, never the length of the text.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

namespace gradcache::hf::detail {

template <class Label>
class PrefixTrie {
 public:
  /// Adds a key (non-empty); its value replaces an earlier one for the same key.
  void insert(std::basic_string_view<Label> key, int64_t value) {
    uint32_t node = 0;
    for (const Label label : key) {
      auto& edges = nodes_[node].edges;
      auto it =
          std::lower_bound(edges.begin(), edges.end(), label, [](const Edge& edge, Label l) { return edge.label < l; });
      if (it == edges.end() || it->label != label) {
        const auto target = static_cast<uint32_t>(nodes_.size());
        it = edges.insert(it, Edge{label, target});
        nodes_.emplace_back();  // invalidates `edges`, not `target`
      }
      node = it->target;
    }
    nodes_[node].value = value;
  }

  /// The longest key that `text` has at `from`: its length and value, or {0, -1} for none.
  std::pair<size_t, int64_t> longest_prefix(std::basic_string_view<Label> text, size_t from) const {
    std::pair<size_t, int64_t> best{0, -1};
    uint32_t node = 0;
    for (size_t i = from; i < text.size(); ++i) {
      const auto& edges = nodes_[node].edges;
      const auto it = std::lower_bound(edges.begin(), edges.end(), text[i],
                                       [](const Edge& edge, Label l) { return edge.label < l; });
      if (it == edges.end() || it->label != text[i]) break;
      node = it->target;
      if (nodes_[node].value >= 0) best = {i + 1 - from, nodes_[node].value};
    }
    return best;
  }

  bool empty() const { return nodes_.size() == 1; }

 private:
  struct Edge {
    Label label;
    uint32_t target;
  };
  struct Node {
    std::vector<Edge> edges;  // sorted by label
    int64_t value = -1;
  };
  std::vector<Node> nodes_ = std::vector<Node>(1);
};

}  // namespace gradcache::hf::detail
