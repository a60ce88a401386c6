// The passages of training pairs as a corpus: what mining searches and a held-out dev split
// is ranked against when the user gives no corpus of their own.
#pragma once

#include "retriever/data/text_data.h"

#include <string>
#include <vector>

namespace gradcache {
namespace retriever {

/// Every distinct passage text of `examples` (positives and negatives), in order of first
/// appearance, once each. A positive keeps its docid when the file gives one; other passages
/// get "d<row>". Throws DataError(source, 0, ...) when one docid names two different texts
/// (ids must find one document).
TextCollection passage_corpus(const std::vector<TrainExample>& examples, const std::string& source);

}  // namespace retriever
}  // namespace gradcache
