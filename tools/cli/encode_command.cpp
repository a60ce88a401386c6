// `gradcache encode`: a run (or an export) and a corpus -> an embeddings directory of .npy
// shards (retriever/run/embeddings.h). The flags come from the settings table
// (retriever/commands/encode_corpus.cpp); the progress bar on stderr is the command's own.
#include "table_command.h"

#include "retriever/commands/encode_corpus.h"
#include "retriever/search/evaluate.h"

#include <unistd.h>

#include <cstdio>
#include <iostream>

namespace gradcache {
namespace cli {
namespace {

// "[#####.......] 42%  12345 rows  2100 rows/s": redrawn on a terminal, a line per 10% otherwise.
class EncodeBar {
 public:
  EncodeBar() : terminal_(isatty(STDERR_FILENO) != 0) {}
  ~EncodeBar() { finish(); }  // before a message about why encoding stopped
  void update(const retriever::EncodeProgress& p) {
    const double fraction = p.file_size > 0 ? std::min(1.0, static_cast<double>(p.bytes_read) / p.file_size) : 0;
    const int percent = static_cast<int>(fraction * 100);
    if (!terminal_ && percent < next_percent_) return;
    next_percent_ = percent / 10 * 10 + 10;
    constexpr int kWidth = 24;
    const int filled = static_cast<int>(fraction * kWidth);
    char line[160];
    std::snprintf(line, sizeof line, "[%s%s] %3d%%  %lld rows  %.0f rows/s", std::string(filled, '#').c_str(),
                  std::string(kWidth - filled, '.').c_str(), percent, static_cast<long long>(p.rows),
                  p.elapsed_s > 0 ? p.rows / p.elapsed_s : 0.0);
    if (terminal_) {
      std::cerr << "\r\033[K" << line << std::flush;
      drawn_ = true;
    } else {
      std::cerr << "gradcache encode: " << line << std::endl;
    }
  }
  void finish() {
    if (drawn_) std::cerr << "\n" << std::flush;
    drawn_ = false;
  }

 private:
  bool terminal_;
  bool drawn_ = false;
  int next_percent_ = 0;
};

}  // namespace

std::function<int()> add_encode_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("encode", "Encode a corpus with a trained run (--run) or an exported model "
                                           "(--model) into .npy shards, ids files and manifest.json under --output. "
                                           "The corpus is read and encoded --shard-size rows at a time.");
  return table_command<retriever::EncodeSettings, retriever::EncodeControl>(
      *cmd, retriever::encode_settings(),
      [](const retriever::EncodeSettings& s) { return "; nothing was written to " + s.output; },
      [](const retriever::EncodeSettings& settings, retriever::EncodeControl& control) {
        EncodeBar bar;
        control.log = [&bar](const std::string& line) {
          bar.finish();
          std::cerr << "gradcache encode: " << line << std::endl;
        };
        control.progress = [&bar](const retriever::EncodeProgress& p) { bar.update(p); };
        const auto report = retriever::encode_corpus(settings, control);
        bar.finish();
        std::cerr << "gradcache encode: wrote " << report.rows << " vectors of dimension " << report.dim << " in "
                  << report.shards << " shard(s) to " << report.output << " (" << report.seconds << " s)" << std::endl;
        return 0;
      });
}

}  // namespace cli
}  // namespace gradcache
