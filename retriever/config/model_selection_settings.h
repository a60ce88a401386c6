// The settings of model selection during training (--eval-every, the dev data, --select-metric,
// --patience): declared here, apart from the other settings of a run, as one concept.
#pragma once

#include "retriever/config/settings_table.h"
#include "retriever/config/train_config.h"

#include <string>
#include <vector>

namespace gradcache {
namespace retriever {

/// The dev metrics best.pt may be chosen by: the keys of to_json(RetrievalMetrics).
const std::vector<std::string>& selection_metric_names();

/// Adds the model selection settings and their checks across settings to a run's table.
void add_model_selection_settings(SettingsTable<TrainConfig>& table);

}  // namespace retriever
}  // namespace gradcache
