// The settings of a learned similarity (--similarity mlp, --phi-*, --rerank-k): declared here,
// apart from the other settings of a run, as one concept.
#pragma once

#include "retriever/config/settings_table.h"

#include <cstdint>
#include <optional>
#include <string>

namespace gradcache {
namespace retriever {

struct TrainConfig;

/// --similarity: what scores a query against a passage.
enum class SimilarityKind {
  Dot,  ///< the encoders' dot product
  Mlp,  ///< a learned Phi(q, p) trained through the dual cache
};
const ChoiceNames<SimilarityKind>& similarity_names();

/// A learned similarity Phi (--similarity mlp) and how the dual cache tiles it.
struct SimilaritySettings {
  SimilarityKind kind = SimilarityKind::Dot;
  int64_t hidden = 0;      ///< Phi's hidden width (--phi-hidden); 0: twice the representation width
  double dropout = 0.1;    ///< dropout on Phi's hidden layer (--phi-dropout)
  bool with_dot = true;    ///< Phi = MLP + q.p / temperature (--phi-dot; false: the MLP alone)
  int64_t tile = 64;       ///< dual cache: queries and passages per tile of Phi's pairs (--phi-tile)
  int64_t rerank_k = 100;  ///< evaluation: dense candidates per query re-ranked by Phi
};

/// Adds the learned similarity's settings and their checks across settings to a run's table.
void add_similarity_settings(SettingsTable<TrainConfig>& table);

/// Why a config cannot train in `processes` processes, or nothing when it can: a learned
/// similarity trains in one (the dual cache does not gather Phi's scores across ranks). The
/// program asks before it starts ranks, the trainer when it is handed a process group.
std::optional<std::string> similarity_process_conflict(const TrainConfig& c, int processes);

/// Phi's hidden width: --phi-hidden, or twice the representation width when 0.
int64_t phi_hidden_width(const TrainConfig& c);

}  // namespace retriever
}  // namespace gradcache
