// Relevance judgements (qrels) checked against the queries and the corpus they come with:
// evaluation uses a judgement only when both of its ids are in those files, so ids from
// another data set would otherwise give a table of zeros over "0 queries", without a word.
#pragma once

#include "retriever/data/text_data.h"

#include <string>
#include <vector>

namespace gradcache::retriever {

/// The files an evaluation set was read from, for messages.
struct JudgementFiles {
  std::string corpus, queries, qrels;
};

/// Notices, one line each, for the judgements evaluation ignores because they name a query id
/// not in `queries` or a document id not in `corpus` (how many, and an example); none when all
/// fit. Throws DataError naming the qrels file, with the count of each reason, when no query
/// is left to evaluate: none in `queries` with a relevant (grade > 0) document in `corpus`.
std::vector<std::string> check_judgements(const TextCollection& corpus, const TextCollection& queries,
                                          const Qrels& qrels, const JudgementFiles& files);

}  // namespace gradcache::retriever
