// `gradcache export`: a run -> a sentence-transformers directory (a --model-dir run) or TorchScript
// encoders with the tokenizer and export.json (retriever/commands/export_run.h).
#include "commands.h"
#include "setting_flags.h"

#include "retriever/commands/export_run.h"

#include <iostream>

namespace gradcache {
namespace cli {

std::function<int()> add_export_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("export", "Export a run's encoder(s) under --output: a --model-dir run as a "
                                           "sentence-transformers directory (SentenceTransformer(dir) loads it), "
                                           "others as self-contained TorchScript modules (forward(input_ids, "
                                           "attention_mask) -> [B, d]) with the tokenizer and export.json.");
  auto given = add_setting_flags(*cmd, retriever::export_settings(), retriever::ExportSettings{});
  return [given]() {
    const auto parsed = settings_from_flags(retriever::export_settings(), *given, "export");
    if (!parsed) return 2;
    const retriever::ExportSettings& settings = *parsed;
    retriever::ExportControl control;
    control.log = [](const std::string& line) { std::cerr << "gradcache export: " << line << std::endl; };
    control.stop = &stop_signal;
    const auto description = retriever::export_run(settings, control);
    if (description["format"] == "sentence-transformers") {
      std::cerr << "gradcache export: wrote " << settings.output << " (sentence-transformers, dimension "
                << description["dim"] << "; SentenceTransformer(\"" << settings.output << "\") loads it)" << std::endl;
      return 0;
    }
    std::cerr << "gradcache export: wrote " << settings.output << " (";
    bool first = true;
    for (const auto& [side, file] : description["models"].items()) {
      std::cerr << (first ? "" : ", ") << side << ": " << file.get<std::string>();
      first = false;
    }
    std::cerr << "; dimension " << description["dim"] << ")" << std::endl;
    return 0;
  };
}

}  // namespace cli
}  // namespace gradcache
