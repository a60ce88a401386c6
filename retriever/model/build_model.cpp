#include "retriever/model/build_model.h"

#include "retriever/config/similarity_settings.h"

#include <algorithm>

namespace gradcache {
namespace retriever {
namespace {

// The Phi of a --similarity mlp config, freshly initialised from the current generator (its
// dot term scaled by --temperature when --phi-dot).
LearnedSimilarity make_similarity(const TrainConfig& c) {
  return LearnedSimilarity(LearnedSimilarityOptions(representation_dim(c), phi_hidden_width(c))
                               .dropout(c.phi_dropout)
                               .dot_temperature(c.phi_dot ? c.temperature : 0.0));
}


BiEncoder build_encoders(const TrainConfig& c, const std::vector<std::string>& torchscript) {
  if (!torchscript.empty()) return BiEncoder::torchscript_from_bytes(torchscript);
  return BiEncoder::builtin(EncoderOptions(c.vocab_size)
                                .dim(c.dim)
                                .layers(c.layers)
                                .heads(c.heads)
                                .ffn_dim(c.ffn_dim)
                                .max_len(std::max(c.query_max_len, c.passage_max_len))
                                .dropout(c.dropout)
                                .projection_dim(c.projection_dim)
                                .normalize(c.normalize),
                            c.untie);
}

}  // namespace

// Phi after the encoders: the encoders' initialisation is that of a run without it.
BiEncoder build_model(const TrainConfig& c, const std::vector<std::string>& torchscript) {
  BiEncoder model = build_encoders(c, torchscript);
  if (c.similarity == SimilarityKind::Mlp) model.set_similarity(make_similarity(c));
  return model;
}

}  // namespace retriever
}  // namespace gradcache
