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

TextEncoder load_run_encoder(const std::string& run) {
  const std::string path = checkpoint_of_run(run);
  auto [info, model] = load_checkpoint(path);
  const bool builtin = info.torchscript.empty();
  nlohmann::json source = {{"checkpoint", fs::absolute(path).lexically_normal().string()},
                           {"step", info.progress.step},
                           {"encoder", builtin ? "builtin" : "torchscript"}};
  return TextEncoder{std::move(model),
                     Tokenizer::from_serialized(info.tokenizer),
                     info.config.tokenizer.query_max_len,
                     info.config.tokenizer.passage_max_len,
                     builtin && info.config.encoder.normalize,
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
