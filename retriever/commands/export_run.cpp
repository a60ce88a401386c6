#include "retriever/commands/export_run.h"

#include "files/atomic_file.h"
#include "files/staged_directory.h"
#include "retriever/config/matryoshka_settings.h"
#include "retriever/launch/stop_signal.h"
#include "retriever/model/batching.h"
#include "retriever/model/pretrained.h"
#include "retriever/model/tokenizer.h"
#include "retriever/model/torchscript_export.h"
#include "retriever/run/checkpoint.h"
#include "retriever/run/saved_encoder.h"

#include <gradcache/matryoshka_loss.h>

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
  t.add(field("format", &S::format, "--format",
              "torchscript (model.pt + tokenizer.model + export.json), sentence-transformers (a directory that "
              "SentenceTransformer(dir) loads; --model-dir runs), peft (a LoRA run's adapter directory, which "
              "peft.PeftModel.from_pretrained loads onto the base model) or auto (peft for a LoRA run, "
              "sentence-transformers for another --model-dir run, else torchscript)")
            .checked(one_of({"auto", "torchscript", "sentence-transformers", "peft"})));
  t.add(field("merge", &S::merge, "--merge",
              "A LoRA run: merge its adapters into the weights and write a plain sentence-transformers directory")
            .as_switch());
  t.add(field("side", &S::side, "--side", "Encoders to export from an untied run: both, query or passage")
            .checked(one_of({"both", "query", "passage"})));
  t.add(field("overwrite", &S::overwrite, "--overwrite", "Replace an existing export directory").as_switch());
  add_prefix_dim_setting(t, "The exported models return");
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

// `encoder` (TorchScript, returning [B, d] or [B, T, d]) followed by the first `dim` columns of
// its embeddings, re-normalised when `normalize`: what matryoshka_prefix computes, op for op.
torch::jit::Module prefix_encoder(const torch::jit::Module& encoder, int64_t dim, bool normalize) {
  auto unit = std::make_shared<torch::jit::CompilationUnit>();
  torch::jit::Module m(c10::QualifiedName("__torch__.gradcache.PrefixEncoder"), unit, /*shouldMangle=*/true);
  m.register_attribute("training", c10::BoolType::get(), false);
  m.register_module("encoder", encoder);
  m.register_attribute("dim", c10::IntType::get(), dim);
  std::string source =
      "def forward(self, input_ids, attention_mask):\n"
      "    out = self.encoder.forward(input_ids, attention_mask)\n"
      "    if out.dim() == 3:\n"
      "        m = (attention_mask != 0).unsqueeze(-1).to(out.dtype)\n"
      "        out = (out * m).sum(1) / m.sum(1).clamp_min(1.0)\n"
      "    if out.size(1) == self.dim:\n"
      "        return out\n"
      "    out = out[:, :self.dim]\n";
  if (normalize) source += "    out = out / out.norm(2, [1], True).clamp_min(1e-12)\n";
  source += "    return out\n";
  m.define(source);
  m.eval();
  return m;
}

// The module in `bytes`, loaded back, must give what `model` gives on `probe` (its first
// `dim` dimensions when dim > 0); returns its dimension.
int64_t check_exported(const std::string& bytes, const gradcache::Model& model, const TokenBatch& probe,
                       const std::string& name, int64_t dim, bool normalize) {
  std::istringstream in(bytes);
  auto module = torch::jit::load(in);
  module.eval();
  torch::NoGradGuard no_grad;
  const auto exported = call_script_encoder(module, probe);
  auto expected = model(gradcache::ModelInput(probe)).toTensor();
  if (dim > 0) expected = gradcache::matryoshka_prefix(expected, dim, normalize);
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

// The module in `bytes`, loaded, after checking that --dim fits the width `model` gives.
torch::jit::Module loaded_prefix_base(const std::string& bytes, const gradcache::Model& model, const TokenBatch& probe,
                                      int64_t dim) {
  torch::NoGradGuard no_grad;
  check_prefix_dim(dim, model(gradcache::ModelInput(probe)).toTensor().size(1), "--dim");
  std::istringstream in(bytes);
  return torch::jit::load(in);
}

// A --model-dir run as a sentence-transformers directory: the trained weights under the model's
// own names, its modules and tokenizer, and the run's prompts as the "query" and "document"
// prompts (what SentenceTransformer.encode_query / encode_document use).
// The directory just written, loaded as a user would load it, must embed a probe batch (with the
// run's prompts, accents, a long text) as the trained module does.
void check_sentence_transformer_export(hf::SentenceTransformer trained, const std::string& dir,
                                       const std::string& output) {
  const std::vector<std::string> probe = {"a query about a red cat", "Caf\u00e9 au LAIT \u4e2d\u6587",
                                          std::string(600, 'x') + " end", ""};
  hf::SentenceTransformer loaded = hf::load_sentence_transformer(dir);
  loaded->eval();  // `trained` is in eval mode already (export_run)
  torch::NoGradGuard no_grad;
  const auto expected = trained->forward(trained->tokenize(probe));
  const auto got = loaded->forward(loaded->tokenize(probe));
  const double error = expected.sizes() == got.sizes() ? (expected - got).abs().max().item<double>() : 1e30;
  if (!(error <= 1e-5)) {
    throw std::runtime_error("export --format sentence-transformers: the directory written for " + output +
                             " does not embed as the trained model does (max difference " + std::to_string(error) +
                             "); nothing was written");
  }
}

// The control's log line, when it has a log.
void say(const ExportControl& control, const std::string& line) {
  if (control.log) control.log(line);
}

nlohmann::json export_sentence_transformer(const ExportSettings& s, const CheckpointInfo& info, BiEncoder& model,
                                           const ExportControl& control) {
  if (!model.is_pretrained()) {
    throw std::invalid_argument("--format sentence-transformers: run " + s.run +
                                " trained the built-in or a TorchScript encoder, not a --model-dir model; export it "
                                "with --format torchscript");
  }
  if (!model.tied() && s.side == "both") {
    throw std::invalid_argument("--format sentence-transformers: run " + s.run +
                                " has two encoders (--untie) and a sentence-transformers directory holds one: export "
                                "each with --side query and --side passage, into two directories");
  }
  if (s.dim > 0) {
    throw std::invalid_argument("--dim with --format sentence-transformers: load the export with "
                                "SentenceTransformer(dir, truncate_dim=" + std::to_string(s.dim) + ") instead");
  }
  const Prompts prompts = tokenizer_of(info).prompts();
  if (prompts.brackets) {  // the directory would load, and embed every text without its brackets
    throw std::invalid_argument("--format sentence-transformers: run " + s.run +
                                " trained with --specb (SGPT's bracket markers), which a sentence-transformers "
                                "directory cannot express: SentenceTransformer.encode would embed texts without "
                                "them. Use the run itself: gradcache encode / eval / mine --run " + s.run);
  }
  files::StagedDirectory out(s.output, "modules.json", s.overwrite);
  hf::SentenceTransformer module = model.pretrained_encoders()[s.side == "passage" && !model.tied() ? 1 : 0];
  if (hf::has_lora(*module)) {
    if (!s.merge) {
      throw std::invalid_argument("--format sentence-transformers: run " + s.run +
                                  " trained LoRA adapters: add --merge (a plain model with the adapters merged into "
                                  "its weights), or export the adapters with --format peft");
    }
    say(control, "merging the LoRA adapters into the weights");
    hf::merge_lora(*module);
  }
  if (!prompts.query.empty()) module->set_prompt("query", prompts.query);
  if (!prompts.passage.empty()) module->set_prompt("document", prompts.passage);
  say(control, "writing the sentence-transformers directory");
  module->save(out.partial());
  stop_if_signalled(control.stop);
  say(control, "checking the export: loading it back and encoding a probe batch");
  check_sentence_transformer_export(module, out.partial(), s.output);
  stop_if_signalled(control.stop);
  out.commit();
  return {{"format", "sentence-transformers"},
          {"directory", s.output},
          {"side", model.tied() ? "both" : s.side},
          {"dim", module->embedding_dimension()},
          {"normalize", module->options().normalize()},
          {"max_seq_length", module->options().max_seq_length()},
          {"source",
           {{"checkpoint", std::filesystem::absolute(checkpoint_of_run(s.run)).lexically_normal().string()},
            {"step", info.progress.step}}}};
}

// A LoRA run's adapters as PEFT saves them, for the base model the run was trained on (recorded
// as base_model_name_or_path). The directory just written, loaded onto the base as a user would
// load it, must embed a probe batch as the trained module does.
nlohmann::json export_peft_adapter(const ExportSettings& s, const CheckpointInfo& info, BiEncoder& model,
                                   const ExportControl& control) {
  if (!model.is_pretrained() || !info.pretrained || !info.pretrained->lora) {
    throw std::invalid_argument("--format peft: run " + s.run +
                                " trained no LoRA adapters (train with --model-dir and --lora-rank); export it with "
                                "--format " + std::string(model.is_pretrained() ? "sentence-transformers" : "torchscript"));
  }
  if (!model.tied() && s.side == "both") {
    throw std::invalid_argument("--format peft: run " + s.run +
                                " has two encoders (--untie), each with its adapters: export each with --side query and "
                                "--side passage, into two directories");
  }
  if (s.dim > 0) throw std::invalid_argument("--dim with --format peft: an adapter directory has no output width to cut");
  const std::string base = std::filesystem::absolute(info.pretrained->source).lexically_normal().string();
  files::StagedDirectory out(s.output, "adapter_config.json", s.overwrite);
  hf::SentenceTransformer module = model.pretrained_encoders()[s.side == "passage" && !model.tied() ? 1 : 0];
  say(control, "writing the PEFT adapter directory (base model " + base + ")");
  hf::save_lora_adapter(module->transformer(), *info.pretrained->lora, out.partial(), base);
  stop_if_signalled(control.stop);
  say(control, "checking the export: loading it onto the base model and encoding a probe batch");
  {
    LoadedPretrained reloaded = load_pretrained(base);
    LoraSettings adapter;
    adapter.adapter = out.partial();
    add_adapters(reloaded, adapter);
    reloaded.module->eval();
    const std::vector<std::string> probe = {"a query about a red cat", "Caf\u00e9 au LAIT", std::string(300, 'x')};
    torch::NoGradGuard no_grad;
    const auto expected = module->forward(module->tokenize(probe));
    const auto got = reloaded.module->forward(reloaded.module->tokenize(probe));
    const double error = expected.sizes() == got.sizes() ? (expected - got).abs().max().item<double>() : 1e30;
    if (!(error <= 1e-5)) {
      throw std::runtime_error("export --format peft: the adapter written for " + s.output + ", loaded onto " + base +
                               ", does not embed as the trained model does (max difference " + std::to_string(error) +
                               "); nothing was written");
    }
  }
  stop_if_signalled(control.stop);
  out.commit();
  const Prompts prompts = tokenizer_of(info).prompts();
  return {{"format", "peft"},
          {"directory", s.output},
          {"base_model", base},
          {"side", model.tied() ? "both" : s.side},
          {"rank", info.pretrained->lora->rank()},
          {"alpha", info.pretrained->lora->alpha()},
          {"targets", info.pretrained->lora->targets()},
          {"query_prompt", prompts.query},
          {"passage_prompt", prompts.passage},
          {"source",
           {{"checkpoint", std::filesystem::absolute(checkpoint_of_run(s.run)).lexically_normal().string()},
            {"step", info.progress.step}}}};
}

// A diverged run's checkpoint can hold NaN or infinite weights; its export would encode NaN.
void check_weights_finite(const BiEncoder& model, const std::string& checkpoint) {
  torch::NoGradGuard no_grad;
  for (const auto& [name, tensor] : model.named_state()) {
    if (tensor.is_floating_point() && !tensor.isfinite().all().item<bool>()) {
      throw std::runtime_error("export: the weights in " + checkpoint + " are not finite (" + name +
                               " holds NaN or infinity): the run diverged; export an earlier run or train "
                               "again with a lower --lr or a higher --temperature");
    }
  }
}

}  // namespace

const SettingsTable<ExportSettings>& export_settings() {
  static const SettingsTable<ExportSettings> table = make_export_settings();
  return table;
}

nlohmann::json export_run(const ExportSettings& s, const ExportControl& control) {
  export_settings().validate(s);
  const std::string checkpoint = checkpoint_of_run(s.run);
  stop_if_signalled(control.stop);
  say(control, "loading " + checkpoint);
  auto [info, model] = load_checkpoint(checkpoint);
  stop_if_signalled(control.stop);
  check_weights_finite(model, checkpoint);
  model.to(torch::kCPU);
  model.train(false);
  const bool lora = info.pretrained && info.pretrained->lora;
  if (s.merge && !lora) {
    throw std::invalid_argument("--merge: run " + s.run + " trained no LoRA adapters, so there is nothing to merge");
  }
  if (s.merge && s.format == "peft") throw std::invalid_argument("--merge writes a sentence-transformers directory, not --format peft");
  if (s.format == "peft" || (s.format == "auto" && lora && !s.merge)) return export_peft_adapter(s, info, model, control);
  if (s.format == "sentence-transformers" || (s.format == "auto" && model.is_pretrained()))
    return export_sentence_transformer(s, info, model, control);
  if (model.is_pretrained()) {
    throw std::invalid_argument("--format torchscript: run " + s.run +
                                " fine-tuned a --model-dir model; export it with --format sentence-transformers");
  }
  files::StagedDirectory out(s.output, "export.json", s.overwrite);
  model.to(torch::kCPU);
  model.train(false);
  const auto tokenizer = tokenizer_of(info);
  const auto& config = info.config;
  const auto scripts = model.torchscript_bytes();  // a TorchScript run's modules, with the trained weights
  const int64_t vocab = scripts.empty() ? model.builtin_encoders()[0]->options().vocab_size() : tokenizer.vocab_size();
  const auto probe = probe_batch(vocab, std::min(config.tokenizer.query_max_len, config.tokenizer.passage_max_len));
  const bool builtin = scripts.empty(), normalize = builtin && config.encoder.normalize;
  nlohmann::json models = nlohmann::json::object();
  int64_t dim = 0;
  for (const std::string side : {"query", "passage"}) {
    if (s.side != "both" && s.side != side) continue;
    const size_t index = side == "query" || model.tied() ? 0 : 1;
    const std::string file = model.tied() ? "model.pt" : side + ".pt";
    models[side] = file;
    if (model.tied() && side == "passage" && models.contains("query")) continue;  // written once
    const auto& side_model = side == "query" ? model.query_model() : model.passage_model();
    say(control, "writing " + file + " (" + (model.tied() ? std::string("both sides") : side) + ")");
    std::string bytes = scripts.empty() ? module_bytes(script_encoder(*model.builtin_encoders()[index].ptr()))
                                        : scripts[index];
    if (s.dim > 0) bytes = module_bytes(prefix_encoder(loaded_prefix_base(bytes, side_model, probe, s.dim), s.dim,
                                                       normalize));
    stop_if_signalled(control.stop);
    say(control, "checking " + file + ": loading it back and encoding a probe batch");
    dim = check_exported(bytes, side_model, probe, file, s.dim, normalize);
    stop_if_signalled(control.stop);
    files::write_file_atomic(out.path(file), bytes);
  }
  files::write_file_atomic(out.path("tokenizer.model"), info.tokenizer);
  nlohmann::json description = {
      {"format", "gradcache-export"},
      {"version", 1},
      {"models", models},
      {"tokenizer", "tokenizer.model"},
      {"query_max_len", config.tokenizer.query_max_len},
      {"passage_max_len", config.tokenizer.passage_max_len},
      {"dim", dim},
      {"normalize", normalize},
      {"prefix_dim", s.dim > 0 ? nlohmann::json(s.dim) : nlohmann::json(nullptr)},
      {"encoder", builtin ? "builtin" : "torchscript"},
      {"tied", model.tied()},
      {"inputs", "forward(input_ids [B, T] int64, attention_mask [B, T] int64: 1 = token, 0 = padding (id 0))"},
      {"tokenization",
       "sentencepiece tokenizer.model ids, no BOS/EOS, cut to the side's max_len; a non-empty "
       "text without pieces is [1]"},
      {"source",
       {{"checkpoint", std::filesystem::absolute(checkpoint).lexically_normal().string()},
        {"step", info.progress.step}}}};
  files::write_file_atomic(out.path("export.json"), description.dump(2) + "\n");
  stop_if_signalled(control.stop);
  out.commit();
  return description;
}

}  // namespace retriever
}  // namespace gradcache
