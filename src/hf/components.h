// The parts of a tokenizer as `tokenizers` composes them (normaliser, pre-tokeniser, model,
// post-processor), as interfaces. Each implementation is one source file with a factory that
// reads its JSON object; component_registry.cpp maps the JSON "type" to the factories, so a new
// component is one file, its factory's declaration below and one registry line.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gradcache::hf::detail {

using Json = nlohmann::json;
/// What to_json() writes: keys in the order `tokenizers` writes them (and the vocabulary by id).
using OrderedJson = nlohmann::ordered_json;

/// Where a piece of configuration comes from, for messages: the file and the JSON path in it.
struct Source {
  std::string file;
  std::string path;  // "model.vocab", "normalizer"; empty for the whole file
  Source at(const std::string& key) const { return {file, path.empty() ? key : path + "." + key}; }
};

/// Throws TokenizerError "<file>: <path>: <what>".
[[noreturn]] void fail(const Source& source, const std::string& what);

/// Rewrites the text in place (before pre-tokenisation).
class Normalizer {
 public:
  virtual ~Normalizer() = default;
  /// Rewrites `text` in place and says where it aligns with the original: `at_origin` is how
  /// many leading characters of `text` `tokenizers` aligns with the start of the original text
  /// (1 for a text not yet normalised, 0 if empty), and the result is that count for the
  /// rewritten text, as its NormalizedString's alignments give it (hf/normalized_origin.h).
  /// Metaspace's prepend_scheme "first" needs it: a normaliser that drops or merges the first
  /// characters (Strip, a Replace of "ab"...) moves the text's start off the original's, and
  /// `tokenizers` then prepends nothing.
  virtual size_t normalize(std::u32string& text, size_t at_origin) const = 0;
  /// Rewrites `text` in place when where it aligns does not matter (an added token's content).
  void normalize(std::u32string& text) const { normalize(text, text.empty() ? 0 : 1); }
  virtual OrderedJson to_json() const = 0;
};

/// The words of a pre-tokenised text in one buffer (a word per model call): word i is
/// chars[begin(i), ends[i]). Pre-tokenisers that rewrite their words (ByteLevel's byte alphabet,
/// Metaspace's "▁") write the rewritten text here, so the model sees what `tokenizers`' does.
struct Words {
  std::u32string chars;
  std::vector<size_t> ends;
  /// Word 0 begins where the original text begins (Metaspace's prepend_scheme "first" asks).
  bool first_at_origin = false;

  size_t size() const { return ends.size(); }
  size_t begin(size_t i) const { return i == 0 ? 0 : ends[i - 1]; }
  std::u32string_view operator[](size_t i) const {
    return std::u32string_view(chars).substr(begin(i), ends[i] - begin(i));
  }
  /// Appends a word; an empty one is dropped, as `tokenizers` drops empty splits. `at_origin`:
  /// the word begins where the original text begins (only the first word can).
  void push(std::u32string_view word, bool at_origin = false) {
    if (word.empty()) return;
    if (ends.empty()) first_at_origin = at_origin;
    chars.append(word);
    ends.push_back(chars.size());
  }
  void clear() {
    chars.clear();
    ends.clear();
    first_at_origin = false;
  }
};

/// Cuts normalised text into words (what the model sees one at a time). A Sequence runs each
/// pre-tokeniser over the words of the one before it.
class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  /// Appends the words `text` splits into to `out`. `at_origin`: `text` begins where the
  /// original text begins; a word written from position 0 of `text` passes it on.
  virtual void split(std::u32string_view text, bool at_origin, Words& out) const = 0;
  virtual OrderedJson to_json() const = 0;
};

/// Turns one word into ids.
class Model {
 public:
  virtual ~Model() = default;
  /// Appends the ids of `word` (never empty) to `ids`.
  virtual void tokenize(std::u32string_view word, std::vector<int64_t>& ids) const = 0;
  virtual std::optional<int64_t> token_to_id(std::string_view token) const = 0;
  /// The token of an id below size(); nullptr for an id it does not have.
  virtual const std::string* id_to_token(int64_t id) const = 0;
  /// The number of tokens, which is one more than the largest id (the ids are dense).
  virtual int64_t size() const = 0;
  virtual int64_t unk_id() const = 0;
  virtual OrderedJson to_json() const = 0;
};

/// Adds the special tokens around the ids of one sequence.
class PostProcessor {
 public:
  virtual ~PostProcessor() = default;
  virtual std::vector<int64_t> process(const std::vector<int64_t>& ids) const = 0;
  /// How many ids process() adds to a single sequence.
  virtual size_t added_tokens() const = 0;
  /// The ids of the special tokens before and after the sequence (-1 where there is none).
  virtual int64_t before_id() const = 0;
  virtual int64_t after_id() const = 0;
  /// The largest id it adds (-1 for none): the tokenizer checks it against the vocabulary.
  virtual int64_t max_id() const = 0;
  virtual OrderedJson to_json() const = 0;
};

// ---- the factories (one per supported "type"), in their own files -------------------------
// Normalizers
std::unique_ptr<Normalizer> bert_normalizer_from_json(const Json& config, const Source& source);
std::unique_ptr<Normalizer> unicode_normalizer_from_json(const Json& config, const Source& source);  // NFC NFD NFKC NFKD
std::unique_ptr<Normalizer> lowercase_from_json(const Json& config, const Source& source);
std::unique_ptr<Normalizer> strip_from_json(const Json& config, const Source& source);
std::unique_ptr<Normalizer> strip_accents_from_json(const Json& config, const Source& source);
std::unique_ptr<Normalizer> replace_from_json(const Json& config, const Source& source);
std::unique_ptr<Normalizer> prepend_from_json(const Json& config, const Source& source);
std::unique_ptr<Normalizer> precompiled_from_json(const Json& config, const Source& source);
std::unique_ptr<Normalizer> normalizer_sequence_from_json(const Json& config, const Source& source);
// Pre-tokenizers
std::unique_ptr<PreTokenizer> bert_pre_tokenizer_from_json(const Json& config, const Source& source);
std::unique_ptr<PreTokenizer> byte_level_pre_tokenizer_from_json(const Json& config, const Source& source);
std::unique_ptr<PreTokenizer> split_from_json(const Json& config, const Source& source);
std::unique_ptr<PreTokenizer> metaspace_from_json(const Json& config, const Source& source);
std::unique_ptr<PreTokenizer> whitespace_from_json(const Json& config, const Source& source);
std::unique_ptr<PreTokenizer> whitespace_split_from_json(const Json& config, const Source& source);
std::unique_ptr<PreTokenizer> punctuation_from_json(const Json& config, const Source& source);
std::unique_ptr<PreTokenizer> digits_from_json(const Json& config, const Source& source);
std::unique_ptr<PreTokenizer> pre_tokenizer_sequence_from_json(const Json& config, const Source& source);
// Models
std::unique_ptr<Model> wordpiece_from_json(const Json& config, const Source& source);
std::unique_ptr<Model> bpe_from_json(const Json& config, const Source& source);
std::unique_ptr<Model> unigram_from_json(const Json& config, const Source& source);
// Post-processors
std::unique_ptr<PostProcessor> template_processing_from_json(const Json& config, const Source& source);
std::unique_ptr<PostProcessor> bert_processing_from_json(const Json& config, const Source& source);
std::unique_ptr<PostProcessor> roberta_processing_from_json(const Json& config, const Source& source);
std::unique_ptr<PostProcessor> byte_level_processing_from_json(const Json& config, const Source& source);
std::unique_ptr<PostProcessor> post_processor_sequence_from_json(const Json& config, const Source& source);

// ---- the registry (component_registry.cpp): by the JSON object's "type" ---------------------
std::unique_ptr<Normalizer> make_normalizer(const Json& config, const Source& source);
std::unique_ptr<PreTokenizer> make_pre_tokenizer(const Json& config, const Source& source);
std::unique_ptr<Model> make_model(const Json& config, const Source& source);
std::unique_ptr<PostProcessor> make_post_processor(const Json& config, const Source& source);
/// The members of a Sequence: the array field `key` of `config` ("normalizers", "pretokenizers",
/// "processors"), each built by the registry.
std::vector<std::unique_ptr<Normalizer>> make_normalizers(const Json& config, const char* key, const Source& source);
std::vector<std::unique_ptr<PreTokenizer>> make_pre_tokenizers(const Json& config, const char* key,
                                                               const Source& source);
std::vector<std::unique_ptr<PostProcessor>> make_post_processors(const Json& config, const char* key,
                                                                 const Source& source);

}  // namespace gradcache::hf::detail
