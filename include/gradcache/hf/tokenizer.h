// A Hugging Face tokenizer in C++: the token ids of `tokenizers` (the Rust library behind
// transformers' fast tokenizers and sentence-transformers) from the files a model directory
// holds. No LibTorch here: ids are plain integers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace gradcache::hf {

/// A tokenizer file that cannot be used. The message names the file, says what is wrong in it
/// and what to do (for an unsupported component: which ones are supported).
class TokenizerError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

namespace detail {
struct TokenizerState;
}

/// Which end of a sequence padding goes to, or truncation cuts from.
enum class Side { kLeft, kRight };

/// A tokenizer as `tokenizers` runs it from tokenizer.json: added (special) tokens matched in the
/// raw text, then normaliser, pre-tokeniser, model and post-processor. Supported, each exact
/// against `tokenizers` (docs/huggingface.md has the table):
/// - models: WordPiece, BPE (byte-level or not; byte_fallback, ignore_merges, fuse_unk, the
///   subword prefix and suffix), Unigram (SentencePiece's Viterbi; byte_fallback);
/// - normalizers: BertNormalizer, NFC, NFD, NFKC, NFKD, Lowercase, Strip, StripAccents, Replace,
///   Prepend, Precompiled (SentencePiece's charsmap), Sequence;
/// - pre-tokenizers: BertPreTokenizer, ByteLevel, Split, Metaspace, Whitespace, WhitespaceSplit,
///   Punctuation, Digits, Sequence;
/// - post-processors: TemplateProcessing, BertProcessing, RobertaProcessing, ByteLevel, Sequence.
/// Anything else is refused with a TokenizerError naming the component and listing what is
/// supported. Each component is one source file behind an interface (src/hf/components.h).
///
/// Text is UTF-8. Ill-formed bytes (which `tokenizers` never sees: Python hands it str) become
/// U+FFFD, one per maximal ill-formed subsequence, as Python's bytes.decode(errors="replace")
/// makes them.
///
/// Copies share the immutable state; encode() and tokenize() may run on many threads at once.
class Tokenizer {
 public:
  /// From a model directory: tokenizer.json when there is one, else vocab.txt with
  /// tokenizer_config.json (optional; BertTokenizer's defaults without it) and
  /// special_tokens_map.json (optional), read with transformers' BertTokenizer semantics.
  static Tokenizer from_directory(const std::string& dir);
  /// From the text of a tokenizer.json; `name` (its path, usually) prefixes every message.
  static Tokenizer from_json(std::string_view tokenizer_json, const std::string& name);
  /// From vocab.txt (one token a line, the line number is the id) and tokenizer_config.json
  /// (do_lower_case, strip_accents, tokenize_chinese_chars, the special tokens; "" for none) and
  /// special_tokens_map.json ("" for none: its tokens fill in those the config does not name).
  static Tokenizer from_vocab(std::string_view vocab_txt, std::string_view tokenizer_config_json,
                              const std::string& name, std::string_view special_tokens_map_json = {});

  /// The ids `tokenizers` gives for one text with add_special_tokens=True ([CLS] pieces [SEP] for
  /// BERT), or False (the pieces alone). With max_len > 0 the result has at most max_len ids, cut
  /// as `tokenizers` does with truncation(max_length=max_len, direction=truncation_side()): the
  /// special tokens are kept and the pieces are cut at the end (or, for Side::kLeft, at the
  /// start). max_len between 1 and the special tokens' count - 1 is std::invalid_argument
  /// (`tokenizers` would wrap around and not truncate at all). The tokenizer.json's own truncation
  /// and padding sections are not applied here: see truncation_max_length() and pad_id().
  std::vector<int64_t> encode(std::string_view text, size_t max_len = 0, bool add_special_tokens = true) const;
  /// The pieces of a text as strings (the vocabulary's, "##" prefixes included), without the
  /// special tokens of the post-processor: for tests and debugging.
  std::vector<std::string> tokenize(std::string_view text) const;

  /// A tokenizer.json that `tokenizers` loads as the same tokenizer and from_json() reads back to
  /// an identical one (what a sentence-transformers export writes).
  std::string to_json() const;

  /// One more than the largest id encode() can return: the rows an embedding table needs.
  int64_t vocab_size() const;
  /// The id of a token of the vocabulary or of the added tokens, if it has one.
  std::optional<int64_t> token_to_id(std::string_view token) const;
  /// The token of an id (an added token's content, or the vocabulary's piece), if it has one.
  std::optional<std::string> id_to_token(int64_t id) const;
  /// The padding id: the tokenizer.json's padding section's, else the id of the pad token
  /// (tokenizer_config.json's pad_token, or "[PAD]"); -1 when there is none.
  int64_t pad_id() const;
  /// The special token before the text in the single-sequence template ([CLS]); -1 for none.
  int64_t cls_id() const;
  /// The special token after the text in the single-sequence template ([SEP]); -1 for none.
  int64_t sep_id() const;
  /// The id the model gives a word it cannot spell ([UNK]); -1 for a model without one (a
  /// byte-level BPE spells every text).
  int64_t unk_id() const;
  /// The number of special tokens encode() adds around the pieces (2 for [CLS] A [SEP]).
  size_t num_special_tokens() const;
  /// The max_length of the tokenizer.json's truncation section, if it has one.
  std::optional<size_t> truncation_max_length() const;
  /// Where a batch pads this tokenizer's sequences: tokenizer_config.json's padding_side (left for
  /// most decoders), else the tokenizer.json padding section's direction, else right.
  Side padding_side() const;
  /// Which end encode() cuts: tokenizer_config.json's truncation_side, else the tokenizer.json
  /// truncation section's direction, else right.
  Side truncation_side() const;
  /// tokenizer_config.json's model_max_length, when it is a real length (transformers writes
  /// 1e30 for "none").
  std::optional<size_t> model_max_length() const;
  /// What the tokenizer was read from (the `name` of from_json / from_vocab).
  const std::string& name() const;

 private:
  explicit Tokenizer(std::shared_ptr<const detail::TokenizerState> state);
  std::shared_ptr<const detail::TokenizerState> state_;
};

/// `text` with every character lower-cased as Rust's char::to_lowercase does (full Unicode
/// mappings, which may lengthen a text): what sentence-transformers' do_lower_case applies before
/// tokenizing (a Lowercase normaliser in front of the tokenizer's). Ill-formed UTF-8 becomes U+FFFD.
std::string lower_case(std::string_view text);

}  // namespace gradcache::hf
