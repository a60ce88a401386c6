// `gradcache eval`: a checkpoint, a corpus, queries and judgements -> retrieval metrics. The
// flags come from the settings table (retriever/evaluate_checkpoint.cpp); --json, how to
// print, is the command's own.
#include "commands.h"
#include "setting_flags.h"

#include "retriever/evaluate.h"
#include "retriever/evaluate_checkpoint.h"

#include <csignal>
#include <iostream>

namespace gradcache {
namespace cli {
namespace {

const char* signal_name(int signal) { return signal == SIGINT ? "SIGINT" : signal == SIGTERM ? "SIGTERM" : "a signal"; }

void print(const retriever::EvalReport& report, bool json) {
  if (json) {
    auto j = retriever::to_json(report.metrics);
    j["eval"] = report.data_name;
    j["checkpoint"] = report.checkpoint;
    j["step"] = report.step;
    std::cout << j.dump(2) << std::endl;
    return;
  }
  std::cout << report.data_name << " (" << report.metrics.queries << " queries, " << report.corpus_size
            << " passages)\n"
            << retriever::format_metrics_table({{"step " + std::to_string(report.step), report.metrics}});
}

}  // namespace

std::function<int()> add_eval_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("eval", "Evaluate a checkpoint: encode the corpus and the queries, rank every "
                                         "document for every query (exact), print Recall@1/10/100, MRR@10, "
                                         "nDCG@10. Without --corpus: the WordNet split of the run's data.");
  auto given = add_setting_flags(*cmd, retriever::eval_settings(), retriever::EvalSettings{});
  auto json = std::make_shared<bool>(false);
  cmd->add_flag("--json", *json, "Print the metrics as JSON instead of a table");

  return [given, json]() {
    retriever::EvalSettings settings;
    try {
      settings = retriever::eval_settings().build(retriever::EvalSettings{}, nlohmann::json::object(), given->values);
    } catch (const retriever::SettingsError& e) {
      std::cerr << "gradcache eval: error: " << e.what() << std::endl;
      return 2;  // a usage error, like the parser's
    }
    retriever::EvalControl control;
    control.log = [](const std::string& line) { std::cerr << "gradcache eval: " << line << std::endl; };
    control.stop = &stop_signal;
    try {
      print(retriever::evaluate_checkpoint(settings, control), *json);
    } catch (const retriever::EvalStopped& stopped) {
      // As train: 128 + the signal (130 for SIGINT, 143 for SIGTERM); nothing printed on stdout.
      std::cerr << "gradcache eval: stopped by " << signal_name(stopped.signal())
                << " before the evaluation finished; no metrics were printed" << std::endl;
      return 128 + stopped.signal();
    }
    return 0;
  };
}

}  // namespace cli
}  // namespace gradcache
