#include "retriever/model/saved_encoder.h"

#include "retriever/run/atomic_file.h"
#include "retriever/run/checkpoint.h"

#include <filesystem>
#include <stdexcept>

namespace gradcache {
namespace retriever {
namespace fs = std::filesystem;

std::string checkpoint_of_run(const std::string& run) {
  std::error_code ignored;
  return fs::is_directory(run, ignored) ? (fs::path(run) / "checkpoint.pt").string() : run;
}

TextEncoder load_run_encoder(const std::string& run, CheckpointInfo* info_out) {
  const std::string path = checkpoint_of_run(run);
  auto [info, model] = load_checkpoint(path);
  const char* kind = model.is_pretrained() ? "pretrained" : model.is_torchscript() ? "torchscript" : "builtin";
  nlohmann::json source = {{"checkpoint", fs::absolute(path).lexically_normal().string()},
                           {"step", info.progress.step},
                           {"encoder", kind}};
  const bool normalizes = model.normalizes();
  TextEncoder encoder{std::move(model),
                      tokenizer_of(info),
                      info.config.tokenizer.query_max_len,
                      info.config.tokenizer.passage_max_len,
                      normalizes,
                      std::move(source)};
  if (info_out) *info_out = std::move(info);
  return encoder;
}

TextEncoder load_pretrained_encoder(const PretrainedSource& s) {
  auto loaded = load_pretrained(s.dir);
  const auto& description = loaded.description;
  const int64_t positions = description.options.max_seq_length();
  auto tokenizer = pretrained_tokenizer(description).with_prompts(resolve_prompts(s.prompts(), &description));
  nlohmann::json source = {{"model_dir", fs::absolute(s.dir).lexically_normal().string()}, {"encoder", "pretrained"}};
  BiEncoder model = BiEncoder::pretrained({loaded.module});
  const bool normalizes = model.normalizes();
  return TextEncoder{std::move(model),
                     std::move(tokenizer),
                     s.query_max_len > 0 ? s.query_max_len : positions,
                     s.passage_max_len > 0 ? s.passage_max_len : positions,
                     normalizes,
                     std::move(source)};
}

TextEncoder load_exported_encoder(const std::string& dir, const std::string& side) {
  const std::string manifest_path = (fs::path(dir) / "export.json").string();
  std::error_code ignored;
  if (!fs::is_directory(dir, ignored)) throw std::runtime_error("--model " + dir + ": no such export directory");
  if (!fs::exists(manifest_path, ignored))
    throw std::runtime_error("--model " + dir + ": no export.json (not a directory written by gradcache export)");
  nlohmann::json manifest;
  std::string file;
  int64_t query_len = 0, passage_len = 0;
  bool normalize = false;
  try {
    manifest = nlohmann::json::parse(read_file(manifest_path));
    if (manifest.value("format", "") != "gradcache-export")
      throw std::runtime_error("\"format\" is not \"gradcache-export\"");
    const auto& models = manifest.at("models");
    if (!models.contains(side))
      throw std::runtime_error("it holds no " + side + " encoder (exported with --side " +
                               (side == "query" ? "passage" : "query") + "?); export the run again");
    file = (fs::path(dir) / models.at(side).get<std::string>()).string();
    query_len = manifest.at("query_max_len").get<int64_t>();
    passage_len = manifest.at("passage_max_len").get<int64_t>();
    normalize = manifest.at("normalize").get<bool>();
  } catch (const std::exception& e) {
    throw std::runtime_error(manifest_path + ": " + e.what());
  }
  auto tokenizer = Tokenizer::load((fs::path(dir) / manifest.value("tokenizer", "tokenizer.model")).string());
  nlohmann::json source = {{"export", fs::absolute(dir).lexically_normal().string()}, {"file", file}};
  if (manifest.contains("source")) source["exported_from"] = manifest["source"];
  return TextEncoder{BiEncoder::torchscript(file, false), std::move(tokenizer), query_len, passage_len, normalize,
                     std::move(source)};
}

}  // namespace retriever
}  // namespace gradcache
