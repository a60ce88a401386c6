#include "retriever/data/task.h"

#include "retriever/data/data_files.h"
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

}  // namespace

EvalData wordnet_split(RetrievalData& data, const std::string& split) {
  if (split != "test" && split != "dev") throw std::invalid_argument("--split must be test or dev, got '" + split + "'");
  EvalData eval;
  eval.name = "wordnet " + split;
  eval.corpus = data.corpus;
  eval.queries = split == "test" ? data.test_queries : data.dev_queries;
  eval.qrels = split == "test" ? data.test_qrels : data.dev_qrels;
  return eval;
}

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

EvalData load_wordnet_eval(const std::string& wordnet_dir, const std::string& split, bool quick) {
  WordNetOptions options;
  options.dir = wordnet_dir;
  auto data = load_wordnet(options);
  auto eval = wordnet_split(data, split);
  return quick ? quick_eval(std::move(eval)) : eval;
}

void cut_to_quick(TaskData& task) {
  if (task.train->size() > kQuickTrain) {  // every n-th example: all parts of the data
    std::vector<size_t> rows;
    for (size_t i = 0; i < kQuickTrain; ++i) rows.push_back(i * task.train->size() / kQuickTrain);
    task.train = task.train->subset(rows);
  }
  if (task.eval) task.eval = quick_eval(std::move(*task.eval));
  if (task.dev) task.dev = quick_eval(std::move(*task.dev));
}

}  // namespace retriever
}  // namespace gradcache
