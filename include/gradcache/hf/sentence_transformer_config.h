// The configuration files of a sentence-transformers directory besides the model's own
// config.json: modules.json, sentence_bert_config.json, config_sentence_transformers.json and
// <n>_Normalize/config.json (1_Pooling/config.json is pooling.h's, <n>_Dense/config.json dense.h's). Each parser validates what it
// reads and throws ModelFileError naming the file.
#pragma once

#include <gradcache/hf/model_file_error.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace gradcache {
namespace hf {

/// The modules this library runs: a Transformer, then Pooling, then any Dense (dense.h), then
/// optionally Normalize.
enum class ModuleKind { Transformer, Pooling, Dense, Normalize };

struct ModuleSpec {
  ModuleKind kind;
  std::string type;  ///< as modules.json names it, e.g. "sentence_transformers.models.Pooling"
  std::string path;  ///< relative to the model directory ("" for the directory itself)
};

/// modules.json: a list of {"idx", "name", "path", "type"}. Types are recognised by their class
/// name under sentence_transformers (the older "sentence_transformers.models.X" and the current
/// module paths alike); any other module, another order than Transformer, Pooling, Dense...
/// (at most kMaxDenseModules), [Normalize], or a path leaving the directory is refused with a
/// message listing what is supported.
constexpr size_t kMaxDenseModules = 8;
std::vector<ModuleSpec> parse_modules_json(const std::string& text, const std::string& file);

/// The Transformer module's sentence_bert_config.json.
struct TransformerSettings {
  std::optional<int64_t> max_seq_length;  ///< "max_seq_length", or a model_max_length in "processor_kwargs" / "tokenizer_args"
  bool do_lower_case = false;             ///< lower-case texts before tokenizing
};
TransformerSettings parse_sentence_bert_config(const std::string& text, const std::string& file);

/// config_sentence_transformers.json: the model's prompts and similarity.
struct ModelSettings {
  std::map<std::string, std::string> prompts;  ///< name -> text prepended to the input, e.g. "query" -> "query: "
  std::string default_prompt_name;             ///< "" for none
  std::string similarity_fn_name = "cosine";   ///< cosine, dot, euclidean or manhattan
};
/// Refuses a model_type other than SentenceTransformer (a CrossEncoder, a SparseEncoder, ...)
/// and a default_prompt_name that names no prompt.
ModelSettings parse_model_settings(const std::string& text, const std::string& file);

/// 2_Normalize/config.json: only the normalisation of the sentence embedding is supported.
void check_normalize_config(const std::string& text, const std::string& file);

/// tokenizer_config.json's model_max_length, if it has a usable one (transformers writes a huge
/// placeholder when the tokenizer has no limit).
std::optional<int64_t> tokenizer_max_length(const std::string& text, const std::string& file);

/// The files written by SentenceTransformer::save, as sentence-transformers reads them.
/// modules.json of Transformer, Pooling ("1_Pooling"), `dense` Dense modules ("2_Dense",
/// "3_Dense", ...) and, if `normalize`, Normalize ("<n>_Normalize").
std::string modules_json(size_t dense, bool normalize);
/// The folder of module `index` of a kind, as sentence-transformers names it: "2_Dense".
std::string module_folder(size_t index, ModuleKind kind);
std::string sentence_bert_config_json(int64_t max_seq_length, bool do_lower_case);
std::string model_settings_json(const ModelSettings& settings);

}  // namespace hf
}  // namespace gradcache
