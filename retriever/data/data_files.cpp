#include "retriever/data/data_files.h"

namespace gradcache {
namespace retriever {

std::optional<std::string> skipped_lines_notice(const std::string& path, const ReadStats& stats) {
  if (stats.skipped == 0) return std::nullopt;
  std::string notice = path + ": skipped " + std::to_string(stats.skipped) + " of " + std::to_string(stats.lines) +
                       " lines (--on-bad-line skip)";
  if (!stats.skipped_examples.empty()) notice += "; first: " + stats.skipped_examples.front();
  return notice;
}

void DataFiles::note(const std::string& path, const ReadStats& stats) const {
  if (auto notice = skipped_lines_notice(path, stats)) notices_->push_back(std::move(*notice));
}

std::vector<TrainExample> DataFiles::train_examples(const std::string& path) const {
  ReadStats stats;
  auto examples = read_train_examples(path, on_bad_, &stats);
  note(path, stats);
  return examples;
}

std::shared_ptr<const TrainingExamples> DataFiles::indexed_train_examples(const std::string& path) const {
  ReadStats stats;
  auto examples = index_train_file(path, on_bad_, &stats);
  note(path, stats);
  return examples;
}

TextCollection DataFiles::collection(const std::string& path) const {
  ReadStats stats;
  auto collection = read_collection(path, on_bad_, &stats);
  note(path, stats);
  return collection;
}

Qrels DataFiles::qrels(const std::string& path) const {
  ReadStats stats;
  auto qrels = read_qrels(path, on_bad_, &stats);
  note(path, stats);
  return qrels;
}

}  // namespace retriever
}  // namespace gradcache
