// What the benchmarks train: the models (the retriever's Transformer encoder or two MLPs),
// their loss, and synthetic contrastive batches.
#pragma once

#include "report.h"

#include <gradcache/gradcache.h>

#include <torch/nn/module.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace gcbench {

class OptionTable;

/// What is trained: a text encoder (the retriever's Transformer, one encoder shared by queries
/// and passages) on synthetic token batches, or a pair of MLPs on Gaussian vectors.
struct ModelSettings {
  std::string kind = "transformer";  ///< transformer | mlp
  int64_t dim = 64;                  ///< representation size (and Transformer width)
  int64_t layers = 2;
  int64_t heads = 4;
  int64_t ffn = 256;
  int64_t vocab = 1000;
  int64_t query_len = 16;     ///< query texts have 4..query_len tokens
  int64_t passage_len = 32;   ///< passage texts have 8..passage_len tokens
  double dropout = 0.1;
  int64_t mlp_in = 128;       ///< MLP: in -> hidden -> hidden -> dim
  int64_t mlp_hidden = 512;
  double temperature = 0.05;  ///< of the InfoNCE loss (representations are L2-normalised)
  std::string loss = "dense";  ///< dense (SimpleContrastiveLoss) | streaming (StreamingContrastiveLoss)
  int64_t tile = gradcache::kDefaultTileSize;  ///< of the streaming loss
  int64_t seed = 0;

  /// with_kind: also --model (scenarios that fix the kind leave it out).
  void add_options(OptionTable& table, bool with_kind = true);
  Json to_json() const;
};

/// A contrastive batch: N queries and their N positive passages (in-batch negatives).
struct Batch {
  gradcache::ModelInput queries, passages;
  int64_t pairs = 0;
};

/// The models and the loss of one benchmark run.
class Workload {
 public:
  explicit Workload(const ModelSettings& settings);

  Batch batch(int64_t pairs, uint64_t seed) const;
  /// Chunks of an input as GradCache makes them (token chunks are trimmed to their own
  /// longest text, as the retriever's trainer does).
  std::vector<gradcache::ModelInput> split(const gradcache::ModelInput& input, int64_t chunk) const;
  /// The split function split() uses.
  gradcache::SplitInputFn split_fn() const;
  /// GradCache options that split as split() does.
  gradcache::GradCacheOptions cache_options() const;
  std::vector<gradcache::Model> models() const { return {query_model_, passage_model_}; }
  const gradcache::Model& query_model() const { return query_model_; }
  const gradcache::Model& passage_model() const { return passage_model_; }
  const gradcache::Loss& loss() const { return loss_; }

  /// Every trainable parameter once (a tied encoder is one module).
  std::vector<torch::Tensor> parameters() const;
  int64_t parameter_count() const;
  void train(bool on);
  /// Gives every parameter a zero gradient, so that memory measured after this does not
  /// include the first allocation of the gradients.
  void allocate_grads();
  void zero_grads();
  std::vector<torch::Tensor> grads() const;  ///< copies
  const ModelSettings& settings() const { return settings_; }
  std::string describe() const;

 private:
  ModelSettings settings_;
  std::vector<std::shared_ptr<torch::nn::Module>> modules_;
  gradcache::Model query_model_, passage_model_;
  gradcache::Loss loss_;
};

}  // namespace gcbench
