// A sentence-transformers model in LibTorch: loaded from its directory in one call, trained
// with GradCache like any module, saved back as a directory that Python's SentenceTransformer
// loads.
//
//   auto model = gradcache::hf::load_sentence_transformer("all-MiniLM-L6-v2");
//   gradcache::GradCache cache({model, model}, /*chunk_size=*/32,
//       gradcache::SimpleContrastiveLoss(gradcache::ContrastiveLossOptions()
//           .similarity(gradcache::Similarity::Cosine).temperature(0.05)));
//   model->train();
//   auto loss = cache({model->tokenize(queries), model->tokenize(passages)});
//   optimizer.step();
//   model->save("fine-tuned");
#pragma once

#include <gradcache/hf/dense.h>
#include <gradcache/hf/pooling.h>
#include <gradcache/hf/sentence_transformer_config.h>
#include <gradcache/hf/tokenizer.h>
#include <gradcache/hf/transformer.h>

#include <ATen/core/Dict.h>
#include <torch/arg.h>
#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace gradcache {
namespace hf {

/// Everything of a sentence-transformers model besides the transformer's weights.
struct SentenceTransformerOptions {
  /// Texts are cut to this many tokens, [CLS] and [SEP] included.
  TORCH_ARG(int64_t, max_seq_length) = 512;
  /// Lower-case texts before tokenizing (sentence_bert_config.json's do_lower_case).
  TORCH_ARG(bool, do_lower_case) = false;
  TORCH_ARG(PoolingOptions, pooling) = PoolingOptions();
  /// Dense modules after pooling, in order (EmbeddingGemma's 2_Dense, 3_Dense); each one's
  /// in_features is the size before it. The model builds them (weights as nn.Linear's
  /// initialisation); load_sentence_transformer then reads their weights.
  TORCH_ARG(std::vector<DenseOptions>, dense) = {};
  /// L2-normalise the pooled (and projected) vector (a Normalize module).
  TORCH_ARG(bool, normalize) = false;
  /// Prompts by name, default prompt and similarity (config_sentence_transformers.json).
  TORCH_ARG(ModelSettings, settings) = ModelSettings();
  /// The tokenizer (nullptr: tokenize() is unavailable; batches of ids still work).
  TORCH_ARG(std::shared_ptr<const Tokenizer>, tokenizer) = nullptr;
  /// The directory holding the tokenizer's files (tokenizer.json, vocab.txt, ...): save() copies
  /// them so that Python can load the saved model. "" when there is none (save() then writes the
  /// tokenizer's to_json() as tokenizer.json, if there is a tokenizer).
  TORCH_ARG(std::string, tokenizer_dir) = "";
};

/// Transformer + Pooling [+ Dense...] [+ Normalize], as sentence-transformers runs them.
class SentenceTransformerImpl : public torch::nn::Module {
 public:
  SentenceTransformerImpl(std::shared_ptr<TransformerBackbone> transformer, SentenceTransformerOptions options);

  /// The sentence embeddings [B, d] of a batch {"input_ids" [B, T], "attention_mask" [B, T],
  /// optionally "token_type_ids" [B, T] and "prompt_length" [B] (tokens of the prompt, for
  /// pooling that leaves the prompt out)}: what GradCache and gradcache::Model call.
  at::Tensor forward(const std::map<std::string, at::Tensor>& batch);

  /// sentence-transformers' features of a batch: "token_embeddings" (up to the last real token
  /// of the longest row: trailing columns of padding are dropped), "sentence_embedding" and,
  /// if the transformer has a pooler, "pooler_output". For GradCache with another
  /// representation: Model([m](const std::map<...>& b) { return m->features(b).at("pooler_output"); }).with_state_of(m).
  c10::Dict<std::string, at::Tensor> features(const std::map<std::string, at::Tensor>& batch);

  TransformerBackbone& transformer() { return *transformer_; }
  const TransformerBackbone& transformer() const { return *transformer_; }
  const SentenceTransformerOptions& options() const { return options_; }
  /// Size of the sentence embedding: the last Dense module's output, else the pooled vector's.
  int64_t embedding_dimension() const;
  /// The Dense modules after pooling (registered as "dense_0", "dense_1", ...).
  const std::vector<Dense>& dense() const { return dense_; }
  /// The text of prompt `name` ("" for ""); std::invalid_argument listing the prompts otherwise.
  std::string prompt(const std::string& name) const;
  /// Sets prompt `name` to `text` (as `model.prompts[name] = text` in Python); save() writes it.
  void set_prompt(const std::string& name, const std::string& text);

  /// The batch of `texts` as SentenceTransformer.encode tokenizes it: `prompt` (a prompt's text,
  /// e.g. prompt("query"); by default the default prompt's, if the model has one) before each
  /// text, lower-cased if do_lower_case(), [CLS] pieces [SEP] cut at max_seq_length(), padded to
  /// the longest with the tokenizer's pad id, on its padding_side(): {"input_ids", "attention_mask"} int64 [B, T], and
  /// "prompt_length" [B] when the pooling leaves the prompt out. std::logic_error without a tokenizer.
  std::map<std::string, at::Tensor> tokenize(const std::vector<std::string>& texts,
                                             const std::optional<std::string>& prompt = std::nullopt) const;
  /// The tokenizer; std::logic_error if the model has none.
  const Tokenizer& tokenizer() const;

  /// Writes a sentence-transformers directory: config.json and model.safetensors (the
  /// transformer), modules.json, 1_Pooling/config.json, <n>_Dense/ (config.json and
  /// model.safetensors, each Dense module), <n>_Normalize/ (if normalising),
  /// sentence_bert_config.json, config_sentence_transformers.json and the tokenizer's files. The
  /// directory appears whole or not at all (built as "<dir>.partial-<pid>", then renamed); an
  /// existing one is replaced only if it is empty or a model directory (has config.json).
  void save(const std::string& dir) const;
  /// torch::nn::Module's save into an archive, which the directory form would hide otherwise.
  using torch::nn::Module::save;

 private:
  // The sentence embeddings; the transformer's output goes to `out`.
  at::Tensor embed(const std::map<std::string, at::Tensor>& batch, bool with_pooler, TransformerOutput* out);

  std::shared_ptr<TransformerBackbone> transformer_;
  SentenceTransformerOptions options_;
  std::vector<Dense> dense_;
};
TORCH_MODULE(SentenceTransformer);

/// Loads a model directory in one call, in eval mode: with modules.json, its modules
/// (Transformer, Pooling, Dense modules with their weights, optional Normalize) and their configuration files; without it, a plain
/// Hugging Face directory (config.json + weights) as sentence-transformers does, i.e. the
/// transformer with mean pooling. The tokenizer comes from tokenizer.json or vocab.txt (a
/// directory without either loads without one; a tokenizer file that cannot be used throws
/// its TokenizerError). max_seq_length comes from sentence_bert_config.json, else the
/// tokenizer's model_max_length, capped at the model's max_position_embeddings. Throws
/// ModelFileError naming the file at fault.
SentenceTransformer load_sentence_transformer(const std::string& dir);

/// A padded batch {"input_ids", "attention_mask"} (int64 [B, longest]) from token id lists,
/// padded with `pad_id` on the right, or on the left if `pad_left` (decoders' tokenizers).
std::map<std::string, at::Tensor> pad_batch(const std::vector<std::vector<int64_t>>& ids, int64_t pad_id = 0,
                                            bool pad_left = false);

}  // namespace hf
}  // namespace gradcache
