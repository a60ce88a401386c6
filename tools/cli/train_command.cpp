// `gradcache train`: flags -> TrainConfig -> retriever::train. The flags come from the
// settings table (retriever/config/train_config.cpp); only the flags that are not settings of the
// run (--config, --resume, ...) are declared here.
#include "commands.h"
#include "setting_flags.h"

#include "files/atomic_file.h"
#include "retriever/config/similarity_settings.h"
#include "retriever/launch/local_launcher.h"
#include "retriever/launch/torchrun.h"
#include "retriever/model/encode_all.h"
#include "retriever/train/trainer.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>

namespace gradcache {
namespace cli {
namespace {

using retriever::TrainConfig;

// Flags of the command that are not settings of the run.
struct RunFlags {
  std::string config_file;
  bool resume = false, overwrite = false;
  double dist_timeout = 300;  // seconds
  std::string nproc;          // "": not given (one process, or torchrun's)
};

void add_run_flags(CLI::App& cmd, RunFlags& flags) {
  cmd.add_option("--config", flags.config_file, "JSON file of settings (keys as in config.json); flags override it");
  auto* run = cmd.add_option_group("Starting and resuming");
  run->add_flag("--resume", flags.resume, "Continue the run in --output from its checkpoint");
  run->add_flag("--overwrite", flags.overwrite, "Start afresh even if --output holds a run");
  auto* dist = cmd.add_option_group(
      "Several processes",
      "--nproc N on this machine; on several machines, torchrun starts the processes: torchrun "
      "--nnodes M --nproc_per_node N --rdzv_endpoint HOST:PORT --no_python gradcache train ... (torchrun 1.13, "
      "Debian's, spells it --no_python; torchrun 2.x --no-python)");
  dist->add_option("--nproc", flags.nproc,
                   "Processes on this machine, started and watched by this one (default 1); auto: the cores "
                   "divided by the threads per process")
      ->type_name("N|auto")
      ->check([](const std::string& value) { return retriever::check_process_count(value); });
  dist->add_option("--dist-timeout", flags.dist_timeout,
                   "Seconds a process waits for the others before it gives up with an error")
      ->capture_default_str()
      ->check([](const std::string& value) -> std::string {
        // CLI::PositiveNumber's message printed the range of a double, ~300 digits; and the
        // seconds become milliseconds in an int64, so they are bounded (a week is plenty).
        double seconds = 0;
        if (!CLI::detail::lexical_cast(value, seconds) || !(seconds > 0) || seconds > 604800)
          return "--dist-timeout " + value + ": give seconds, more than 0 and at most 604800 (a week)";
        return "";
      });
}

// defaults < --config file < the flags given. Throws SettingsError naming the file or flag.
TrainConfig config_from(const RunFlags& flags, const GivenFlags& given) {
  nlohmann::json file = nlohmann::json::object();
  if (!flags.config_file.empty()) file = retriever::read_settings_file(flags.config_file);
  std::vector<std::string> notices = given.notices;
  TrainConfig c = retriever::build_train_config(file, given.values, &notices);
  for (const auto& notice : notices) std::cerr << "gradcache train: note: " << notice << std::endl;
  return c;
}

// Started by torchrun: the group of its processes.
std::shared_ptr<distributed::ProcessGroup> torchrun_group(const RunFlags& flags, const TrainConfig& c) {
  if (!retriever::started_by_torchrun()) return nullptr;
  return std::make_shared<distributed::ProcessGroup>(distributed::ProcessGroup::create(
      retriever::torchrun_rendezvous(),
      distributed::ProcessGroupOptions()
          .timeout(std::chrono::milliseconds(static_cast<int64_t>(flags.dist_timeout * 1000)))
          .device(c10::Device(c.machine.device))));
}

// The threads each process uses: what --nproc auto divides the cores by.
int threads_per_process(const TrainConfig& c) {
  return static_cast<int>(std::max<int64_t>({1, c.machine.threads, c.machine.blas_threads}));
}

// --nproc N > 1: this process starts N ranks of the same command (without --nproc) on
// loopback, as torchrun would, and returns their combined exit status.
int launch_local_ranks(const RunFlags& flags, const TrainConfig& c, int processes) {
  retriever::LocalLaunch launch;
  launch.arguments = retriever::without_flag(retriever::own_command_line(), "--nproc");
  launch.processes = processes;
  launch.threads_per_rank = threads_per_process(c);
  launch.grace = std::chrono::milliseconds(static_cast<int64_t>(flags.dist_timeout * 1000));
  launch.stop = &stop_signal;
  launch.name = "gradcache train";
  std::cerr << "gradcache train: note: " << processes << " processes of " << launch.threads_per_rank
            << " thread(s) each (--nproc " << flags.nproc << ")" << std::endl;
  return retriever::run_local_ranks(launch);
}

int report(const retriever::TrainResult& result) {
  if (result.trained) {
    std::vector<std::pair<std::string, retriever::RetrievalMetrics>> rows;
    if (result.untrained) rows.emplace_back(result.untrained_name, *result.untrained);
    rows.emplace_back("trained", *result.trained);
    for (auto& row : retriever::prefix_rows("trained", result.trained_prefixes)) rows.push_back(row);
    if (result.trained_reranked) {
      rows.emplace_back("trained, top " + std::to_string(result.config.similarity.rerank_k) + " re-ranked by Phi",
                        *result.trained_reranked);
    }
    if (result.bm25) rows.emplace_back("bm25", *result.bm25);
    std::cout << "\n" << result.eval_name << " (" << result.trained->queries << " queries)\n"
              << retriever::format_metrics_table(rows);
  }
  if (!result.best.is_null()) {
    std::printf("\nbest dev %s %.4f at step %lld%s: %s\n", result.config.selection.metric.c_str(),
                result.best["best_value"].get<double>(),
                static_cast<long long>(result.best["best_step"].get<int64_t>()),
                result.stopped_early ? " (stopped early: --patience)" : "",
                result.best["checkpoint"].get<std::string>().c_str());
  }
  const auto& used = result.config.batching;
  const bool accumulate = used.mode == retriever::TrainMode::Accumulate;
  std::printf("\n%lld steps of %lld pairs (mode %s, %s of %lld) in %.0f s; peak memory %.0f MiB\n"
              "checkpoint: %s\n",
              static_cast<long long>(result.progress.step), static_cast<long long>(used.batch_size),
              retriever::to_string(used.mode).c_str(), accumulate ? "sub-batches" : "chunks",
              static_cast<long long>(accumulate ? used.sub_batch_size : used.chunk_size), result.wall_seconds,
              result.peak_rss_mb, result.checkpoint.c_str());
  return 0;
}

}  // namespace

std::function<int()> add_train_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("train", "Train a bi-encoder retriever with a large contrastive batch. Without "
                                          "--train-file: the WordNet reverse dictionary (query: a definition; "
                                          "passage: its words), evaluated on its test split.");
  auto given = add_setting_flags(*cmd, retriever::train_settings(), TrainConfig{});
  auto flags = std::make_shared<RunFlags>();
  add_run_flags(*cmd, *flags);

  return [flags, given]() {
    TrainConfig c;
    try {
      c = config_from(*flags, *given);
    } catch (const retriever::SettingsError& e) {
      std::cerr << "gradcache train: error: " << e.what() << std::endl;
      return 2;  // a usage error, like the parser's
    }
    retriever::validate(c);  // a value out of range: status 1, with the flag named
    if (!flags->nproc.empty() && retriever::started_by_torchrun()) {
      std::cerr << "gradcache train: error: --nproc cannot be combined with torchrun (WORLD_SIZE is set): "
                   "drop --nproc or launch without torchrun"
                << std::endl;
      return 2;
    }
    const std::string nproc = flags->nproc.empty() ? "1" : flags->nproc;
    const int processes = retriever::resolve_process_count(nproc, threads_per_process(c));
    const int world = retriever::started_by_torchrun() ? retriever::torchrun_rendezvous().world_size : processes;
    if (auto conflict = retriever::similarity_process_conflict(c, world)) {
      std::cerr << "gradcache train: error: " << *conflict << std::endl;
      return 2;
    }
    if (processes > 1) return launch_local_ranks(*flags, c, processes);
    retriever::TrainOptions options;
    options.resume = flags->resume;
    options.overwrite = flags->overwrite;
    options.stop = &stop_signal;
    options.terminal = isatty(STDERR_FILENO);
    options.group = torchrun_group(*flags, c);
    retriever::TrainResult result;
    try {
      result = retriever::train(c, options);
    } catch (const retriever::StoppedBySignal& stopped) {  // during the set-up or the evaluation before training
      std::cerr << "gradcache train: stopped by " << retriever::signal_name(stopped.signal())
                << " before training began; nothing of this run was written" << std::endl;
      return 128 + stopped.signal();
    } catch (const std::exception&) {
      // Every rank gets the signal; one that stops first (rank 0, in the tokenizer's training)
      // fails the others' next collective: the same stop, which that rank has reported.
      if (!options.group || stop_signal.load() == 0) throw;
      return 128 + stop_signal.load();
    }
    if (result.interrupted) return 128 + (result.stop_signal ? result.stop_signal : 2);
    if (options.group && options.group->rank() != 0) return 0;  // rank 0 reports
    return report(result);
  };
}

}  // namespace cli
}  // namespace gradcache
