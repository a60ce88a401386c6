#include "retriever/train/model_selection.h"

#include <cmath>
#include <stdexcept>

namespace gradcache {
namespace retriever {

bool record_evaluation(SelectionState& state, double value, int64_t step) {
  ++state.evaluations;
  if (!std::isnan(value) && (state.best_step == 0 || value > state.best_value)) {
    state.best_value = value;
    state.best_step = step;
    state.since_best = 0;
    return true;
  }
  ++state.since_best;
  return false;
}

bool patience_exhausted(const SelectionState& state, int64_t patience) {
  return patience > 0 && state.since_best >= patience;
}

double metric_value(const RetrievalMetrics& m, const std::string& name) {
  if (name == "recall@1") return m.recall_at_1;
  if (name == "recall@10") return m.recall_at_10;
  if (name == "recall@100") return m.recall_at_100;
  if (name == "mrr@10") return m.mrr_at_10;
  if (name == "ndcg@10") return m.ndcg_at_10;
  throw std::invalid_argument("unknown metric '" + name + "': use recall@1, recall@10, recall@100, mrr@10 or ndcg@10");
}

nlohmann::json to_json(const SelectionState& s) {
  return {{"metric", s.metric},
          {"best_value", s.best_value},
          {"best_step", s.best_step},
          {"evaluations", s.evaluations},
          {"since_best", s.since_best}};
}

SelectionState selection_from_json(const nlohmann::json& j) {
  SelectionState s;
  s.metric = j.at("metric").get<std::string>();
  s.best_value = j.at("best_value").get<double>();
  s.best_step = j.at("best_step").get<int64_t>();
  s.evaluations = j.at("evaluations").get<int64_t>();
  s.since_best = j.at("since_best").get<int64_t>();
  return s;
}

}  // namespace retriever
}  // namespace gradcache
