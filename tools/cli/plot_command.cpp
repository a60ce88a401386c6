// `gradcache plot`: the training curves of one or more runs (loss, learning rate, dev metric
// over the steps) in one PNG, each run a line named after its directory.
#include "commands.h"

#include "retriever/train/curves.h"

#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

namespace gradcache {
namespace cli {
namespace {

struct PlotFlags {
  std::vector<std::string> runs;
  std::string output = "curves.png";
  std::string metric;  // "": the first run's --select-metric
  bool overwrite = false;
};

// Legend names must tell the runs apart: the paths as given where directory names repeat.
std::vector<retriever::CurveSource> sources(const std::vector<std::string>& runs) {
  std::vector<retriever::CurveSource> out;
  for (const auto& run : runs) out.push_back(retriever::curve_source(run));
  for (size_t i = 0; i < out.size(); ++i) {
    for (size_t j = 0; j < out.size(); ++j) {
      if (i != j && out[i].name == out[j].name) out[i].name = runs[i];
    }
  }
  return out;
}

}  // namespace

std::function<int()> add_plot_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("plot", "Draw the training curves of runs into one PNG: loss (log scale), learning "
                                         "rate and the dev metric (--eval-every runs) over the steps");
  auto flags = std::make_shared<PlotFlags>();
  cmd->add_option("runs", flags->runs, "Run directories (a train --output) or their metrics.jsonl")->required();
  cmd->add_option("--output", flags->output, "The PNG to write")->capture_default_str();
  cmd->add_option("--metric", flags->metric,
                  "Dev metric to draw: recall@1, recall@10, recall@100, mrr@10 or ndcg@10 (default: the first "
                  "run's --select-metric)")
      ->check(CLI::IsMember({"recall@1", "recall@10", "recall@100", "mrr@10", "ndcg@10"}));
  cmd->add_flag("--overwrite", flags->overwrite, "Replace --output if it exists");

  return [flags]() {
    if (std::filesystem::exists(flags->output) && !flags->overwrite) {
      std::cerr << "gradcache plot: error: " << flags->output << " exists; pass --overwrite to replace it"
                << std::endl;
      return 1;
    }
    const auto runs = sources(flags->runs);
    const auto metric = flags->metric.empty() ? retriever::run_select_metric(flags->runs.front()) : flags->metric;
    retriever::PlotControl control;
    control.log = [](const std::string& line) { std::cerr << "gradcache plot: " << line << std::endl; };
    control.stop = &stop_signal;
    retriever::plot_training_curves(runs, flags->output, metric, control);
    std::cerr << "gradcache plot: wrote " << flags->output << " (" << runs.size() << " run"
              << (runs.size() == 1 ? "" : "s") << ")" << std::endl;
    return 0;
  };
}

}  // namespace cli
}  // namespace gradcache
