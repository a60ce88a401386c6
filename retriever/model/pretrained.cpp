#include "retriever/model/pretrained.h"

#include "retriever/files/comma_items.h"

#include <gradcache/hf/pooling.h>
#include <gradcache/hf/sentence_transformer_config.h>
#include <gradcache/hf/transformer.h>

#include <stdexcept>

namespace gradcache {
namespace retriever {
namespace {

// What the program cannot train with, found before any data is read.
void check_trainable(const PretrainedModel& model) {
  if (model.options.tokenizer() == nullptr) {
    throw std::invalid_argument("--model-dir " + model.source +
                                ": the model has no tokenizer (tokenizer.json or vocab.txt); copy its tokenizer "
                                "files into the directory");
  }
  if (!model.options.pooling().include_prompt()) {
    throw std::invalid_argument("--model-dir " + model.source +
                                ": its pooling leaves the prompt out (1_Pooling/config.json include_prompt false), "
                                "which the gradcache program does not support (the library does: "
                                "hf::SentenceTransformer with \"prompt_length\"); use a model whose pooling includes "
                                "the prompt");
  }
}

// The model's prompt for a side: the first of `names` it defines, as sentence-transformers'
// encode_query / encode_document look them up.
std::string model_prompt(const PretrainedModel* model, std::initializer_list<const char*> names) {
  if (model == nullptr) return "";
  const auto& prompts = model->options.settings().prompts;
  for (const char* name : names) {
    const auto it = prompts.find(name);
    if (it != prompts.end()) return it->second;
  }
  return "";
}

// Each Dense module's config.json text.
nlohmann::json dense_json(const std::vector<hf::DenseOptions>& dense) {
  auto configs = nlohmann::json::array();
  for (const auto& options : dense) configs.push_back(hf::dense_config_json(options));
  return configs;
}

}  // namespace

std::string describe(const PretrainedModel& model) {
  const auto config = nlohmann::json::parse(model.config_json, nullptr, /*allow_exceptions=*/false);
  std::string out = config.is_object() && config.value("model_type", nlohmann::json()).is_string()
                        ? config["model_type"].get<std::string>()
                        : std::string("an unknown architecture");
  const auto& o = model.options;
  if (o.tokenizer() != nullptr) {
    const auto tokenizer = nlohmann::json::parse(o.tokenizer()->to_json(), nullptr, false);
    const auto kind = tokenizer.is_object() ? tokenizer.value("model", nlohmann::json::object()).value("type", "") : "";
    out += ", a " + (kind.empty() ? std::string("WordPiece") : kind) + " tokenizer padding on the " +
           (o.tokenizer()->padding_side() == hf::Side::kLeft ? "left" : "right");
  }
  std::string modes;
  for (const auto mode : o.pooling().modes()) {
    modes += modes.empty() ? "" : "+";  // appended, not "+" + name: that sends GCC 12's -Wstringop-overflow astray
    modes += hf::pooling_mode_name(mode);
  }
  out += ", " + modes + " pooling";
  if (!o.dense().empty()) out += ", " + std::to_string(o.dense().size()) + " Dense";
  const int64_t dimensions = o.dense().empty() ? hf::pooled_dimension(o.pooling()) : o.dense().back().out_features();
  out += std::string(o.normalize() ? ", normalised" : "") + ", " + std::to_string(dimensions) + " dimensions, up to " + std::to_string(o.max_seq_length()) +
         " tokens";
  if (model.lora) {
    std::string targets;
    for (const auto& target : model.lora->targets()) {
      targets += targets.empty() ? "" : ",";
      targets += target;
    }
    out += "; LoRA adapters of rank " + std::to_string(model.lora->rank()) + " on " + targets;
  }
  return out;
}

LoadedPretrained load_pretrained(const std::string& dir) {
  LoadedPretrained loaded;
  loaded.module = hf::load_sentence_transformer(dir);
  loaded.description.source = dir;
  loaded.description.config_json = loaded.module->transformer().config_json();
  loaded.description.options = loaded.module->options();
  check_trainable(loaded.description);
  return loaded;
}

void add_adapters(LoadedPretrained& loaded, const LoraSettings& s) {
  if (!s.enabled()) return;
  hf::TransformerBackbone& transformer = loaded.module->transformer();
  if (!s.adapter.empty()) {
    loaded.description.lora = hf::load_lora_adapter(transformer, s.adapter);
    return;
  }
  const std::vector<std::string> targets = comma_items(s.targets);
  for (const auto& name : targets)
    if (name.empty()) throw std::invalid_argument("--lora-targets " + s.targets + ": an empty module name");
  try {
    loaded.description.lora = hf::add_lora(
        transformer, hf::LoraOptions(s.rank).alpha(s.alpha > 0 ? s.alpha : static_cast<double>(s.rank)).dropout(s.dropout).targets(targets));
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument("--model-dir " + loaded.description.source + " with --lora-rank " + std::to_string(s.rank) +
                                (s.targets.empty() ? "" : " --lora-targets " + s.targets) + ": " + e.what());
  }
}

hf::SentenceTransformer build_pretrained(const PretrainedModel& description) {
  auto transformer = hf::build_transformer(description.config_json, description.source + "/config.json");
  if (description.lora) hf::add_lora(*transformer, *description.lora);
  return hf::SentenceTransformer(transformer, description.options);
}

Tokenizer pretrained_tokenizer(const PretrainedModel& description) {
  const auto& options = description.options;
  return Tokenizer::huggingface(options.tokenizer(), options.do_lower_case(),
                                static_cast<size_t>(options.max_seq_length()));
}

Prompts resolve_prompts(const PromptSettings& settings, const PretrainedModel* model) {
  Prompts prompts;
  if (settings.from_model) {
    prompts.query = model_prompt(model, {"query"});
    prompts.passage = model_prompt(model, {"document", "passage", "corpus"});
  }
  if (!settings.query.empty()) prompts.query = settings.query;
  if (!settings.passage.empty()) prompts.passage = settings.passage;
  prompts.brackets = settings.brackets;
  return prompts;
}

nlohmann::json to_json(const PretrainedModel& d) {
  const auto& o = d.options;
  return {{"source", d.source},
          {"config", d.config_json},
          {"pooling", hf::pooling_config_json(o.pooling())},
          {"dense", dense_json(o.dense())},
          {"normalize", o.normalize()},
          {"max_seq_length", o.max_seq_length()},
          {"do_lower_case", o.do_lower_case()},
          {"settings", hf::model_settings_json(o.settings())},
          {"tokenizer", o.tokenizer() ? nlohmann::json(o.tokenizer()->to_json()) : nlohmann::json(nullptr)},
          {"lora", d.lora ? nlohmann::json{{"rank", d.lora->rank()},
                                           {"alpha", d.lora->alpha()},
                                           {"dropout", d.lora->dropout()},
                                           {"targets", d.lora->targets()},
                                           {"rslora", d.lora->rslora()}}
                          : nlohmann::json(nullptr)}};
}

PretrainedModel pretrained_from_json(const nlohmann::json& j, const std::string& name) {
  try {
    PretrainedModel d;
    d.source = j.at("source").get<std::string>();
    d.config_json = j.at("config").get<std::string>();
    const std::string what = name + " (the pretrained model of " + d.source + ")";
    auto& o = d.options;
    o.pooling(hf::parse_pooling_config(j.at("pooling").get<std::string>(), what));
    if (j.contains("dense")) {  // checkpoints before Dense modules were read have none
      for (const auto& config : j.at("dense")) o.dense().push_back(hf::parse_dense_config(config.get<std::string>(), what));
    }
    o.normalize(j.at("normalize").get<bool>());
    o.max_seq_length(j.at("max_seq_length").get<int64_t>());
    o.do_lower_case(j.at("do_lower_case").get<bool>());
    o.settings(hf::parse_model_settings(j.at("settings").get<std::string>(), what));
    if (j.contains("lora") && !j.at("lora").is_null()) {  // checkpoints before LoRA have none
      const auto& l = j.at("lora");
      d.lora = hf::LoraOptions(l.at("rank").get<int64_t>())
                   .alpha(l.at("alpha").get<double>())
                   .dropout(l.at("dropout").get<double>())
                   .targets(l.at("targets").get<std::vector<std::string>>())
                   .rslora(l.at("rslora").get<bool>());
    }
    if (!j.at("tokenizer").is_null()) {
      o.tokenizer(std::make_shared<const hf::Tokenizer>(
          hf::Tokenizer::from_json(j.at("tokenizer").get<std::string>(), what)));
    }
    return d;
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(name + ": malformed description of its pretrained model (" + std::string(e.what()) + ")");
  }
}

}  // namespace retriever
}  // namespace gradcache
