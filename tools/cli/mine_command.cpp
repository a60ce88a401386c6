// `gradcache mine`: hard negatives for training queries, retrieved with a trained run (or BM25),
// written as Tevatron JSONL for `train --train-file FILE --negatives n`.
#include "table_command.h"

#include "retriever/commands/mine.h"
#include "retriever/search/evaluate.h"

#include <iostream>

namespace gradcache {
namespace cli {

std::function<int()> add_mine_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "mine", "Mine hard negatives: retrieve the top documents of each training query with a run (dense) or BM25, "
              "drop its positives and judged-relevant documents, draw --negatives from the --depth rank range, and "
              "write Tevatron JSONL for train --train-file FILE --negatives n. Default data: WordNet's train split.");
  return table_command<retriever::MineSettings>(
      *cmd, retriever::mine_settings(),
      [](const retriever::MineSettings&) { return std::string("; nothing was written"); },
      [](const retriever::MineSettings& settings, retriever::MineControl& control) {
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
        return 0;
      });
}

}  // namespace cli
}  // namespace gradcache
