// gradcache: train and evaluate dense retrievers with Gradient Cache.
//
//   gradcache train [flags]   train a bi-encoder (default: the WordNet reverse dictionary)
//   gradcache eval  [flags]   evaluate a checkpoint
#include "commands.h"

#include <c10/util/Exception.h>

#include <csignal>
#include <cstring>
#include <iostream>

namespace gradcache {
namespace cli {
std::atomic<int> stop_signal{0};
}  // namespace cli
}  // namespace gradcache

namespace {

extern "C" void on_stop_signal(int signal) {
  if (gradcache::cli::stop_signal.load() != 0) std::_Exit(128 + signal);  // a second Ctrl-C: now
  gradcache::cli::stop_signal.store(signal);
}

void install_signal_handlers() {
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"gradcache: train and evaluate dense retrievers with Gradient Cache (batches far beyond memory, "
               "exact full-batch gradients)"};
  app.require_subcommand(1);
  std::function<int()> action;
  auto train = gradcache::cli::add_train_command(app, argc, argv);
  auto eval = gradcache::cli::add_eval_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;  // --help is a success; every usage error exits 2
  }
  const std::string command = app.get_subcommands().front()->get_name();
  install_signal_handlers();
  try {
    return command == "train" ? train() : eval();
  } catch (const c10::Error& e) {
    std::cerr << "gradcache " << command << ": error: " << e.what_without_backtrace() << std::endl;
  } catch (const std::exception& e) {
    std::cerr << "gradcache " << command << ": error: " << e.what() << std::endl;
  }
  return 1;
}
