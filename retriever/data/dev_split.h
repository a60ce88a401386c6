// Dev data held out of the training pairs (--dev-fraction): for model selection on user data
// that comes without dev queries of its own.
#pragma once

#include "retriever/data/task.h"
#include "retriever/data/text_data.h"

#include <cstdint>
#include <string>
#include <vector>

namespace gradcache {
namespace retriever {

/// Removes round(fraction x n) training examples (at least 1, at most n - 1), drawn by `seed`
/// alone, from `train` (the others keep their order) and returns them as dev data: their
/// queries (ids "dev-1", ...), judged relevant to their positives, ranked against every
/// distinct passage of the training data as it was (passage_corpus: the file's docids, else
/// "d<row>"; `source` names the file in its error).
/// The same (train, fraction, seed) always holds out the same examples. Throws
/// std::invalid_argument when fraction is not in (0, 1) or fewer than 2 examples are given.
EvalData hold_out_dev(std::vector<TrainExample>& train, double fraction, uint64_t seed,
                      const std::string& source);

}  // namespace retriever
}  // namespace gradcache
