// libFuzzer target: read_train_examples on JSONL and TSV training files (see fuzz_common.h).
#include "fuzz_common.h"

using namespace gradcache::retriever;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const fuzz::Choice choice = fuzz::choose(data, size);
  const std::string& path = fuzz::write_input(choice.data, choice.size, choice.jsonl ? ".jsonl" : ".tsv");
  ReadStats stats;
  try {
    const std::vector<TrainExample> examples = read_train_examples(path, choice.on_bad, &stats);
    fuzz::check(!examples.empty() && examples.size() == stats.records, "examples == records");
    for (const TrainExample& example : examples) {
      fuzz::check_text(example.query, "query");
      fuzz::check(!example.positives.empty(), "at least one positive");
      for (const std::string& text : example.positives) fuzz::check_text(text, "positive");
      for (const std::string& text : example.negatives) fuzz::check_text(text, "negative");
    }
  } catch (const DataError& error) {
    fuzz::check_message(error.what());
  }
  fuzz::check_stats(stats, choice.on_bad);
  return 0;
}
