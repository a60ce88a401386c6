// The supported components by their JSON "type". An unsupported one is refused with the list of
// those that are: a tokenizer that quietly skipped a step would give other ids than `tokenizers`.
#include "hf/components.h"
#include "hf/json_fields.h"

namespace gradcache::hf::detail {
namespace {

template <class Component>
using Factory = std::unique_ptr<Component> (*)(const Json&, const Source&);

template <class Component>
struct Entry {
  const char* type;
  Factory<Component> make;
};

const Entry<Normalizer> kNormalizers[] = {
    {"BertNormalizer", bert_normalizer_from_json},
    {"NFC", unicode_normalizer_from_json},
    {"NFD", unicode_normalizer_from_json},
    {"NFKC", unicode_normalizer_from_json},
    {"NFKD", unicode_normalizer_from_json},
    {"Lowercase", lowercase_from_json},
    {"Strip", strip_from_json},
    {"StripAccents", strip_accents_from_json},
    {"Replace", replace_from_json},
    {"Prepend", prepend_from_json},
    {"Precompiled", precompiled_from_json},
    {"Sequence", normalizer_sequence_from_json},
};
const Entry<PreTokenizer> kPreTokenizers[] = {
    {"BertPreTokenizer", bert_pre_tokenizer_from_json},
    {"ByteLevel", byte_level_pre_tokenizer_from_json},
    {"Split", split_from_json},
    {"Metaspace", metaspace_from_json},
    {"Whitespace", whitespace_from_json},
    {"WhitespaceSplit", whitespace_split_from_json},
    {"Punctuation", punctuation_from_json},
    {"Digits", digits_from_json},
    {"Sequence", pre_tokenizer_sequence_from_json},
};
const Entry<Model> kModels[] = {
    {"WordPiece", wordpiece_from_json},
    {"BPE", bpe_from_json},
    {"Unigram", unigram_from_json},
};
const Entry<PostProcessor> kPostProcessors[] = {
    {"TemplateProcessing", template_processing_from_json},
    {"BertProcessing", bert_processing_from_json},
    {"RobertaProcessing", roberta_processing_from_json},
    {"ByteLevel", byte_level_processing_from_json},
    {"Sequence", post_processor_sequence_from_json},
};

/// Sequences nest components; a real tokenizer nests two or three deep. A file nesting thousands
/// of Sequences is built to exhaust the stack, and is refused (its JSON path tells the depth).
constexpr size_t kMaxPathLength = 1024;

template <class Component, size_t N>
std::unique_ptr<Component> make(const Entry<Component> (&entries)[N], const char* what, const Json& config,
                                const Source& source) {
  if (source.path.size() > kMaxPathLength)
    fail(Source{source.file, source.path.substr(0, 80) + "..."},
         std::string("the ") + what + "s are nested too deeply (a path of " + std::to_string(source.path.size()) +
             " characters); real tokenizers nest Sequences a few levels deep");
  const std::string type = read_type(config, source);
  for (const Entry<Component>& entry : entries)
    if (type == entry.type) return entry.make(config, source);
  std::string supported;
  for (const Entry<Component>& entry : entries) supported += std::string(supported.empty() ? "" : ", ") + entry.type;
  fail(source.at("type"), std::string("the ") + what + " " + quote_for_message(type) +
                              " is not supported (supported: " + supported + ")");
}

/// A Sequence of more members than this is no tokenizer (real ones have up to five or so), only
/// a file made to be slow on every text.
constexpr size_t kMaxSequenceLength = 64;

template <class Component>
std::vector<std::unique_ptr<Component>> make_list(const Json& config, const char* key, const char* what,
                                                  const Source& source,
                                                  std::unique_ptr<Component> (*make_one)(const Json&, const Source&)) {
  expect_object(config, source);
  const Json& list = require_field(config, key, source);
  const Source at = source.at(key);
  if (!list.is_array()) fail(at, std::string("expected an array of ") + what + "s, found " + describe_json(list));
  if (list.size() > kMaxSequenceLength)
    fail(at, std::to_string(list.size()) + " " + what + "s, more than the " + std::to_string(kMaxSequenceLength) +
                 " this reader accepts in one Sequence");
  std::vector<std::unique_ptr<Component>> members;
  for (size_t i = 0; i < list.size(); ++i) members.push_back(make_one(list[i], at.at(std::to_string(i))));
  return members;
}

}  // namespace

std::vector<std::unique_ptr<Normalizer>> make_normalizers(const Json& config, const char* key, const Source& source) {
  return make_list(config, key, "normalizer", source, make_normalizer);
}
std::vector<std::unique_ptr<PreTokenizer>> make_pre_tokenizers(const Json& config, const char* key,
                                                               const Source& source) {
  return make_list(config, key, "pre-tokenizer", source, make_pre_tokenizer);
}
std::vector<std::unique_ptr<PostProcessor>> make_post_processors(const Json& config, const char* key,
                                                                 const Source& source) {
  return make_list(config, key, "post-processor", source, make_post_processor);
}

std::unique_ptr<Normalizer> make_normalizer(const Json& config, const Source& source) {
  return make(kNormalizers, "normalizer", config, source);
}
std::unique_ptr<PreTokenizer> make_pre_tokenizer(const Json& config, const Source& source) {
  return make(kPreTokenizers, "pre-tokenizer", config, source);
}
std::unique_ptr<Model> make_model(const Json& config, const Source& source) {
  return make(kModels, "model", config, source);
}
std::unique_ptr<PostProcessor> make_post_processor(const Json& config, const Source& source) {
  return make(kPostProcessors, "post-processor", config, source);
}

}  // namespace gradcache::hf::detail
