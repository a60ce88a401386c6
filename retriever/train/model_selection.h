// Choosing the best model of a run on dev data (--eval-every, --select-metric, --patience):
// where the choice stands, kept in checkpoints so that a resumed run chooses as an
// uninterrupted one would.
#pragma once

#include "retriever/search/metrics.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

namespace gradcache {
namespace retriever {

/// The state of the choice: the best dev value so far, its step, and the evaluations since.
struct SelectionState {
  std::string metric = "recall@10";  ///< the dev metric chosen by (--select-metric)
  double best_value = 0;             ///< meaningful once best_step > 0
  int64_t best_step = 0;             ///< step of the best evaluation; 0: none yet
  int64_t evaluations = 0;           ///< dev evaluations done
  int64_t since_best = 0;            ///< evaluations after the best one, none of them better
};

/// Records a dev evaluation's `value` at `step`. Returns true when it is the best so far:
/// the first one, or strictly above the best (a tie keeps the earlier model). NaN never is.
bool record_evaluation(SelectionState& state, double value, int64_t step);

/// Whether `patience` evaluations in a row have not improved on the best (patience 0: never).
bool patience_exhausted(const SelectionState& state, int64_t patience);

/// The value of the metric named as in to_json(RetrievalMetrics) ("recall@10", "mrr@10", ...);
/// throws std::invalid_argument on another name.
double metric_value(const RetrievalMetrics& metrics, const std::string& name);

/// {"metric", "best_value", "best_step", "evaluations", "since_best"}: for checkpoints and
/// summary.json.
nlohmann::json to_json(const SelectionState& state);
/// The inverse of to_json; throws nlohmann::json::exception on other JSON.
SelectionState selection_from_json(const nlohmann::json& json);

}  // namespace retriever
}  // namespace gradcache
