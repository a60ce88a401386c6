#include "retriever/model/build_model.h"

#include "retriever/config/similarity_settings.h"

#include <algorithm>

namespace gradcache {
namespace retriever {
namespace {

// The Phi of a --similarity mlp config, freshly initialised from the current generator (its
// dot term scaled by --temperature when --phi-dot).
LearnedSimilarity make_similarity(const TrainConfig& c) {
  return LearnedSimilarity(LearnedSimilarityOptions(c.encoder.output_dim(), phi_hidden_width(c))
                               .dropout(c.similarity.dropout)
                               .dot_temperature(c.similarity.with_dot ? c.loss.temperature : 0.0));
}


BiEncoder build_encoders(const TrainConfig& c, const std::vector<std::string>& torchscript) {
  if (!torchscript.empty()) return BiEncoder::torchscript_from_bytes(torchscript);
  return BiEncoder::builtin(EncoderOptions(c.tokenizer.vocab_size)
                                .dim(c.encoder.dim)
                                .layers(c.encoder.layers)
                                .heads(c.encoder.heads)
                                .ffn_dim(c.encoder.ffn_dim)
                                .max_len(std::max(c.tokenizer.query_max_len, c.tokenizer.passage_max_len))
                                .dropout(c.encoder.dropout)
                                .projection_dim(c.encoder.projection_dim)
                                .normalize(c.encoder.normalize),
                            c.encoder.untie);
}

}  // namespace

// Phi after the encoders: the encoders' initialisation is that of a run without it.
BiEncoder build_model(const TrainConfig& c, const std::vector<std::string>& torchscript) {
  BiEncoder model = build_encoders(c, torchscript);
  if (c.similarity.kind == SimilarityKind::Mlp) model.set_similarity(make_similarity(c));
  return model;
}

}  // namespace retriever
}  // namespace gradcache
