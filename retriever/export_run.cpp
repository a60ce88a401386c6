#include "retriever/export_run.h"

#include "retriever/batching.h"
#include "retriever/checkpoint.h"
#include "retriever/files.h"
#include "retriever/script_encoder.h"
#include "retriever/staged_directory.h"
#include "retriever/text_encoder.h"
#include "retriever/tokenizer.h"

#include <torch/torch.h>

#include <filesystem>
#include <sstream>

namespace gradcache {
namespace retriever {
namespace {

SettingsTable<ExportSettings> make_export_settings() {
  using S = ExportSettings;
  SettingsTable<S> t;
  t.add(field("run", &S::run, "--run", "checkpoint.pt, or the --output directory of a run").required());
  t.add(field("output", &S::output, "--output", "Export directory (model.pt or query.pt/passage.pt, "
                                               "tokenizer.model, export.json)")
            .required()
            .checked(not_empty()));
  t.add(field("side", &S::side, "--side", "Encoders to export from an untied run: both, query or passage")
            .checked(one_of({"both", "query", "passage"})));
  t.add(field("overwrite", &S::overwrite, "--overwrite", "Replace an existing export directory").as_switch());
  return t;
}

// A fixed batch of in-vocabulary ids with padding in all rows but the first.
TokenBatch probe_batch(int64_t vocab_size, int64_t max_len) {
  const int64_t length = std::min<int64_t>(max_len, 9);
  std::vector<std::vector<int64_t>> tokens;
  for (int64_t row = 0; row < 3; ++row) {
    std::vector<int64_t> ids;
    for (int64_t j = 0; j < std::max<int64_t>(1, length - 3 * row); ++j) ids.push_back(2 + (7 * row + 3 * j) % (vocab_size - 2));
    tokens.push_back(ids);
  }
  return pad_batch(tokens, {0, 1, 2});
}

// The module in `bytes`, loaded back, must give what `model` gives on `probe`; returns its dimension.
int64_t check_exported(const std::string& bytes, const gradcache::Model& model, const TokenBatch& probe,
                       const std::string& name) {
  std::istringstream in(bytes);
  auto module = torch::jit::load(in);
  module.eval();
  torch::NoGradGuard no_grad;
  const auto exported = call_script_encoder(module, probe);
  const auto expected = model(gradcache::ModelInput(probe)).toTensor();
  const double error = (exported - expected).abs().max().item<double>();
  TORCH_CHECK(exported.sizes() == expected.sizes() && error <= 1e-5, "export: ", name,
              " does not reproduce the run's encoder (largest difference ", error,
              "); this is a bug, please report it");
  return exported.size(1);
}

std::string module_bytes(torch::jit::Module module) {
  std::ostringstream out;
  module.save(out);
  return out.str();
}

}  // namespace

const SettingsTable<ExportSettings>& export_settings() {
  static const SettingsTable<ExportSettings> table = make_export_settings();
  return table;
}

nlohmann::json export_run(const ExportSettings& s) {
  export_settings().validate(s);
  const std::string checkpoint = checkpoint_of_run(s.run);
  auto [info, model] = load_checkpoint(checkpoint);
  StagedDirectory out(s.output, "export.json", s.overwrite);
  model.to(torch::kCPU);
  model.train(false);
  const auto tokenizer = Tokenizer::from_serialized(info.tokenizer);
  const auto& config = info.config;
  const auto scripts = model.torchscript_bytes();  // a TorchScript run's modules, with the trained weights
  const int64_t vocab = scripts.empty() ? model.builtin_encoders()[0]->options().vocab_size() : tokenizer.vocab_size();
  const auto probe = probe_batch(vocab, std::min(config.query_max_len, config.passage_max_len));
  nlohmann::json models = nlohmann::json::object();
  int64_t dim = 0;
  for (const std::string side : {"query", "passage"}) {
    if (s.side != "both" && s.side != side) continue;
    const size_t index = side == "query" || model.tied() ? 0 : 1;
    const std::string file = model.tied() ? "model.pt" : side + ".pt";
    models[side] = file;
    if (model.tied() && side == "passage" && models.contains("query")) continue;  // written once
    const std::string bytes = scripts.empty() ? module_bytes(script_encoder(*model.builtin_encoders()[index].ptr()))
                                              : scripts[index];
    dim = check_exported(bytes, side == "query" ? model.query_model() : model.passage_model(), probe, file);
    write_file_atomic(out.path(file), bytes);
  }
  write_file_atomic(out.path("tokenizer.model"), info.tokenizer);
  const bool builtin = scripts.empty();
  nlohmann::json description = {
      {"format", "gradcache-export"},
      {"version", 1},
      {"models", models},
      {"tokenizer", "tokenizer.model"},
      {"query_max_len", config.query_max_len},
      {"passage_max_len", config.passage_max_len},
      {"dim", dim},
      {"normalize", builtin && config.normalize},
      {"encoder", builtin ? "builtin" : "torchscript"},
      {"tied", model.tied()},
      {"inputs", "forward(input_ids [B, T] int64, attention_mask [B, T] int64: 1 = token, 0 = padding (id 0))"},
      {"tokenization", "sentencepiece tokenizer.model ids, no BOS/EOS, cut to the side's max_len; a non-empty "
                       "text without pieces is [1]"},
      {"source", {{"checkpoint", std::filesystem::absolute(checkpoint).lexically_normal().string()},
                  {"step", info.progress.step}}}};
  write_file_atomic(out.path("export.json"), description.dump(2) + "\n");
  out.commit();
  return description;
}

}  // namespace retriever
}  // namespace gradcache
