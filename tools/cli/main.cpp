// gradcache: train and evaluate dense retrievers with Gradient Cache.
//
//   gradcache train [flags]   train a bi-encoder (default: the WordNet reverse dictionary)
//   gradcache eval  [flags]   evaluate a checkpoint
//   gradcache encode [flags]  encode a corpus into .npy shards
//   gradcache export [flags]  export a run's encoders as TorchScript
//   gradcache mine  [flags]   mine hard negatives for training queries
//   gradcache plot  RUN...    draw runs' training curves
//   gradcache tokenize [flags] print the token ids of a Hugging Face tokenizer
// Each command lives in its own file (train_command.cpp, ...) and registers itself below.
#include "commands.h"

#include <c10/util/Exception.h>

#include <time.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <map>
#include <string>

namespace gradcache {
namespace cli {
std::atomic<int> stop_signal{0};
}  // namespace cli
}  // namespace gradcache

namespace {

// Seconds since boot, by an async-signal-safe call.
double monotonic_seconds() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

std::atomic<double> first_signal_at{0};

// The first signal asks for a checkpoint and a clean stop; a second one, later, stops at once.
// Signals within a second of the first are the same request arriving twice: Ctrl-C reaches
// every process of the terminal's group and torchrun forwards it to its workers as well (as
// `timeout` does with SIGTERM), which must not cost the checkpoint.
extern "C" void on_stop_signal(int signal) {
  const double now = monotonic_seconds();
  if (gradcache::cli::stop_signal.load() != 0) {
    if (now - first_signal_at.load() > 1.0) std::_Exit(128 + signal);
    return;
  }
  first_signal_at.store(now);
  gradcache::cli::stop_signal.store(signal);
}

void install_signal_handlers() {
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
  // A write to a socket whose peer has died (another rank of a distributed run) must fail
  // with an error the program reports, not kill the process without a word, as SIGPIPE's
  // default action does. Python ignores it too; the gradcache library leaves it to programs.
  std::signal(SIGPIPE, SIG_IGN);
}

// One write per line on stderr. The ranks of a --nproc run and their launcher share one
// stderr, and std::cerr, unbuffered, writes each `<<` on its own: two processes' lines could
// interleave mid-line (CI saw "error: rank 0 gradcache was killed ..."). Line-buffered stderr,
// with cerr's flush after every `<<` off, writes each line whole; the progress bars flush
// their partial lines themselves.
void write_stderr_by_lines() {
  std::setvbuf(stderr, nullptr, _IOLBF, 1 << 16);
  std::cerr.unsetf(std::ios_base::unitbuf);
}

}  // namespace

int main(int argc, char** argv) {
  write_stderr_by_lines();
  CLI::App app{"gradcache: train and evaluate dense retrievers with Gradient Cache (batches far beyond memory, "
               "exact full-batch gradients)"};
  app.require_subcommand(1);
  // Each command: its flags on `app`, and the action to run once parsing succeeded.
  const std::map<std::string, std::function<int()>> actions = {
      {"train", gradcache::cli::add_train_command(app)},
      {"eval", gradcache::cli::add_eval_command(app)},
      {"mine", gradcache::cli::add_mine_command(app)},
      {"plot", gradcache::cli::add_plot_command(app)},
      {"encode", gradcache::cli::add_encode_command(app)},
      {"export", gradcache::cli::add_export_command(app)},
      {"tokenize", gradcache::cli::add_tokenize_command(app)},
  };
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;  // --help is a success; every usage error exits 2
  }
  const std::string command = app.get_subcommands().front()->get_name();
  install_signal_handlers();
  try {
    return actions.at(command)();
  } catch (const gradcache::retriever::StoppedBySignal& stopped) {
    // A command without a message of its own (plot): nothing is left half-written.
    std::cerr << "gradcache " << command << ": stopped by " << gradcache::retriever::signal_name(stopped.signal())
              << " before it finished; nothing was written" << std::endl;
    return 128 + stopped.signal();
  } catch (const c10::Error& e) {
    std::cerr << "gradcache " << command << ": error: " << e.what_without_backtrace() << std::endl;
  } catch (const std::exception& e) {
    std::cerr << "gradcache " << command << ": error: " << e.what() << std::endl;
  }
  return 1;
}
