// `gradcache export`: a training run -> a directory another program can use without this
// library: TorchScript encoders, the tokenizer, and export.json saying how to call them.
//
//   DIR/model.pt         a tied run's encoder (queries and passages), or for an untied run
//   DIR/query.pt         its query encoder and
//   DIR/passage.pt       its passage encoder (those of the sides asked with --side)
//   DIR/tokenizer.model  the run's sentencepiece model
//   DIR/export.json      {"format": "gradcache-export", "version": 1, "models": {"query": file,
//                         "passage": file}, "tokenizer", "query_max_len", "passage_max_len",
//                         "dim", "normalize", "encoder": "builtin" | "torchscript", "tied",
//                         "prefix_dim" (--dim M, else null), "source": {"checkpoint", "step"}}
//
// Each .pt is a TorchScript module: forward(input_ids [B, T] int64, attention_mask [B, T]
// int64 (1 = token, 0 = padding)) -> [B, dim] (the built-in encoder's is script_encoder();
// a TorchScript run's model is saved as it is, with its trained weights).
#pragma once

#include "retriever/commands/command_control.h"
#include "retriever/config/settings_table.h"

#include <nlohmann/json.hpp>

#include <atomic>
#include <functional>
#include <string>

namespace gradcache {
namespace retriever {

struct ExportSettings {
  std::string run;            ///< checkpoint.pt, or a run's output directory
  /// torchscript (the layout above), sentence-transformers (a directory SentenceTransformer(dir)
  /// loads: a --model-dir run's), or auto: sentence-transformers for a --model-dir run, else
  /// torchscript.
  /// peft: a LoRA run's adapters as PEFT's directory (adapter_config.json,
  /// adapter_model.safetensors), which peft.PeftModel.from_pretrained loads onto the base model;
  /// auto picks it for a LoRA run unless --merge.
  std::string format = "auto";
  bool merge = false;         ///< a LoRA run: its adapters merged into the weights, as sentence-transformers
  std::string output;         ///< the export directory
  std::string side = "both";  ///< both | query | passage
  bool overwrite = false;     ///< replace an existing export directory
  int64_t dim = 0;            ///< > 0: the modules return the first dim dimensions (Matryoshka prefix)
};

/// The table every setting of ExportSettings is declared in (the CLI's flags).
const SettingsTable<ExportSettings>& export_settings();

/// How export_run reports as it goes (a line as each phase begins: loading the run, writing an
/// encoder, checking it), and how it is stopped (between its phases; the staged directory is
/// removed, an old --output is untouched).
using ExportControl = CommandControl;

/// Writes the export directory (staged: it appears whole, or not at all) and returns its
/// export.json (for --format sentence-transformers: a description of what was written). Before
/// the directory appears, what it holds is loaded back and run on a probe batch, and must agree
/// with the run's encoder within 1e-5. Throws std::exception subclasses naming the file or flag:
/// a missing run, an existing --output without --overwrite, ...; or StoppedBySignal.
nlohmann::json export_run(const ExportSettings& settings, const ExportControl& control = {});

}  // namespace retriever
}  // namespace gradcache
