// The settings of model selection during training (--eval-every, the dev data, --select-metric,
// --patience): declared here, apart from the other settings of a run, as one concept.
#pragma once

#include "retriever/config/settings_table.h"
#include <cstdint>

#include <string>
#include <vector>

namespace gradcache {
namespace retriever {

struct TrainConfig;

/// Model selection on dev data during training: when to evaluate, on what, by which metric.
struct SelectionSettings {
  int64_t eval_every = 0;                          ///< steps between dev evaluations; 0: none
  std::string dev_corpus, dev_queries, dev_qrels;  ///< dev files for user data (corpus: eval_corpus if "")
  double dev_fraction = 0;                         ///< > 0: hold out this fraction of the training pairs
  std::string metric = "recall@10";                ///< the dev metric best.pt is chosen by (--select-metric)
  int64_t patience = 0;                            ///< > 0: stop after this many evaluations without improvement
};

/// The dev metrics best.pt may be chosen by: the keys of to_json(RetrievalMetrics).
const std::vector<std::string>& selection_metric_names();

/// Adds the model selection settings and their checks across settings to a run's table.
void add_model_selection_settings(SettingsTable<TrainConfig>& table);

}  // namespace retriever
}  // namespace gradcache
