#include "retriever/data/task.h"

#include "retriever/data/data_files.h"
#include "retriever/data/dev_split.h"
#include "retriever/data/wordnet.h"

#include <stdexcept>

namespace gradcache {
namespace retriever {
namespace {

// --quick: a small, fixed subset, so a smoke test runs in seconds. Queries keep their
// relevant passages in the reduced corpus.
constexpr size_t kQuickTrain = 4096, kQuickQueries = 300, kQuickCorpus = 5000;

EvalData quick_eval(EvalData full) {
  EvalData out;
  out.name = full.name + " (quick)";
  for (size_t q = 0; q < full.queries.size() && out.queries.size() < kQuickQueries; ++q) {
    out.queries.add(full.queries.ids[q], full.queries.texts[q]);
  }
  auto add_doc = [&](size_t row) {
    if (!out.corpus.index.count(full.corpus.ids[row])) out.corpus.add(full.corpus.ids[row], full.corpus.texts[row]);
  };
  for (const auto& qid : out.queries.ids) {
    auto judged = full.qrels.find(qid);
    if (judged == full.qrels.end()) continue;
    out.qrels[qid] = judged->second;
    for (const auto& [doc, grade] : judged->second) {
      auto row = full.corpus.index.find(doc);
      if (row != full.corpus.index.end()) add_doc(row->second);
    }
  }
  for (size_t row = 0; row < full.corpus.size() && out.corpus.size() < kQuickCorpus; ++row) add_doc(row);
  return out;
}

EvalData wordnet_split(RetrievalData& data, const std::string& split) {
  if (split != "test" && split != "dev") throw std::invalid_argument("--split must be test or dev, got '" + split + "'");
  EvalData eval;
  eval.name = "wordnet " + split;
  eval.corpus = data.corpus;
  eval.queries = split == "test" ? data.test_queries : data.dev_queries;
  eval.qrels = split == "test" ? data.test_qrels : data.dev_qrels;
  return eval;
}

}  // namespace

EvalData read_eval_files(const JudgementFiles& files, OnBadLine on_bad, std::vector<std::string>& notices) {
  const DataFiles read(on_bad, notices);
  EvalData eval;
  eval.name = files.queries;
  eval.corpus = read.collection(files.corpus);
  eval.queries = read.collection(files.queries);
  eval.qrels = read.qrels(files.qrels);
  const auto unused = check_judgements(eval.corpus, eval.queries, eval.qrels, files);
  notices.insert(notices.end(), unused.begin(), unused.end());
  return eval;
}

TrainingPairs load_training_pairs(const std::string& train_file, const std::string& wordnet_dir,
                                  const DataFiles& read) {
  TrainingPairs pairs;
  if (train_file.empty()) {
    WordNetOptions options;
    options.dir = wordnet_dir;
    pairs.wordnet = load_wordnet(options);
    pairs.examples = std::move(pairs.wordnet->train);
  } else {
    pairs.examples = read.train_examples(train_file);
  }
  return pairs;
}

namespace {

// The dev data of --train-file data: the --dev-* files, or pairs held out of `train`.
EvalData user_dev_data(const TrainConfig& config, std::vector<TrainExample>& train, std::vector<std::string>& notices) {
  if (config.selection.dev_fraction > 0)
    return hold_out_dev(train, config.selection.dev_fraction, config.training.seed, config.data.train_file);
  const auto& corpus = config.selection.dev_corpus.empty() ? config.data.eval_corpus : config.selection.dev_corpus;
  auto dev = read_eval_files({corpus, config.selection.dev_queries, config.selection.dev_qrels},
                             config.data.on_bad_line, notices);
  dev.name = "dev " + dev.name;
  return dev;
}

}  // namespace

EvalData load_wordnet_eval(const std::string& wordnet_dir, const std::string& split, bool quick) {
  WordNetOptions options;
  options.dir = wordnet_dir;
  auto data = load_wordnet(options);
  auto eval = wordnet_split(data, split);
  return quick ? quick_eval(std::move(eval)) : eval;
}

TaskData load_task(const TrainConfig& config, const std::string& split) {
  TaskData task;
  const auto on_bad = config.data.on_bad_line;
  auto pairs = load_training_pairs(config.data.train_file, config.data.wordnet_dir, DataFiles(on_bad, task.notices));
  task.train = std::move(pairs.examples);
  if (pairs.wordnet) {
    if (config.eval.enabled) task.eval = wordnet_split(*pairs.wordnet, split);
    if (config.selection.eval_every > 0) task.dev = wordnet_split(*pairs.wordnet, "dev");
  } else {
    if (config.eval.enabled && !config.data.eval_corpus.empty()) {
      task.eval = read_eval_files({config.data.eval_corpus, config.data.eval_queries, config.data.eval_qrels}, on_bad,
                                  task.notices);
    }
    if (config.selection.eval_every > 0) task.dev = user_dev_data(config, task.train, task.notices);
  }
  if (config.quick) {
    if (task.train.size() > kQuickTrain) {  // every n-th example: all parts of the data
      std::vector<TrainExample> subset;
      for (size_t i = 0; i < kQuickTrain; ++i) subset.push_back(std::move(task.train[i * task.train.size() / kQuickTrain]));
      task.train = std::move(subset);
    }
    if (task.eval) task.eval = quick_eval(std::move(*task.eval));
    if (task.dev) task.dev = quick_eval(std::move(*task.dev));
  }
  return task;
}

}  // namespace retriever
}  // namespace gradcache
