#include "retriever/config/similarity_settings.h"

#include "retriever/config/train_config.h"

namespace gradcache {
namespace retriever {
namespace {

using Table = SettingsTable<TrainConfig>;

// What --similarity mlp can be combined with; each message names the flags.
std::string check_similarity(const TrainConfig& c) {
  if (c.similarity.kind != SimilarityKind::Mlp) {
    return c.similarity.hidden > 0 ? "--phi-hidden is used only with --similarity mlp" : "";
  }
  if (is_streaming(c.loss.kind)) {
    return "--similarity mlp trains InfoNCE over Phi's scores (--loss infonce or symmetric); --loss " +
           to_string(c.loss.kind) + " is a loss over the dot product: drop one of them";
  }
  if (!c.matryoshka.dims.empty()) {
    return "--similarity mlp scores full-width representations with Phi; --matryoshka trains prefixes for the "
           "dot product: drop one of them";
  }
  if (!c.encoder.is_builtin()) {
    return "--similarity mlp needs the built-in encoder (Phi is sized by --dim or --projection); a --model or "
           "--model-dir encoder's width is not known before it is loaded";
  }
  if (c.machine.precision == Precision::fp16) {
    return "--similarity mlp does not support --precision fp16 (the dual cache accumulates Phi's gradients "
           "unscaled, so a loss scaler cannot be used); use --precision bf16 or fp32";
  }
  return "";
}

}  // namespace

int64_t phi_hidden_width(const TrainConfig& c) {
  return c.similarity.hidden > 0 ? c.similarity.hidden : 2 * c.encoder.output_dim();
}

// They decide what is trained: a resumed run keeps them, except the tile (the same gradients,
// summed in another order) and the evaluation's re-ranking depth.
void add_similarity_settings(Table& t) {
  const char* group = "Learned similarity";
  t.add(nested_choice_field(
            "similarity", &TrainConfig::similarity, &SimilaritySettings::kind, "--similarity",
            "dot (the encoders' dot product) or mlp (a learned Phi(q, p) trained with the encoders through "
            "the dual gradient cache; evaluation re-ranks the dense top --rerank-k with it)",
            similarity_names())
            .in_group(group));
  t.add(nested_field("phi_hidden", &TrainConfig::similarity, &SimilaritySettings::hidden, "--phi-hidden",
                     "mlp: Phi's hidden width (0: twice the representation width)")
            .in_group(group)
            .checked(at_least(0)));
  t.add(nested_field("phi_dropout", &TrainConfig::similarity, &SimilaritySettings::dropout, "--phi-dropout",
                     "mlp: dropout on Phi's hidden layer")
            .in_group(group)
            .checked(in_range(0, 1)));
  t.add(nested_field("phi_dot", &TrainConfig::similarity, &SimilaritySettings::with_dot, "--phi-dot",
                     "mlp: Phi = MLP + q.p / --temperature, so the encoders stay trained for the dense first stage "
                     "(false: the MLP alone)")
            .in_group(group));
  t.add(nested_field("phi_tile", &TrainConfig::similarity, &SimilaritySettings::tile, "--phi-tile",
                     "mlp, cache: queries and passages per tile of Phi's pairs (its memory: tile^2 pairs)")
            .in_group(group)
            .per_rank()
            .free_on_resume()
            .checked(positive()));
  t.add(nested_field("rerank_k", &TrainConfig::similarity, &SimilaritySettings::rerank_k, "--rerank-k",
                     "mlp: dense candidates per query that Phi re-ranks in the evaluation")
            .in_group(group)
            .free_on_resume()
            .checked(positive()));
  t.add_check(check_similarity);
}

std::optional<std::string> similarity_process_conflict(const TrainConfig& c, int processes) {
  if (c.similarity.kind != SimilarityKind::Mlp || processes <= 1) return std::nullopt;
  return "--similarity mlp trains in one process (the dual gradient cache does not gather Phi's scores across "
         "processes): run without --nproc N and without torchrun";
}

}  // namespace retriever
}  // namespace gradcache
