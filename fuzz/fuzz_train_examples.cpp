// libFuzzer target: read_train_examples on JSONL and TSV training files, and the same file
// indexed (index_train_file), whose records must read back exactly as read_train_examples read
// them (see fuzz_common.h).
#include "fuzz_common.h"

#include "retriever/data/training_examples.h"

using namespace gradcache::retriever;

namespace {

bool same(const TrainExample& a, const TrainExample& b) {
  return a.query == b.query && a.positives == b.positives && a.negatives == b.negatives && a.query_id == b.query_id &&
         a.positive_ids == b.positive_ids;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const fuzz::Choice choice = fuzz::choose(data, size);
  const std::string& path = fuzz::write_input(choice.data, choice.size, choice.jsonl ? ".jsonl" : ".tsv");
  ReadStats stats;
  std::vector<TrainExample> examples;
  try {
    examples = read_train_examples(path, choice.on_bad, &stats);
    fuzz::check(!examples.empty() && examples.size() == stats.records, "examples == records");
    for (const TrainExample& example : examples) fuzz::check_train_example(example);
  } catch (const DataError& error) {
    fuzz::check_message(error.what());
  }
  fuzz::check_stats(stats, choice.on_bad);
  ReadStats indexed_stats;
  try {
    const auto indexed = index_train_file(path, choice.on_bad, &indexed_stats);
    fuzz::check(indexed->size() == examples.size(), "the index has the records read_train_examples read");
    for (size_t i = 0; i < examples.size(); ++i) fuzz::check(same(indexed->at(i), examples[i]), "an indexed record reads back as read");
  } catch (const DataError& error) {
    fuzz::check(examples.empty(), "index_train_file fails only where read_train_examples does");
    fuzz::check_message(error.what());
  }
  fuzz::check(indexed_stats.records == stats.records && indexed_stats.skipped == stats.skipped, "the same counts");
  return 0;
}
