// gradcache-bench: what the gradient cache costs and whether it is exact.
//
//   gradcache-bench SCENARIO [flags]     SCENARIO: exactness memory overhead retain chunk-size
//                                                  threads precision all
//   gradcache-bench SCENARIO --help      its flags and their defaults
//
// A table on stdout by default; with --json exactly one JSON object on stdout and all human
// text on stderr. --plot FILE.png draws the memory and time / memory curves with gnuplot.
#include "bench.h"

#include <gradcache/version.h>
#include <torch/version.h>

#include <unistd.h>

#include <climits>
#include <iostream>
#include <thread>

namespace {

using gcbench::Json;
using gcbench::OptionTable;

// Every scenario: its name, what it does, and how to add its options and run it. The
// settings live in this struct, one per scenario (no global settings).
struct Scenarios {
  gcbench::ExactnessSettings exactness;
  gcbench::MemorySettings memory;
  gcbench::OverheadSettings overhead;
  gcbench::RetainSettings retain;
  gcbench::ChunkSizeSettings chunk_size;
  gcbench::ThreadsSettings threads;
  gcbench::DistributedSettings distributed;
  gcbench::PrecisionSettings precision;

  struct Entry {
    std::string name, about;
    std::function<void(OptionTable&)> add_options;
    std::function<gcbench::ScenarioResult(const gcbench::CommonSettings&)> run;
  };
  std::vector<Entry> entries() {
    return {
        {"exactness", "cache vs full-batch gradients, max relative error (Transformer with dropout, MLP eval)",
         [this](OptionTable& t) { exactness.add_options(t); },
         [this](const gcbench::CommonSettings& c) { return gcbench::run_exactness(exactness, c); }},
        {"memory", "peak memory vs batch size: full, accumulate, cache (child process per point)",
         [this](OptionTable& t) { memory.add_options(t); },
         [this](const gcbench::CommonSettings& c) { return gcbench::run_memory(memory, c); }},
        {"overhead", "step time: cache (nothing retained) vs accumulate vs full",
         [this](OptionTable& t) { overhead.add_options(t); },
         [this](const gcbench::CommonSettings& c) { return gcbench::run_overhead(overhead, c); }},
        {"retain", "time / memory trade-off of retain_chunks and memory_budget",
         [this](OptionTable& t) { retain.add_options(t); },
         [this](const gcbench::CommonSettings& c) { return gcbench::run_retain(retain, c); }},
        {"chunk-size", "find_chunk_size: chosen chunk size and measured peak vs budget",
         [this](OptionTable& t) { chunk_size.add_options(t); },
         [this](const gcbench::CommonSettings& c) { return gcbench::run_chunk_size(chunk_size, c); }},
        {"threads", "cache step time for intra-op x OpenBLAS threads in {1,2} x {1,2}",
         [this](OptionTable& t) { threads.add_options(t); },
         [this](const gcbench::CommonSettings& c) { return gcbench::run_threads(threads, c); }},
        {"distributed", "one step of the same batch in 1 and 2 processes (Gloo): time, memory, bytes all-reduced",
         [this](OptionTable& t) { distributed.add_options(t); },
         [this](const gcbench::CommonSettings& c) { return gcbench::run_distributed(distributed, c); }},
        {"precision", "cache step in fp32 vs bf16 autocast: time (interleaved), peak memory, gradient error",
         [this](OptionTable& t) { precision.add_options(t); },
         [this](const gcbench::CommonSettings& c) { return gcbench::run_precision(precision, c); }},
    };
  }
};

void add_common_options(OptionTable& t, gcbench::CommonSettings& c) {
  t.add_switch("--json", &c.json, "one JSON object on stdout (human text on stderr)");
  t.add_string("--plot", &c.plot, "draw the curves into this PNG (data + gnuplot script next to it)");
  t.add_int("--threads", &c.threads, "LibTorch intra-op threads");
  t.add_int("--blas-threads", &c.blas_threads, "OpenBLAS threads (0: OpenBLAS's default)");
  t.add_switch("--help", &c.help, "this help");
}

std::string usage(Scenarios& scenarios) {
  std::string text = "usage: gradcache-bench SCENARIO [flags]   (gradcache-bench SCENARIO --help: its flags)\n\n";
  for (const auto& e : scenarios.entries()) {
    std::string name = "  " + e.name;
    name.resize(14, ' ');
    text += name + e.about + "\n";
  }
  text += "  all           every scenario in turn\n\ncommon flags:\n";
  gcbench::CommonSettings c;
  OptionTable t;
  add_common_options(t, c);
  return text + t.help();
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

// `gradcache-bench --child memory|distributed [flags]`: one measurement, its JSON on stdout.
int child_main(const std::vector<std::string>& args) {
  OptionTable t;
  if (!args.empty() && args[0] == "memory") {
    gcbench::MemoryPointSettings s;
    s.add_options(t);
    t.parse({args.begin() + 1, args.end()});
    std::cout << gcbench::measure_memory_point(s).dump() << std::endl;
    return 0;
  }
  if (!args.empty() && args[0] == "distributed") {
    gcbench::DistributedPointSettings s;
    s.add_options(t);
    t.parse({args.begin() + 1, args.end()});
    std::cout << gcbench::measure_distributed_point(s).dump() << std::endl;
    return 0;
  }
  std::cerr << "gradcache-bench: --child expects 'memory' or 'distributed'\n";
  return 2;
}

int run(int argc, char** argv) {
  // First, before any tensor exists: every CPU tensor from here on is counted.
  gradcache::CpuMemoryTracker::install();
  std::vector<std::string> args(argv + 1, argv + argc);
  if (!args.empty() && args[0] == "--child") return child_main({args.begin() + 1, args.end()});

  Scenarios scenarios;
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    std::cout << usage(scenarios);
    return args.empty() ? 2 : 0;
  }
  const std::string name = args[0];
  auto entries = scenarios.entries();
  std::vector<Scenarios::Entry> chosen;
  for (const auto& e : entries) {
    if (name == "all" || e.name == name) chosen.push_back(e);
  }
  if (chosen.empty()) {
    std::cerr << "gradcache-bench: unknown scenario '" << name << "'\n\n" << usage(scenarios);
    return 2;
  }

  gcbench::CommonSettings common;
  common.program = self_path(argv[0]);
  OptionTable table;
  add_common_options(table, common);
  for (const auto& e : chosen) e.add_options(table);
  try {
    table.parse({args.begin() + 1, args.end()});
  } catch (const std::invalid_argument& e) {
    std::cerr << "gradcache-bench " << name << ": " << e.what() << "\n";
    return 2;
  }
  if (common.help) {
    std::cout << "usage: gradcache-bench " << name << " [flags]\n\n" << table.help();
    return 0;
  }
  gcbench::set_threads(common.threads, common.blas_threads);

  // With --json, stdout carries only the JSON object.
  std::ostream& text = common.json ? std::cerr : std::cout;
  const Json threads = threads_json();
  text << "gradcache-bench " << name << " | gradcache " << GRADCACHE_VERSION << " | LibTorch "
       << TORCH_VERSION_MAJOR << "." << TORCH_VERSION_MINOR << "." << TORCH_VERSION_PATCH
       << " CPU | threads: intra-op " << threads["intra_op"] << ", OpenBLAS "
       << (gcbench::openblas_found() ? std::to_string(threads["openblas"].get<int64_t>()) : std::string("not found"))
       << ", " << threads["hardware_concurrency"] << " cores, load average " << gcbench::fmt(gcbench::load_average(), 2)
       << "\n\n"
       << std::flush;

  Json report{{"program", "gradcache-bench"},
              {"scenario", name},
              {"gradcache_version", GRADCACHE_VERSION},
              {"torch_version", std::to_string(TORCH_VERSION_MAJOR) + "." + std::to_string(TORCH_VERSION_MINOR) + "." +
                                    std::to_string(TORCH_VERSION_PATCH)},
              {"threads", threads}};
  Json results = Json::object(), targets = Json::array();
  const double start = gcbench::now_seconds();
  for (const auto& e : chosen) {
    const double t0 = gcbench::now_seconds();
    auto result = e.run(common);
    const double seconds = gcbench::now_seconds() - t0;
    result.json["seconds"] = seconds;
    if (result.json.contains("targets")) {
      for (auto t : result.json["targets"]) {
        t["scenario"] = e.name;
        targets.push_back(t);
      }
    }
    results[e.name] = result.json;
    result.json["load_average_1min_after"] = gcbench::load_average();
    text << result.text << "(" << e.name << ": " << gcbench::fmt(seconds, 1) << " s, load average "
         << gcbench::fmt(gcbench::load_average(), 2) << ")\n\n"
         << std::flush;
  }
  report["scenarios"] = results;
  report["targets"] = targets;
  report["all_targets_hold"] = std::all_of(targets.begin(), targets.end(), [](const Json& t) { return t["holds"].get<bool>(); });
  report["seconds"] = gcbench::now_seconds() - start;

  if (!common.plot.empty()) {
    const auto files = gcbench::write_plot(common.plot, results);
    report["plot_files"] = files;
    text << "plot:";
    for (const auto& f : files) text << " " << f;
    text << "\n";
  }
  if (chosen.size() > 1) {
    text << "targets:\n";
    for (const auto& t : targets) text << "  [" << t["scenario"].get<std::string>() << "] " << gcbench::target_line(t) << "\n";
    text << "total " << gcbench::fmt(report["seconds"].get<double>(), 1) << " s\n";
  }
  if (common.json) std::cout << report.dump(2) << std::endl;
  return 0;
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
