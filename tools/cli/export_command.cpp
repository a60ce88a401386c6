// `gradcache export`: a run -> a sentence-transformers directory (a --model-dir run) or TorchScript
// encoders with the tokenizer and export.json (retriever/commands/export_run.h).
#include "table_command.h"

#include "retriever/commands/export_run.h"

#include <iostream>

namespace gradcache {
namespace cli {

std::function<int()> add_export_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("export", "Export a run's encoder(s) under --output: a --model-dir run as a "
                                           "sentence-transformers directory (SentenceTransformer(dir) loads it), "
                                           "a LoRA run as PEFT's adapter directory (or merged, --merge), "
                                           "others as self-contained TorchScript modules (forward(input_ids, "
                                           "attention_mask) -> [B, d]) with the tokenizer and export.json.");
  return table_command<retriever::ExportSettings>(
      *cmd, retriever::export_settings(),
      [](const retriever::ExportSettings&) { return std::string(" before it finished; nothing was written"); },
      [](const retriever::ExportSettings& settings, retriever::ExportControl& control) {
        const auto description = retriever::export_run(settings, control);
        if (description["format"] == "sentence-transformers") {
          std::cerr << "gradcache export: wrote " << settings.output << " (sentence-transformers, dimension "
                    << description["dim"] << "; SentenceTransformer(\"" << settings.output << "\") loads it)"
                    << std::endl;
          return 0;
        }
        if (description["format"] == "peft") {
          std::cerr << "gradcache export: wrote " << settings.output << " (PEFT LoRA adapter of rank "
                    << description["rank"] << " for " << description["base_model"].get<std::string>()
                    << "; peft.PeftModel.from_pretrained(base, \"" << settings.output << "\") loads it)" << std::endl;
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
      });
}

}  // namespace cli
}  // namespace gradcache
