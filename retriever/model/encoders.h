// Text encoders of the retriever: the built-in Transformer, pretrained Hugging Face /
// sentence-transformers models, and TorchScript models.
#pragma once

#include <gradcache/model.h>

#include "retriever/model/encoder_defaults.h"
#include "retriever/model/fast_dropout.h"
#include "retriever/model/learned_similarity.h"
#include "retriever/model/pretrained.h"

#include <torch/nn/module.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>
#include <torch/nn/pimpl.h>
#include <torch/script.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace gradcache {
namespace retriever {

/// A tokenized batch: ids [B, T] int64 (0 = padding) and attention_mask [B, T] bool.
/// As a model input: keyword arguments "input_ids" and "attention_mask".
using TokenBatch = std::map<std::string, torch::Tensor>;

struct EncoderOptions {
  explicit EncoderOptions(int64_t vocab_size = encoder_defaults::vocab_size) : vocab_size_(vocab_size) {}
  TORCH_ARG(int64_t, vocab_size);
  TORCH_ARG(int64_t, dim) = encoder_defaults::dim;
  TORCH_ARG(int64_t, layers) = encoder_defaults::layers;
  TORCH_ARG(int64_t, heads) = encoder_defaults::heads;
  TORCH_ARG(int64_t, ffn_dim) = encoder_defaults::ffn_dim;
  TORCH_ARG(int64_t, max_len) = 64;  ///< positions
  TORCH_ARG(double, dropout) = encoder_defaults::dropout;
  TORCH_ARG(int64_t, projection_dim) = encoder_defaults::projection_dim;  ///< 0: no projection after pooling
  TORCH_ARG(bool, normalize) = encoder_defaults::normalize;  ///< L2-normalise the output (cosine similarity)
};

/// One pre-LayerNorm Transformer layer: x + attn(LN(x)), then x + ffn(LN(x)).
class TransformerLayerImpl : public torch::nn::Module {
 public:
  TransformerLayerImpl(int64_t dim, int64_t heads, int64_t ffn_dim, double dropout);
  /// x [B, T, d]; key_mask [B, T] bool, true for real tokens.
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& key_mask);

 private:
  int64_t heads_;
  torch::nn::LayerNorm norm1_{nullptr}, norm2_{nullptr};
  torch::nn::Linear qkv_{nullptr}, out_{nullptr}, ffn1_{nullptr}, ffn2_{nullptr};
  FastDropout attn_drop_{nullptr}, drop_{nullptr};  // fast_dropout: masks as cheap as a multiply
};
TORCH_MODULE(TransformerLayer);

/// Token + position embeddings, pre-LN Transformer layers, mean pooling over the attention
/// mask, optional projection and L2 normalisation. forward(batch) -> [B, d].
class TransformerEncoderImpl : public torch::nn::Module {
 public:
  explicit TransformerEncoderImpl(EncoderOptions options);
  torch::Tensor forward(const TokenBatch& batch);
  const EncoderOptions& options() const { return options_; }

 private:
  EncoderOptions options_;
  torch::nn::Embedding tokens_{nullptr}, positions_{nullptr};
  std::vector<TransformerLayer> layers_;
  torch::nn::LayerNorm final_norm_{nullptr};
  torch::nn::Linear projection_{nullptr};
};
TORCH_MODULE(TransformerEncoder);

/// Mean of `hidden` [B, T, d] over the positions where `mask` [B, T] is true.
torch::Tensor mean_pool(const torch::Tensor& hidden, const torch::Tensor& mask);

/// A TorchScript encoder: forward(input_ids, attention_mask) returning [B, d] or [B, T, d]
/// (then mean-pooled over the mask). Anything else is refused with a clear error.
torch::Tensor call_script_encoder(torch::jit::Module& module, const TokenBatch& batch);

/// Checks that a TorchScript encoder takes every token id of a tokenizer of `vocab_size` pieces,
/// by encoding the largest id once (no graph, no dropout; the training mode comes back). Throws
/// std::invalid_argument with one line naming `model_name` and `tokenizer_name` otherwise: a
/// tokenizer that does not match the model (not the one it was exported with).
void check_script_vocabulary(torch::jit::Module& module, int64_t vocab_size, const std::string& model_name,
                             const std::string& tokenizer_name);

/// The query and passage encoders of a retriever: one shared encoder (default) or two.
class BiEncoder {
 public:
  /// The built-in Transformer; `untie` gives the passages an encoder of their own.
  static BiEncoder builtin(const EncoderOptions& options, bool untie);
  /// A pretrained model (one, shared; or the query's then the passage's, untied).
  static BiEncoder pretrained(std::vector<hf::SentenceTransformer> encoders);
  /// A TorchScript file (e.g. a Hugging Face model exported from Python); `untie` loads it twice.
  static BiEncoder torchscript(const std::string& path, bool untie);
  /// As above from serialized TorchScript bytes (checkpoints embed them).
  static BiEncoder torchscript_from_bytes(const std::vector<std::string>& bytes);

  gradcache::Model query_model() const { return query_; }
  gradcache::Model passage_model() const { return passage_; }
  bool tied() const { return query_.identity() == passage_.identity(); }
  bool is_torchscript() const { return !scripts_.empty(); }
  bool is_pretrained() const { return !pretrained_.empty(); }
  /// The width of the embeddings; 0 for TorchScript (known only by running it).
  int64_t output_dim() const;
  /// Whether the embeddings are L2-normalised (the built-in --normalize, a pretrained model's
  /// Normalize module); false for TorchScript (not known).
  bool normalizes() const;

  /// Every trainable parameter once, in a fixed order.
  std::vector<torch::Tensor> parameters() const;
  /// Parameters and buffers by name ("query." / "passage." prefixes when untied).
  std::vector<std::pair<std::string, torch::Tensor>> named_state() const;
  void train(bool on);
  bool is_training() const;
  void to(const c10::Device& device);
  /// The built-in encoders (one, or query then passage when untied); empty for TorchScript.
  const std::vector<TransformerEncoder>& builtin_encoders() const { return builtins_; }
  /// The pretrained encoders (one, or two when untied); empty for the others.
  const std::vector<hf::SentenceTransformer>& pretrained_encoders() const { return pretrained_; }
  /// The TorchScript encoders (one, or two when untied); empty for the built-in one.
  const std::vector<std::shared_ptr<torch::jit::Module>>& scripts() const { return scripts_; }
  /// TorchScript encoders serialized (one, or two when untied); empty for the built-in one.
  std::vector<std::string> torchscript_bytes() const;
  /// Attaches a learned similarity Phi (--similarity mlp): its parameters and buffers then come
  /// after the encoders' in parameters() and named_state() ("similarity." prefix), so the
  /// optimizer, the clipping and the checkpoints hold them; train() and to() reach it.
  void set_similarity(LearnedSimilarity phi);
  /// Phi, or an empty holder when the model ranks by the dot product only.
  const LearnedSimilarity& similarity() const { return similarity_; }

 private:
  gradcache::Model query_, passage_;
  std::vector<TransformerEncoder> builtins_;
  std::vector<hf::SentenceTransformer> pretrained_;
  std::vector<std::shared_ptr<torch::jit::Module>> scripts_;
  LearnedSimilarity similarity_{nullptr};
};

/// A CRC-32 over every tensor of `model.named_state()` (name, dtype, shape and bytes), as 8 hex
/// digits: what tells two models apart where a path and a step cannot (a run trained again at
/// the same --output). Embedding manifests record it (manifest.json "model").
std::string weights_digest(const BiEncoder& model);

}  // namespace retriever
}  // namespace gradcache
