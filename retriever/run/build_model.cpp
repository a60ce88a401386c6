#include "retriever/run/build_model.h"

#include "retriever/config/similarity_settings.h"

#include <torch/torch.h>

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

BiEncoder build_encoders(const TrainConfig& c, const std::vector<std::string>& torchscript,
                         const PretrainedModel* pretrained) {
  if (!torchscript.empty()) return BiEncoder::torchscript_from_bytes(torchscript);
  if (pretrained) {
    std::vector<hf::SentenceTransformer> encoders{build_pretrained(*pretrained)};
    if (c.encoder.untie) encoders.push_back(build_pretrained(*pretrained));
    return BiEncoder::pretrained(std::move(encoders));
  }
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

BiEncoder pretrained_model(const LoadedPretrained& loaded, bool untie) {
  std::vector<hf::SentenceTransformer> encoders{loaded.module};
  if (untie) {
    hf::SentenceTransformer copy = build_pretrained(loaded.description);
    torch::NoGradGuard no_grad;
    const auto weights = loaded.module->named_parameters();
    for (auto& kv : copy->named_parameters()) kv.value().copy_(weights[kv.key()]);
    const auto buffers = loaded.module->named_buffers();
    for (auto& kv : copy->named_buffers()) kv.value().copy_(buffers[kv.key()]);
    copy->train(loaded.module->is_training());
    encoders.push_back(copy);
  }
  return BiEncoder::pretrained(std::move(encoders));
}

// Phi after the encoders: the encoders' initialisation is that of a run without it.
BiEncoder build_model(const TrainConfig& c, const std::vector<std::string>& torchscript,
                      const PretrainedModel* pretrained) {
  BiEncoder model = build_encoders(c, torchscript, pretrained);
  if (c.similarity.kind == SimilarityKind::Mlp) model.set_similarity(make_similarity(c));
  return model;
}

}  // namespace retriever
}  // namespace gradcache
