// The settings of a learned similarity (--similarity mlp, --phi-*, --rerank-k): declared here,
// apart from the other settings of a run, as one concept.
#pragma once

#include "retriever/config/settings_table.h"
#include "retriever/config/train_config.h"

#include <cstdint>
#include <optional>
#include <string>

namespace gradcache {
namespace retriever {

/// Adds the learned similarity's settings and their checks across settings to a run's table.
void add_similarity_settings(SettingsTable<TrainConfig>& table);

/// Why a config cannot train in `processes` processes, or nothing when it can: a learned
/// similarity trains in one (the dual cache does not gather Phi's scores across ranks). The
/// program asks before it starts ranks, the trainer when it is handed a process group.
std::optional<std::string> similarity_process_conflict(const TrainConfig& c, int processes);

/// The width of the representations Phi scores: the projection's, else the encoder's.
int64_t representation_dim(const TrainConfig& c);

/// Phi's hidden width: --phi-hidden, or twice the representation width when 0.
int64_t phi_hidden_width(const TrainConfig& c);

}  // namespace retriever
}  // namespace gradcache
