// The retriever's tokenizer: a sentencepiece model trained on the training texts, or the
// Hugging Face tokenizer of a pretrained model (--model-dir); and the prompts put before
// queries and passages.
#pragma once

#include <gradcache/hf/tokenizer.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace gradcache::retriever {

/// Settings of Tokenizer::train.
struct TokenizerTrainOptions {
  int vocab_size = 8000;               ///< pieces, padding and unknown included
  std::string model_type = "unigram";  ///< "unigram" or "bpe"
  /// Training threads. Part of the result: sentencepiece sums per-thread statistics, so the same
  /// texts give the same model bytes only with the same thread count.
  int num_threads = 2;
  /// At most this many texts are used for training; larger inputs are sampled down to it with a
  /// fixed seed (deterministic). Bounds training time: 100k short texts train an 8000-piece
  /// unigram model in 11-16 s on 2 shared cores (all 220k texts: 23-34 s).
  size_t max_sentences = 100000;
  /// When the texts support fewer pieces than vocab_size (sentencepiece's "Vocabulary size too
  /// high"), train with the most they support instead of failing; vocab_size() of the result
  /// tells. A default vocabulary must not fail on a small training file.
  bool fit_vocab_size = false;
  /// When given: training runs in a child process that is killed as soon as *stop holds a
  /// signal number (StoppedBySignal, model/encode_all.h); sentencepiece itself cannot be
  /// interrupted. The model's bytes are the same either way.
  const std::atomic<int>* stop = nullptr;
};

/// The text put before every query and every passage before tokenizing (sentence-transformers'
/// prompts, e.g. e5's "query: " and "passage: "); "" for none. And SGPT's bracket markers
/// (its --specb): each query's ids between the ids of "[" and "]", each passage's between
/// those of "{" and "}", so that one decoder tells the sides apart.
struct Prompts {
  std::string query, passage;
  bool brackets = false;
};

/// How a run chooses its prompts (--query-prompt, --passage-prompt, --model-prompts): resolved
/// against a pretrained model by resolve_prompts (model/pretrained.h).
struct PromptSettings {
  std::string query, passage;  ///< the texts; "" = not given
  bool from_model = true;      ///< else a pretrained model's prompts named "query" and "document"
  bool brackets = false;       ///< SGPT's bracket markers (--specb)
};

/// What a tokenizer is.
enum class TokenizerKind {
  SentencePiece,  ///< trained by this tool (the built-in encoder, TorchScript models)
  HuggingFace,    ///< a pretrained model's tokenizer.json ([CLS] pieces [SEP] for BERT)
};

/// A tokenizer, of either kind, with its prompts.
///
/// sentencepiece: ids 0 = padding, 1 = unknown; no BOS/EOS (the encoders mean-pool).
/// Text is NFKC-normalised and lower-cased ("nmt_nfkc_cf"). Copies share the (immutable) model;
/// encode() may be called from several threads at once.
///
/// sentencepiece (libsentencepiece.so.0 and libsentencepiece_train.so.0) is loaded at run time
/// into a link-map namespace of its own (dlmopen), because its bundled protobuf clashes with
/// LibTorch's: programs using this class must NOT link -lsentencepiece (see model/tokenizer.cpp). A
/// missing library is reported as std::runtime_error on first use. Nothing sentencepiece logs
/// reaches the terminal. Works under AddressSanitizer.
class Tokenizer {
 public:
  /// Trains on `texts` in memory and writes the model to `model_path` atomically (written to
  /// temporary_path(model_path), then renamed; missing parent directories are created). Deterministic:
  /// the same texts and options give the same model bytes. Empty texts are ignored; a text
  /// longer than 4192 bytes (sentencepiece's max_sentence_length) is trained on by its first
  /// 4192 bytes or fewer (cut between characters). Encoding has no length limit.
  /// Throws std::invalid_argument for bad options, no usable text, or too few distinct pieces
  /// in the texts for options.vocab_size (the message suggests a smaller --vocab-size), and
  /// std::runtime_error if sentencepiece fails otherwise or the model cannot be written.
  static Tokenizer train(const std::vector<std::string>& texts, const TokenizerTrainOptions& options,
                         const std::string& model_path);
  /// Loads a .model file written by train(). A missing, corrupt or incompatible file (ids 0 and 1
  /// must be padding and unknown) throws std::runtime_error naming the path.
  static Tokenizer load(const std::string& model_path);
  /// From the serialized model proto bytes (checkpoints embed them); bad bytes throw std::runtime_error.
  static Tokenizer from_serialized(const std::string& bytes);
  /// A pretrained model's Hugging Face tokenizer: ids as the model was trained with, texts
  /// lower-cased first when `lower_case` (sentence-transformers' do_lower_case), every encoding
  /// cut to at most `max_seq_length` ids (the model's positions) whatever max_len asks.
  static Tokenizer huggingface(std::shared_ptr<const hf::Tokenizer> tokenizer, bool lower_case,
                               size_t max_seq_length);
  /// The same tokenizer, putting `prompts` before the texts of encode_query and encode_passage.
  /// Brackets need a Hugging Face tokenizer that has a token for each of "[", "]", "{" and "}",
  /// and room for two more ids: std::invalid_argument otherwise.
  Tokenizer with_prompts(Prompts prompts) const;

  TokenizerKind kind() const { return hf_ ? TokenizerKind::HuggingFace : TokenizerKind::SentencePiece; }
  /// sentencepiece: the serialized model proto (the exact content of the .model file);
  /// Hugging Face: its tokenizer.json.
  std::string serialized() const;
  const Prompts& prompts() const { return prompts_; }
  /// The Hugging Face tokenizer (null for sentencepiece).
  const std::shared_ptr<const hf::Tokenizer>& huggingface_tokenizer() const { return hf_; }

  /// Token ids of `text`, truncated to at most `max_len` ids (0 = no limit). Empty text gives {};
  /// non-empty text never gives {}: text that normalises to nothing (e.g. only spaces or control
  /// characters) gives {unk_id}, so every non-empty text has at least one token to pool.
  ///
  /// Hugging Face: the ids of `tokenizers` ([CLS] pieces [SEP]), cut as its truncation does
  /// (the special tokens stay); max_len 1 is 2 (a text keeps its special tokens).
  std::vector<int64_t> encode(std::string_view text, size_t max_len = 0) const;
  /// encode() of the query prompt and `text`, or of the passage prompt and `text`. With
  /// brackets, as SGPT's README tokenizes: the ids of encode() (the tokenizer's own special
  /// tokens kept), the side's opening bracket inserted first and its closing one appended; the
  /// text is cut two ids shorter, so that the whole still fits max_len.
  std::vector<int64_t> encode_query(std::string_view text, size_t max_len = 0) const;
  std::vector<int64_t> encode_passage(std::string_view text, size_t max_len = 0) const;
  /// The (normalised, i.e. lower-cased) text of `ids`; padding ids are skipped. For debugging and
  /// tests; sentencepiece only (std::logic_error for a Hugging Face tokenizer).
  std::string decode(const std::vector<int64_t>& ids) const;
  /// Number of pieces, padding and unknown included; every id is in [0, vocab_size()).
  int64_t vocab_size() const;

  static constexpr int64_t pad_id = 0;
  static constexpr int64_t unk_id = 1;

 private:
  class Model;  // a loaded sentencepiece model (model/tokenizer.cpp)
  explicit Tokenizer(std::shared_ptr<const Model> model);

  std::shared_ptr<const Model> model_;            // sentencepiece, or
  std::shared_ptr<const hf::Tokenizer> hf_;       // Hugging Face, with
  bool lower_case_ = false;                       //   sentence-transformers' do_lower_case
  size_t max_seq_length_ = 0;                     //   and the model's positions
  Prompts prompts_;
  // With prompts_.brackets: the ids of "[", "]", "{" and "}".
  int64_t query_open_ = 0, query_close_ = 0, passage_open_ = 0, passage_close_ = 0;

  // encode() of `prompt` and `text`, between `open` and `close` when brackets are on.
  std::vector<int64_t> encode_side(std::string_view text, size_t max_len, const std::string& prompt, int64_t open,
                                   int64_t close) const;
};

}  // namespace gradcache::retriever
