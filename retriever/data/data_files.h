// Reading the user's data files under one --on-bad-line choice, with one report of what each
// file lost to it: every command that reads training pairs, corpora, queries or judgements
// (train, eval, mine, encode) says the same thing in the same words.
#pragma once

#include "retriever/data/text_data.h"
#include "retriever/data/training_examples.h"

#include <optional>
#include <string>
#include <vector>

namespace gradcache {
namespace retriever {

/// The files of --train-file: one path, or several separated by commas (several data sets, mixed
/// by --mix). A path that exists as it is stays one file, commas and all.
std::vector<std::string> training_files(const std::string& train_file);
/// What metrics and summary.json call each of `files`: its name without the extension (a
/// directory's name), with " (2)", " (3)" after a name taken already.
std::vector<std::string> training_file_names(const std::vector<std::string>& files);

/// "PATH: skipped N of M lines (--on-bad-line skip); first: PATH:LINE: reason", or nothing when
/// the file lost no line.
std::optional<std::string> skipped_lines_notice(const std::string& path, const ReadStats& stats);

/// Reads files with one OnBadLine, adding skipped_lines_notice() of each file to `notices`.
class DataFiles {
 public:
  /// `columns`: which columns of Parquet/Arrow training data are the query, the positive and the
  /// negatives (--columns; arrow_data.h), empty to find them by name.
  DataFiles(OnBadLine on_bad, std::vector<std::string>& notices, std::vector<std::string> columns = {})
      : on_bad_(on_bad), notices_(&notices), columns_(std::move(columns)) {}

  /// Training pairs in memory (Parquet/Arrow data too: read as index_train_file reads them).
  std::vector<TrainExample> train_examples(const std::string& path) const;
  /// The file indexed (index_train_file): its records are read when needed.
  std::shared_ptr<const TrainingExamples> indexed_train_examples(const std::string& path) const;
  TextCollection collection(const std::string& path) const;
  Qrels qrels(const std::string& path) const;
  OnBadLine on_bad_line() const { return on_bad_; }

 private:
  void note(const std::string& path, const ReadStats& stats) const;

  OnBadLine on_bad_;
  std::vector<std::string>* notices_;
  std::vector<std::string> columns_;
};

}  // namespace retriever
}  // namespace gradcache
