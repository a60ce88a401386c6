// The subcommands of the `gradcache` program. Each registers its flags on a CLI11 app and
// runs through the retriever library; the program itself only dispatches.
#pragma once

#include "retriever/launch/stop_signal.h"

#include <CLI/CLI.hpp>

#include <atomic>
#include <functional>
#include <string>

namespace gradcache {
namespace cli {

/// Set from SIGINT/SIGTERM: training saves a checkpoint and stops; every other command stops
/// where it is (retriever::StoppedBySignal), writes nothing and exits 128 + the signal.
extern std::atomic<int> stop_signal;

/// Adds `train` to `app`; returns the action to run once parsing succeeded (exit status).
std::function<int()> add_train_command(CLI::App& app);
std::function<int()> add_eval_command(CLI::App& app);
std::function<int()> add_mine_command(CLI::App& app);
std::function<int()> add_plot_command(CLI::App& app);
std::function<int()> add_encode_command(CLI::App& app);
std::function<int()> add_export_command(CLI::App& app);
std::function<int()> add_tokenize_command(CLI::App& app);

}  // namespace cli
}  // namespace gradcache
