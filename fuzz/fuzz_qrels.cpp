// libFuzzer target: read_qrels on TREC and BEIR judgements (see fuzz_common.h). The format does
// not depend on the extension; the first byte still picks the bad-line policy.
#include "fuzz_common.h"

using namespace gradcache::retriever;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const fuzz::Choice choice = fuzz::choose(data, size);
  const std::string& path = fuzz::write_input(choice.data, choice.size, ".tsv");
  ReadStats stats;
  try {
    const Qrels qrels = read_qrels(path, choice.on_bad, &stats);
    fuzz::check(!qrels.empty(), "some judgements");
    size_t judgements = 0;
    for (const auto& [query, docs] : qrels) {
      fuzz::check_text(query, "query id");
      for (const auto& [doc, grade] : docs) fuzz::check_text(doc, "doc id");
      judgements += docs.size();
    }
    fuzz::check(judgements == stats.records, "judgements == records");
  } catch (const DataError& error) {
    fuzz::check_message(error.what());
  }
  fuzz::check_stats(stats, choice.on_bad);
  return 0;
}
