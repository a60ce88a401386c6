#include "retriever/run/saved_encoder.h"

#include "files/atomic_file.h"
#include "retriever/data/text_data.h"
#include "retriever/files/error_message.h"
#include "retriever/files/plain_file_name.h"
#include "retriever/files/zip_integrity.h"
#include "retriever/run/checkpoint.h"

#include <torch/torch.h>

#include <algorithm>
#include <filesystem>
#include <stdexcept>

namespace gradcache {
namespace retriever {
namespace fs = std::filesystem;

namespace {

// An export.json length: a positive number of tokens, and not an absurd one.
int64_t max_len_of(const nlohmann::json& manifest, const char* key) {
  const int64_t len = manifest.at(key).get<int64_t>();
  if (len < 1 || len > (int64_t{1} << 16))
    throw std::runtime_error(std::string("\"") + key + "\" " + std::to_string(len) + " is not a number of tokens (1 to 65536)");
  return len;
}

// Checks an export's encoder against its export.json and its tokenizer before anything is
// encoded (issue 27): the ids the tokenizer can give must be ids the embedding takes (a
// tokenizer.model of another run is refused, not used), and the vectors must have export.json's
// width and be finite.
void probe_exported(const BiEncoder& model, const Tokenizer& tokenizer, int64_t dim, const std::string& file) {
  const int64_t top = std::max<int64_t>(1, tokenizer.vocab_size() - 1);
  const TokenBatch probe{{"input_ids", torch::tensor({{int64_t{1}, top}}, torch::kLong)},
                         {"attention_mask", torch::ones({1, 2}, torch::kLong)}};
  at::Tensor vectors;
  try {
    torch::NoGradGuard no_grad;
    vectors = model.query_model()(ModelInput(probe)).toTensor();
  } catch (const c10::Error& e) {
    throw std::runtime_error(file + " cannot encode the ids of its tokenizer.model (" +
                             std::to_string(tokenizer.vocab_size()) + " pieces): " + error_first_line(e) +
                             "; the tokenizer or the model comes from another export: export the run again");
  }
  if (vectors.dim() != 2 || vectors.size(1) != dim)
    throw std::runtime_error(file + " gives vectors of shape " + c10::str(vectors.sizes()) + ", but export.json says dim " +
                             std::to_string(dim) + ": export the run again");
  if (!torch::isfinite(vectors).all().item<bool>())
    throw std::runtime_error(file + " gives NaN or infinite vectors: its weights are damaged; export the run again");
}

}  // namespace

std::string checkpoint_of_run(const std::string& run) {
  std::error_code ignored;
  return fs::is_directory(run, ignored) ? (fs::path(run) / "checkpoint.pt").string() : run;
}

nlohmann::json model_identity(const TextEncoder& encoder) {
  nlohmann::json identity = encoder.source;
  identity["weights_crc32"] = weights_digest(encoder.model);
  return identity;
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
                      std::move(source),
                      std::string()};
  if (info_out) *info_out = std::move(info);
  return encoder;
}

TextEncoder load_pretrained_encoder(const PretrainedSource& s) {
  auto loaded = load_pretrained(s.dir);
  LoraSettings lora;
  lora.adapter = s.adapter;
  add_adapters(loaded, lora);
  const auto& description = loaded.description;
  const int64_t positions = description.options.max_seq_length();
  auto tokenizer = pretrained_tokenizer(description).with_prompts(resolve_prompts(s.prompts(), &description));
  nlohmann::json source = {{"model_dir", fs::absolute(s.dir).lexically_normal().string()}, {"encoder", "pretrained"}};
  if (!s.adapter.empty()) source["adapter"] = fs::absolute(s.adapter).lexically_normal().string();
  BiEncoder model = BiEncoder::pretrained({loaded.module});
  const bool normalizes = model.normalizes();
  return TextEncoder{std::move(model),
                     std::move(tokenizer),
                     // the tokenizer cuts at the model's positions whatever is asked: what is used
                     // (manifest.json's max_len recorded --passage-max-len 1e9)
                     s.query_max_len > 0 ? std::min(s.query_max_len, positions) : positions,
                     s.passage_max_len > 0 ? std::min(s.passage_max_len, positions) : positions,
                     normalizes,
                     std::move(source),
                     describe(description)};
}

TextEncoder load_exported_encoder(const std::string& dir, const std::string& side) {
  const std::string manifest_path = (fs::path(dir) / "export.json").string();
  std::error_code ignored;
  if (!fs::is_directory(dir, ignored)) throw std::runtime_error("--model " + dir + ": no such export directory");
  if (!fs::exists(manifest_path, ignored))
    throw std::runtime_error("--model " + dir + ": no export.json (not a directory written by gradcache export)");
  nlohmann::json manifest;
  std::string file, tokenizer_file;
  int64_t query_len = 0, passage_len = 0, dim = 0;
  bool normalize = false;
  try {
    manifest = nlohmann::json::parse(files::read_file(manifest_path));
    if (manifest.value("format", "") != "gradcache-export")
      throw std::runtime_error("\"format\" is not \"gradcache-export\"");
    const auto& models = manifest.at("models");
    if (!models.contains(side))
      throw std::runtime_error("it holds no " + side + " encoder (exported with --side " +
                               (side == "query" ? "passage" : "query") + "?); export the run again");
    if (manifest.value("version", 1) != 1)
      throw std::runtime_error("\"version\" " + manifest["version"].dump() + " is not 1, the one this program reads");
    auto part = [&](const nlohmann::json& name) {  // a file of the export, in its directory
      const std::string plain = name.get<std::string>();
      if (!is_plain_file_name(plain))
        throw std::runtime_error(quoted_file_name(plain) + " is not a file name in the export's directory");
      return (fs::path(dir) / plain).string();
    };
    file = part(models.at(side));
    tokenizer_file = part(manifest.value("tokenizer", nlohmann::json("tokenizer.model")));
    query_len = max_len_of(manifest, "query_max_len");
    passage_len = max_len_of(manifest, "passage_max_len");
    normalize = manifest.at("normalize").get<bool>();
    dim = manifest.at("dim").get<int64_t>();
    if (dim < 1) throw std::runtime_error("\"dim\" " + std::to_string(dim) + " is not a width");
    const auto prefix = manifest.value("prefix_dim", nlohmann::json());
    if (!prefix.is_null() && (!prefix.is_number_integer() || prefix.get<int64_t>() != dim))
      throw std::runtime_error("\"prefix_dim\" " + prefix.dump() + " is not the export's width, \"dim\" " +
                               std::to_string(dim));
  } catch (const std::exception& e) {
    throw std::runtime_error(manifest_path + ": " + printable_utf8(e.what()));  // JSON errors quote the input
  }
  auto tokenizer = Tokenizer::load(tokenizer_file);
  // LibTorch's zip reader checks no CRC: a flipped byte inside a tensor would load (issue 27).
  const std::string bytes = files::read_file(file);
  if (const auto damage = find_zip_damage(bytes))
    throw std::runtime_error(file + " is damaged: " + *damage + "; export the run again");
  BiEncoder model;
  try {
    model = BiEncoder::torchscript_from_bytes({bytes});
  } catch (const c10::Error& e) {
    throw std::runtime_error(file + " is not a TorchScript encoder: " + error_first_line(e));
  }
  model.train(false);
  probe_exported(model, tokenizer, dim, file);
  nlohmann::json source = {{"export", fs::absolute(dir).lexically_normal().string()}, {"file", file}};
  if (manifest.contains("source")) source["exported_from"] = manifest["source"];
  return TextEncoder{std::move(model), std::move(tokenizer), query_len, passage_len, normalize, std::move(source), std::string()};
}

}  // namespace retriever
}  // namespace gradcache
