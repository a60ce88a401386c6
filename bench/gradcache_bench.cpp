// gradcache-bench: what the gradient cache costs and whether it is exact.
//
//   gradcache-bench SCENARIO [flags]     SCENARIO: exactness memory overhead retain chunk-size
//                                                  threads distributed precision streaming soak all
//   gradcache-bench SCENARIO --help      its flags and their defaults
//
// A table on stdout by default; with --json exactly one JSON object on stdout and all human
// text on stderr. --plot FILE.png draws the scenarios' figures with gnuplot.
#include "measure.h"
#include "options.h"
#include "plot.h"
#include "scenarios.h"
#include "system.h"

#include <gradcache/memory.h>
#include <gradcache/version.h>
#include <torch/version.h>

#include <CLI/CLI.hpp>

#include <unistd.h>

#include <algorithm>
#include <climits>
#include <iostream>
#include <list>
#include <thread>

namespace {

using gcbench::CommonSettings;
using gcbench::Json;
using gcbench::OptionTable;

// A scenario: its name, what it measures, its options and how to run it.
struct Scenario {
  std::string name, about;
  std::function<void(OptionTable&)> add_options;
  std::function<gcbench::ScenarioResult(const CommonSettings&)> run;
  bool in_all = true;  ///< run by `all`
};

// The settings of every scenario, one struct each (no global settings), and the scenarios
// that read them.
struct ScenarioSettings {
  gcbench::ExactnessSettings exactness;
  gcbench::MemorySettings memory;
  gcbench::OverheadSettings overhead;
  gcbench::RetainSettings retain;
  gcbench::ChunkSizeSettings chunk_size;
  gcbench::ThreadsSettings threads;
  gcbench::DistributedSettings distributed;
  gcbench::ShardedLossSettings sharded_loss;
  gcbench::PrecisionSettings precision;
  gcbench::StreamingSettings streaming;
  gcbench::SoakSettings soak;

  template <class Settings, class Run>
  static Scenario make(std::string name, std::string about, Settings& s, Run run, bool in_all = true) {
    return {std::move(name), std::move(about), [&s](OptionTable& t) { s.add_options(t); },
            [&s, run](const CommonSettings& c) { return run(s, c); }, in_all};
  }

  std::vector<Scenario> scenarios() {
    return {
        make("exactness", "cache vs full-batch gradients, max relative error (Transformer with dropout, MLP eval)",
             exactness, gcbench::run_exactness),
        make("memory", "peak memory vs batch size: full, accumulate, cache (child process per point)", memory,
             gcbench::run_memory),
        make("overhead", "step time: cache (nothing retained) vs accumulate vs full", overhead, gcbench::run_overhead),
        make("retain", "time / memory trade-off of retain_chunks and retain_memory", retain, gcbench::run_retain),
        make("chunk-size", "find_chunk_size: chosen chunk size and measured peak vs budget", chunk_size,
             gcbench::run_chunk_size),
        make("threads", "cache step time for intra-op x OpenBLAS threads in {1,2} x {1,2}", threads,
             gcbench::run_threads),
        make("distributed", "one step of the same batch in 1 and 2 processes (Gloo): time, memory, bytes all-reduced",
             distributed, gcbench::run_distributed),
        make("sharded-loss",
             "the loss alone across 1, 2, 4 processes: gathered vs sharded (ring); time and memory per rank "
             "(15 minutes at the default sizes; not in 'all')",
             sharded_loss, gcbench::run_sharded_loss, /*in_all=*/false),
        make("precision", "cache step in fp32 vs bf16 autocast: time (interleaved), peak memory, gradient error",
             precision, gcbench::run_precision),
        make("streaming", "dense vs streaming contrastive loss: peak memory and time vs N (minutes; not in 'all')",
             streaming, gcbench::run_streaming, /*in_all=*/false),
        make("soak", "RSS over 1,000 training steps: no growth after warm-up (a minute or two; not in 'all')", soak,
             gcbench::run_soak, /*in_all=*/false),
    };
  }
};

// A subcommand: the scenarios it runs and the common settings its flags fill.
struct Command {
  std::string name;
  std::vector<Scenario> scenarios;
  CommonSettings common;
  CLI::App* app = nullptr;
};

void add_common_options(OptionTable& t, CommonSettings& c) {
  t.add_switch("--json", &c.json, "one JSON object on stdout (human text on stderr)");
  t.add("--plot", &c.plot, "draw the figures into this PNG (data + gnuplot script next to it)");
  t.add("--threads", &c.threads, "LibTorch intra-op threads");
  t.add("--blas-threads", &c.blas_threads, "OpenBLAS threads (0: OpenBLAS's default)");
}

std::string self_path(const char* argv0) {
  char buf[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string(argv0);
}

Json threads_json() {
  const auto t = gcbench::current_threads();
  return Json{{"intra_op", t.intra_op},
              {"openblas", t.openblas},
              {"openblas_found", gcbench::openblas_found()},
              {"hardware_concurrency", std::thread::hardware_concurrency()},
              {"load_average_1min_at_start", gcbench::load_average()}};
}

std::string torch_version() {
  return std::to_string(TORCH_VERSION_MAJOR) + "." + std::to_string(TORCH_VERSION_MINOR) + "." +
         std::to_string(TORCH_VERSION_PATCH);
}

void print_header(std::ostream& text, const std::string& name, const Json& threads) {
  text << "gradcache-bench " << name << " | gradcache " << GRADCACHE_VERSION << " | LibTorch " << torch_version()
       << " CPU | threads: intra-op " << threads["intra_op"] << ", OpenBLAS "
       << (gcbench::openblas_found() ? std::to_string(threads["openblas"].get<int64_t>()) : std::string("not found"))
       << ", " << threads["hardware_concurrency"] << " cores, load average " << gcbench::fmt(gcbench::load_average(), 2)
       << "\n\n"
       << std::flush;
}

// Runs the command's scenarios in turn: their results into report["scenarios"], their
// targets (each marked with its scenario) into report["targets"], their text onto `text`.
void run_scenarios(const Command& command, Json& report, std::ostream& text) {
  Json results = Json::object(), targets = Json::array();
  for (const auto& scenario : command.scenarios) {
    const double t0 = gcbench::now_seconds();
    auto result = scenario.run(command.common);
    const double seconds = gcbench::now_seconds() - t0;
    result.json["seconds"] = seconds;
    if (result.json.contains("targets")) {
      for (auto t : result.json["targets"]) {
        t["scenario"] = scenario.name;
        targets.push_back(t);
      }
    }
    results[scenario.name] = result.json;
    text << result.text << "(" << scenario.name << ": " << gcbench::fmt(seconds, 1) << " s, load average "
         << gcbench::fmt(gcbench::load_average(), 2) << ")\n\n"
         << std::flush;
  }
  report["scenarios"] = results;
  report["targets"] = targets;
  report["all_targets_hold"] =
      std::all_of(targets.begin(), targets.end(), [](const Json& t) { return t["holds"].get<bool>(); });
}

int run_command(const Command& command) {
  const CommonSettings& common = command.common;
  gcbench::set_threads(common.threads, common.blas_threads);
  // With --json, stdout carries only the JSON object.
  std::ostream& text = common.json ? std::cerr : std::cout;
  const Json threads = threads_json();
  print_header(text, command.name, threads);
  Json report{{"program", "gradcache-bench"},
              {"scenario", command.name},
              {"gradcache_version", GRADCACHE_VERSION},
              {"torch_version", torch_version()},
              {"threads", threads}};
  const double start = gcbench::now_seconds();
  run_scenarios(command, report, text);
  report["seconds"] = gcbench::now_seconds() - start;
  if (!common.plot.empty()) {
    const auto files = gcbench::write_plot(common.plot, report["scenarios"]);
    report["plot_files"] = files;
    text << "plot:";
    for (const auto& f : files) text << " " << f;
    text << "\n";
  }
  if (command.scenarios.size() > 1) {
    text << "targets:\n";
    for (const auto& t : report["targets"]) {
      text << "  [" << t["scenario"].get<std::string>() << "] " << gcbench::target_line(t) << "\n";
    }
    text << "total " << gcbench::fmt(report["seconds"].get<double>(), 1) << " s\n";
  }
  if (common.json) std::cout << report.dump(2) << std::endl;
  // What ran and what was written, for a smoke test; says nothing about the targets.
  const size_t n = command.scenarios.size();
  text << "gradcache-bench " << command.name << ": ran " << n << (n == 1 ? " scenario" : " scenarios")
       << (common.json ? ", wrote the JSON" : "") << (common.plot.empty() ? "" : ", wrote the plot") << std::endl;
  return 0;
}

// Hidden subcommands `child-memory` and `child-distributed`: one measurement in a fresh
// process, its JSON on stdout. The parent hands its settings over as flags.
template <class Settings>
void add_child_command(CLI::App& app, const std::string& name, std::function<Json(const Settings&)> measure) {
  auto settings = std::make_shared<Settings>();
  auto table = std::make_shared<OptionTable>();
  settings->add_options(*table);
  auto* sub = app.add_subcommand(name, "one measurement in a child process (internal)")->group("");
  table->declare(*sub);
  sub->callback([settings, measure] { std::cout << measure(*settings).dump() << std::endl; });
}

int run(int argc, char** argv) {
  // First, before any tensor exists: every CPU tensor from here on is counted.
  gradcache::CpuMemoryTracker::install();
  CLI::App app("gradcache-bench: what the gradient cache costs and whether it is exact "
               "(SCENARIO --help: its flags and defaults)");
  app.require_subcommand(1);
  ScenarioSettings settings;
  const auto scenarios = settings.scenarios();
  std::list<Command> commands;  // stable addresses: the options point into them
  for (const auto& s : scenarios) commands.push_back({s.name, {s}, {}, nullptr});
  commands.push_back({"all", {}, {}, nullptr});
  for (const auto& s : scenarios) {
    if (s.in_all) commands.back().scenarios.push_back(s);
  }
  for (auto& command : commands) {
    command.common.program = self_path(argv[0]);
    if (command.name == "streaming") command.common.blas_threads = 0;  // as its own program had it
    OptionTable table;
    add_common_options(table, command.common);
    for (const auto& s : command.scenarios) s.add_options(table);
    const std::string about = command.name == "all" ? "every scenario in turn (but streaming and soak)"
                                                    : command.scenarios.front().about;
    command.app = app.add_subcommand(command.name, about);
    table.declare(*command.app);
  }
  add_child_command<gcbench::MemoryPointSettings>(app, "child-memory", gcbench::measure_memory_point);
  add_child_command<gcbench::DistributedPointSettings>(app, "child-distributed", gcbench::measure_distributed_point);
  add_child_command<gcbench::ShardedLossPointSettings>(app, "child-sharded-loss", gcbench::measure_sharded_loss_point);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  for (const auto& command : commands) {
    if (command.app->parsed()) return run_command(command);
  }
  return 0;  // a child command: its callback has run
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const c10::Error& e) {
    std::cerr << "gradcache-bench: " << e.what_without_backtrace() << "\n";
  } catch (const std::exception& e) {
    std::cerr << "gradcache-bench: " << e.what() << "\n";
  }
  return 1;
}
