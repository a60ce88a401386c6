// libFuzzer target: read_collection on JSONL and TSV corpora / query sets (see fuzz_common.h).
#include "fuzz_common.h"

using namespace gradcache::retriever;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const fuzz::Choice choice = fuzz::choose(data, size);
  const std::string& path = fuzz::write_input(choice.data, choice.size, choice.jsonl ? ".jsonl" : ".tsv");
  ReadStats stats;
  try {
    const TextCollection collection = read_collection(path, choice.on_bad, &stats);
    fuzz::check(collection.size() > 0 && collection.size() == stats.records, "records == size");
    fuzz::check(collection.texts.size() == collection.size() && collection.index.size() == collection.size(),
                "ids, texts and index agree");
    for (size_t i = 0; i < collection.size(); ++i) {
      fuzz::check_text(collection.ids[i], "id");
      fuzz::check_text(collection.texts[i], "text");
      fuzz::check(collection.index.at(collection.ids[i]) == i, "index points at the record");
    }
  } catch (const DataError& error) {
    fuzz::check_message(error.what());
  }
  fuzz::check_stats(stats, choice.on_bad);
  return 0;
}
