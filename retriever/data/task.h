// The data a training run uses: the built-in WordNet task or the user's files (which of them a
// run's settings name: run/load_task.h).
#pragma once

#include "retriever/data/data_files.h"
#include "retriever/data/judgements.h"
#include "retriever/data/text_data.h"
#include "retriever/data/training_examples.h"
#include "retriever/data/wordnet.h"

#include <optional>
#include <string>
#include <vector>

namespace gradcache {
namespace retriever {

struct EvalData {
  std::string name;  ///< shown in tables, e.g. "wordnet test"
  TextCollection corpus, queries;
  Qrels qrels;
};

struct TaskData {
  /// A --train-file indexed (its records read when a batch needs them), or WordNet's pairs.
  std::shared_ptr<const TrainingExamples> train;
  std::optional<EvalData> eval;
  /// Dev data for model selection (only with --eval-every): WordNet's dev split, the --dev-*
  /// files, or the training pairs held out by --dev-fraction (no longer in `train`).
  std::optional<EvalData> dev;
  /// What reading the files skipped (--on-bad-line skip), one line per file that lost lines,
  /// for the program to show: "PATH: skipped N of M lines ...; first: PATH:LINE: reason".
  std::vector<std::string> notices;
};

/// --quick: a small deterministic subset of the training examples (every n-th, so that every
/// part of the data is in it) and of the evaluation and dev queries (their judged passages
/// kept in the reduced corpus), so that a smoke test runs in seconds.
void cut_to_quick(TaskData& task);

/// An evaluation set from its files (the corpus, the queries and their judgements), named after
/// the queries file. Adds to `notices` what reading skipped (--on-bad-line skip) and the
/// judgements that name ids not in the other files; throws DataError when no query is left to
/// evaluate (check_judgements), before anything is encoded.
EvalData read_eval_files(const JudgementFiles& files, OnBadLine on_bad, std::vector<std::string>& notices);

/// Training pairs: those of `train_file`, read with `read`, or WordNet's train split (then
/// `wordnet` holds the rest of WordNet's data: its corpus and its dev and test splits).
struct TrainingPairs {
  std::vector<TrainExample> examples;
  std::optional<RetrievalData> wordnet;
};
TrainingPairs load_training_pairs(const std::string& train_file, const std::string& wordnet_dir,
                                  const DataFiles& read);

/// WordNet's "test" or "dev" split as evaluation data: its queries ranked against the whole
/// corpus. Throws std::invalid_argument for another split name.
EvalData wordnet_split(RetrievalData& data, const std::string& split);

/// The WordNet evaluation split alone (for `gradcache eval` without files).
EvalData load_wordnet_eval(const std::string& wordnet_dir, const std::string& split, bool quick);

}  // namespace retriever
}  // namespace gradcache
