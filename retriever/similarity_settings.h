// The settings of a learned similarity (--similarity mlp, --phi-*, --rerank-k): declared here,
// apart from the other settings of a run, as one concept.
#pragma once

#include "retriever/learned_similarity.h"
#include "retriever/settings.h"
#include "retriever/train_config.h"

#include <cstdint>

namespace gradcache {
namespace retriever {

/// Adds the learned similarity's settings and their checks across settings to a run's table.
void add_similarity_settings(SettingsTable<TrainConfig>& table);

/// The width of the representations Phi scores: the projection's, else the encoder's.
int64_t representation_dim(const TrainConfig& c);

/// Phi's hidden width: --phi-hidden, or twice the representation width when 0.
int64_t phi_hidden_width(const TrainConfig& c);

/// The Phi of a --similarity mlp config, freshly initialised from the current generator (its
/// dot term scaled by --temperature when --phi-dot).
LearnedSimilarity make_similarity(const TrainConfig& c);

}  // namespace retriever
}  // namespace gradcache
