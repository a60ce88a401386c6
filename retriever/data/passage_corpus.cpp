#include "retriever/data/passage_corpus.h"

#include <unordered_set>

namespace gradcache {
namespace retriever {

TextCollection passage_corpus(const std::vector<TrainExample>& examples, const std::string& source) {
  TextCollection corpus;
  std::unordered_set<std::string> seen;
  auto add = [&](const std::string& text, const std::string& id) {
    if (!seen.insert(text).second) return;
    const std::string doc_id = id.empty() ? "d" + std::to_string(corpus.size()) : id;
    if (corpus.index.count(doc_id))
      throw DataError(source, 0, "docid \"" + doc_id + "\" is given to two different passages; make docids unique "
                                                       "or pass the documents with --corpus");
    corpus.add(doc_id, text);
  };
  for (const auto& e : examples) {
    for (size_t i = 0; i < e.positives.size(); ++i) add(e.positives[i], i < e.positive_ids.size() ? e.positive_ids[i] : "");
    for (const auto& n : e.negatives) add(n, "");
  }
  return corpus;
}

}  // namespace retriever
}  // namespace gradcache
