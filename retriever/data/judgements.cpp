#include "retriever/data/judgements.h"

namespace gradcache::retriever {
namespace {

// Judgements of one kind that evaluation cannot use: how many, and the first id (Qrels is
// ordered, so the example does not change from run to run).
struct Unusable {
  size_t count = 0;
  std::string example;
  void add(const std::string& id) {
    if (count++ == 0) example = id;
  }
};

struct Tally {
  size_t total = 0, usable_queries = 0;
  Unusable unknown_query, unknown_doc, not_relevant;
};

Tally tally(const TextCollection& corpus, const TextCollection& queries, const Qrels& qrels) {
  Tally t;
  for (const auto& [query, judged] : qrels) {
    const bool known_query = queries.index.count(query) > 0;
    bool usable = false;
    for (const auto& [doc, grade] : judged) {
      ++t.total;
      if (!known_query) {
        t.unknown_query.add(query);
      } else if (!corpus.index.count(doc)) {
        t.unknown_doc.add(doc);
      } else if (grade <= 0) {
        t.not_relevant.add(doc);
      } else {
        usable = true;
      }
    }
    t.usable_queries += usable;
  }
  return t;
}

std::string example(const Unusable& u) { return " (e.g. '" + u.example + "')"; }

// "of 5 judgements, 3 name a query id not in Q (e.g. 'x'), 2 a document id not in C (e.g. 'd')"
std::string why_none_is_usable(const Tally& t, const JudgementFiles& files) {
  std::vector<std::string> parts;
  if (t.unknown_query.count > 0)
    parts.push_back(std::to_string(t.unknown_query.count) + " name a query id not in " + files.queries +
                    example(t.unknown_query));
  if (t.unknown_doc.count > 0)
    parts.push_back(std::to_string(t.unknown_doc.count) + (parts.empty() ? " name" : "") + " a document id not in " +
                    files.corpus + example(t.unknown_doc));
  if (t.not_relevant.count > 0)
    parts.push_back(std::to_string(t.not_relevant.count) + (parts.empty() ? " have" : "") +
                    " a grade <= 0 (not relevant)");
  std::string text = "of " + std::to_string(t.total) + " judgements, ";
  for (size_t i = 0; i < parts.size(); ++i) text += (i == 0 ? "" : i + 1 == parts.size() ? " and " : ", ") + parts[i];
  return text;
}

}  // namespace

std::vector<std::string> check_judgements(const TextCollection& corpus, const TextCollection& queries,
                                          const Qrels& qrels, const JudgementFiles& files) {
  const Tally t = tally(corpus, queries, qrels);
  if (t.usable_queries == 0) {
    throw DataError(files.qrels, 0,
                    "no query can be evaluated: " + why_none_is_usable(t, files) +
                        "; a query needs an id in the queries file and a judgement with grade > 0 of a document "
                        "in the corpus (are the three files of the same data set?)");
  }
  std::vector<std::string> notices;
  auto note = [&](const Unusable& u, const char* what, const std::string& file) {
    if (u.count == 0) return;
    notices.push_back(files.qrels + ": " + std::to_string(u.count) + " of " + std::to_string(t.total) +
                      " judgements name a " + what + " id that is not in " + file + example(u) + "; they are ignored");
  };
  note(t.unknown_query, "query", files.queries);
  note(t.unknown_doc, "document", files.corpus);
  return notices;
}

}  // namespace gradcache::retriever
