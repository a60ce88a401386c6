#include "retriever/run/load_task.h"

#include "retriever/data/data_files.h"
#include "retriever/data/dev_split.h"
#include "retriever/data/wordnet.h"
#include "retriever/files/comma_items.h"

namespace gradcache::retriever {
namespace {

// The dev data of --train-file data: the --dev-* files, or pairs held out of `train` (which then
// holds the rest in memory: the held-out queries are ranked against every passage of the file).
EvalData user_dev_data(const TrainConfig& config, std::shared_ptr<const TrainingExamples>& train,
                       std::vector<std::string>& notices) {
  if (config.selection.dev_fraction > 0) {
    std::vector<TrainExample> examples = all_examples(*train);
    auto dev = hold_out_dev(examples, config.selection.dev_fraction, config.training.seed, config.data.train_file);
    train = examples_in_memory(std::move(examples));
    return dev;
  }
  const auto& corpus = config.selection.dev_corpus.empty() ? config.data.eval_corpus : config.selection.dev_corpus;
  auto dev = read_eval_files({corpus, config.selection.dev_queries, config.selection.dev_qrels},
                             config.data.on_bad_line, notices);
  dev.name = "dev " + dev.name;
  return dev;
}

}  // namespace

TaskData load_task(const TrainConfig& config, const std::string& split) {
  TaskData task;
  const auto on_bad = config.data.on_bad_line;
  const DataFiles read(on_bad, task.notices, comma_items(config.data.columns));
  if (config.data.train_file.empty()) {
    auto pairs = load_training_pairs("", config.data.wordnet_dir, read);
    task.train = examples_in_memory(std::move(pairs.examples));
    if (config.eval.enabled) task.eval = wordnet_split(*pairs.wordnet, split);
    if (config.selection.eval_every > 0) task.dev = wordnet_split(*pairs.wordnet, "dev");
  } else {
    const auto files = training_files(config.data.train_file);
    if (files.size() == 1) {
      task.train = read.indexed_train_examples(files.front());
    } else {  // several data sets, each indexed, one after the other (--mix draws each batch from one)
      std::vector<std::shared_ptr<const TrainingExamples>> parts;
      for (const auto& file : files) parts.push_back(read.indexed_train_examples(file));
      task.train = concatenated_examples(std::move(parts), training_file_names(files));
    }
    if (config.eval.enabled && !config.data.eval_corpus.empty()) {
      task.eval = read_eval_files({config.data.eval_corpus, config.data.eval_queries, config.data.eval_qrels}, on_bad,
                                  task.notices);
    }
    if (config.selection.eval_every > 0) task.dev = user_dev_data(config, task.train, task.notices);
  }
  if (config.quick) cut_to_quick(task);
  return task;
}

}  // namespace gradcache::retriever
