#include "retriever/data/data_files.h"

#include "retriever/data/arrow_data.h"
#include "retriever/files/comma_items.h"

#include <filesystem>
#include <map>

namespace gradcache {
namespace retriever {

std::vector<std::string> training_files(const std::string& train_file) {
  std::error_code error;
  if (train_file.empty() || std::filesystem::exists(train_file, error)) return {train_file};
  return comma_items(train_file);
}

std::vector<std::string> training_file_names(const std::vector<std::string>& files) {
  std::vector<std::string> names;
  std::map<std::string, int> taken;
  for (const auto& file : files) {
    std::filesystem::path path(file);
    if (!path.has_filename()) path = path.parent_path();  // "dir/"
    std::string name = path.stem().string();
    if (const int n = ++taken[name]; n > 1) name += " (" + std::to_string(n) + ")";
    names.push_back(name);
  }
  return names;
}

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
  auto examples = is_arrow_data(path) ? all_examples(*index_train_file(path, on_bad_, &stats, columns_))
                                      : read_train_examples(path, on_bad_, &stats);
  note(path, stats);
  return examples;
}

std::shared_ptr<const TrainingExamples> DataFiles::indexed_train_examples(const std::string& path) const {
  ReadStats stats;
  auto examples = index_train_file(path, on_bad_, &stats, columns_);
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
