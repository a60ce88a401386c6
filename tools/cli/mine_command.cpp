// `gradcache mine`: hard negatives for training queries, retrieved with a trained run (or BM25),
// written as Tevatron JSONL for `train --train-file FILE --negatives n`.
#include "commands.h"
#include "setting_flags.h"

#include "retriever/search/evaluate.h"
#include "retriever/commands/mine.h"

#include <iostream>

namespace gradcache {
namespace cli {

std::function<int()> add_mine_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "mine", "Mine hard negatives: retrieve the top documents of each training query with a run (dense) or BM25, "
              "drop its positives and judged-relevant documents, draw --negatives from the --depth rank range, and "
              "write Tevatron JSONL for train --train-file FILE --negatives n. Default data: WordNet's train split.");
  auto given = add_setting_flags(*cmd, retriever::mine_settings(), retriever::MineSettings{});
  return [given]() {
    const auto parsed = settings_from_flags(retriever::mine_settings(), *given, "mine");
    if (!parsed) return 2;
    const retriever::MineSettings& settings = *parsed;
    retriever::MineControl control;
    control.log = [](const std::string& line) { std::cerr << "gradcache mine: " << line << std::endl; };
    control.stop = &stop_signal;
    try {
      const auto report = retriever::mine(settings, control);
      const auto& stats = report.stats;
      std::cerr << "gradcache mine: wrote " << report.output << ": " << report.written << " queries, "
                << settings.negatives << " negatives each from ranks " << settings.depth << " of "
                << report.corpus_size << " documents (" << report.source << "; dropped " << stats.excluded
                << " positives/relevant, " << stats.above_margin << " above the margin)" << std::endl;
      if (stats.random_filled > 0 || report.written < stats.queries)
        std::cerr << "gradcache mine: --on-short " << settings.on_short << ": " << stats.random_filled
                  << " negatives drawn at random, " << stats.queries - report.written
                  << " queries left out (too few candidates)" << std::endl;
    } catch (const retriever::StoppedBySignal& stopped) {
      std::cerr << "gradcache mine: stopped by " << retriever::signal_name(stopped.signal()) << "; nothing was written" << std::endl;
      return 128 + stopped.signal();
    }
    return 0;
  };
}

}  // namespace cli
}  // namespace gradcache
