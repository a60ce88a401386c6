// libFuzzer target: Parquet and Arrow training data (retriever/data/arrow_data.h) as
// index_train_file reads them. The first byte picks the file's name (bit 0: .parquet or .arrow;
// the reader goes by the bytes, PAR1, ARROW1 or a stream, and the name only words the message)
// and the bad-line policy (bit 1). Whatever the bytes, the result is a DataError with a valid
// UTF-8 message or records whose texts read as a JSONL line's do (see fuzz_common.h).
#include "fuzz_common.h"

#include "retriever/data/training_examples.h"

using namespace gradcache::retriever;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const fuzz::Choice choice = fuzz::choose(data, size);
  const std::string& path = fuzz::write_input(choice.data, choice.size, choice.jsonl ? ".parquet" : ".arrow");
  ReadStats stats;
  try {
    const auto examples = index_train_file(path, choice.on_bad, &stats);
    fuzz::check(examples->size() == stats.records && examples->size() > 0, "examples == records");
    for (size_t i = 0; i < examples->size(); ++i) fuzz::check_train_example(examples->at(i));
  } catch (const DataError& error) {
    fuzz::check_message(error.what());
  }
  fuzz::check_stats(stats, choice.on_bad);
  return 0;
}
