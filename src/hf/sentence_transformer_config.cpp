#include <gradcache/hf/sentence_transformer_config.h>

#include "hf/model_json.h"

#include <array>
#include <cmath>
#include <filesystem>

namespace gradcache {
namespace hf {
namespace {

using detail::Json;

constexpr int64_t kMaxSequence = 1 << 20;
constexpr std::array<const char*, 4> kSimilarities = {"cosine", "dot", "euclidean", "manhattan"};

const char* class_name(ModuleKind kind) {
  switch (kind) {
    case ModuleKind::Transformer: return "Transformer";
    case ModuleKind::Pooling: return "Pooling";
    case ModuleKind::Dense: return "Dense";
    case ModuleKind::Normalize: return "Normalize";
  }
  return "?";
}

// "sentence_transformers.<anything>.Pooling" -> Pooling; anything else is not run here.
std::optional<ModuleKind> module_kind(const std::string& type) {
  const std::string package = "sentence_transformers.";
  if (type.rfind(package, 0) != 0) return std::nullopt;
  const std::string name = type.substr(type.rfind('.') + 1);
  for (ModuleKind kind : {ModuleKind::Transformer, ModuleKind::Pooling, ModuleKind::Dense, ModuleKind::Normalize}) {
    if (name == class_name(kind)) return kind;
  }
  return std::nullopt;
}

// As sentence-transformers' _validate_relative_path: relative, never leaving the directory.
void check_relative(const std::string& path, const std::string& file) {
  const std::filesystem::path p(path);
  bool climbs = false;
  for (const auto& part : p) climbs = climbs || part == "..";
  if (p.is_absolute() || climbs)
    throw ModelFileError(file, "module path " + detail::quoted(path) + " leaves the model directory");
}

}  // namespace

std::vector<ModuleSpec> parse_modules_json(const std::string& text, const std::string& file) {
  const Json modules = detail::parse_json(text, file);
  if (!modules.is_array()) throw ModelFileError(file, "must be a JSON list of modules, not " + detail::json_kind(modules));
  std::vector<ModuleSpec> specs;
  for (const Json& entry : modules) {
    detail::require_object(entry, file, "each module");
    const std::string type = detail::string_field(entry, "type", "", file);
    const auto kind = module_kind(type);
    if (!kind)
      throw ModelFileError(file, "module " + detail::quoted(type) +
                                     " is not supported (supported: sentence_transformers' Transformer, Pooling, Dense and Normalize)");
    const std::string path = detail::string_field(entry, "path", "", file);
    check_relative(path, file);
    specs.push_back({*kind, type, path});
  }
  // Transformer, Pooling, Dense..., [Normalize]
  size_t next = 0;
  auto take = [&](ModuleKind kind) { return next < specs.size() && specs[next].kind == kind ? (++next, true) : false; };
  bool shape_ok = take(ModuleKind::Transformer) && take(ModuleKind::Pooling);
  size_t dense = 0;
  while (shape_ok && take(ModuleKind::Dense)) ++dense;
  take(ModuleKind::Normalize);
  shape_ok = shape_ok && next == specs.size() && dense <= kMaxDenseModules;
  if (!shape_ok) {
    std::string order;
    for (const auto& spec : specs) order += (order.empty() ? "" : ", ") + std::string(class_name(spec.kind));
    throw ModelFileError(file, "modules are [" + order + "]; supported: Transformer, Pooling, up to " +
                                   std::to_string(kMaxDenseModules) + " Dense and optionally Normalize, in that order");
  }
  return specs;
}

TransformerSettings parse_sentence_bert_config(const std::string& text, const std::string& file) {
  const Json config = detail::parse_json(text, file);
  detail::require_object(config, file);
  TransformerSettings settings;
  settings.do_lower_case = detail::bool_field(config, "do_lower_case", false, file);
  for (const char* group : {"tokenizer_args", "processor_kwargs"}) {
    auto it = config.find(group);
    if (it == config.end() || it->is_null()) continue;
    detail::require_object(*it, file, std::string("\"") + group + "\"");
    const int64_t length = detail::int_field(*it, "model_max_length", 0, 1, kMaxSequence, file);
    if (length > 0) settings.max_seq_length = length;
  }
  const int64_t length = detail::int_field(config, "max_seq_length", 0, 1, kMaxSequence, file);
  if (length > 0) settings.max_seq_length = length;
  return settings;
}

ModelSettings parse_model_settings(const std::string& text, const std::string& file) {
  const Json config = detail::parse_json(text, file);
  detail::require_object(config, file);
  const std::string type = detail::string_field(config, "model_type", "SentenceTransformer", file);
  if (type != "SentenceTransformer")
    throw ModelFileError(file, "model_type " + detail::quoted(type) + " is not a SentenceTransformer (not supported)");
  ModelSettings settings;
  auto prompts = config.find("prompts");
  if (prompts != config.end() && !prompts->is_null()) {
    detail::require_object(*prompts, file, "\"prompts\"");
    for (const auto& item : prompts->items()) {
      if (!item.value().is_string())
        throw ModelFileError(file, "prompt " + detail::quoted(item.key()) + " must be a string, not " + detail::json_kind(item.value()));
      settings.prompts[item.key()] = item.value().get<std::string>();
    }
  }
  settings.default_prompt_name = detail::string_field(config, "default_prompt_name", "", file);
  if (!settings.default_prompt_name.empty() && settings.prompts.count(settings.default_prompt_name) == 0)
    throw ModelFileError(file, "default_prompt_name " + detail::quoted(settings.default_prompt_name) + " names no prompt");
  settings.similarity_fn_name = detail::string_field(config, "similarity_fn_name", "cosine", file);
  bool known = false;
  for (const char* name : kSimilarities) known = known || settings.similarity_fn_name == name;
  if (!known)
    throw ModelFileError(file, "similarity_fn_name " + detail::quoted(settings.similarity_fn_name) +
                                   " is not one of cosine, dot, euclidean, manhattan");
  return settings;
}

void check_normalize_config(const std::string& text, const std::string& file) {
  const Json config = detail::parse_json(text, file);
  detail::require_object(config, file);
  for (const char* key : {"module_input_name", "module_output_name"}) {
    const std::string name = detail::string_field(config, key, "sentence_embedding", file);
    if (name != "sentence_embedding")
      throw ModelFileError(file, std::string("\"") + key + "\" is " + detail::quoted(name) +
                                     "; only normalising the sentence embedding is supported");
  }
}

std::optional<int64_t> tokenizer_max_length(const std::string& text, const std::string& file) {
  const Json config = detail::parse_json(text, file);
  detail::require_object(config, file);
  auto it = config.find("model_max_length");
  if (it == config.end() || !it->is_number()) return std::nullopt;
  const double length = it->get<double>();
  if (!(length >= 1) || length > static_cast<double>(kMaxSequence)) return std::nullopt;  // the "no limit" placeholder
  return static_cast<int64_t>(std::floor(length));
}

std::string module_folder(size_t index, ModuleKind kind) { return std::to_string(index) + "_" + class_name(kind); }

std::string modules_json(size_t dense, bool normalize) {
  // The class paths every sentence-transformers version imports (the current one maps them).
  Json modules = Json::array();
  auto add = [&](ModuleKind kind) {
    const size_t index = modules.size();
    modules.push_back({{"idx", index},
                       {"name", std::to_string(index)},
                       {"path", kind == ModuleKind::Transformer ? "" : module_folder(index, kind)},
                       {"type", std::string("sentence_transformers.models.") + class_name(kind)}});
  };
  add(ModuleKind::Transformer);
  add(ModuleKind::Pooling);
  for (size_t i = 0; i < dense; ++i) add(ModuleKind::Dense);
  if (normalize) add(ModuleKind::Normalize);
  return modules.dump(2) + "\n";
}

std::string sentence_bert_config_json(int64_t max_seq_length, bool do_lower_case) {
  return Json({{"max_seq_length", max_seq_length}, {"do_lower_case", do_lower_case}}).dump(2) + "\n";
}

std::string model_settings_json(const ModelSettings& settings) {
  Json config = {{"model_type", "SentenceTransformer"},
                 {"prompts", settings.prompts},
                 {"default_prompt_name", settings.default_prompt_name.empty() ? Json() : Json(settings.default_prompt_name)},
                 {"similarity_fn_name", settings.similarity_fn_name}};
  return config.dump(2) + "\n";
}

}  // namespace hf
}  // namespace gradcache
