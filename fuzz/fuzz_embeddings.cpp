// libFuzzer target: an embeddings directory (what `gradcache encode` writes) read as `mine
// --embeddings` reads it, through read_embeddings: manifest.json, the shard file names it
// gives, each shard's .npy header and data, the ids files. The input is the directory's files
// (fuzz_common.h's write_directory); the seed is a real encode of a tiny corpus in two shards.
// The contract checked on every input, besides no crash, hang or leak (a manifest that claims
// more rows than its files hold must not allocate them):
// - the only exception is EmbeddingsError, with a valid UTF-8 message that names the directory;
// - what reads holds "rows" x "dim" vectors and one id per row.
#include "fuzz_common.h"
#include "retriever/run/embeddings.h"

#include <cstdint>
#include <string>

using namespace gradcache::retriever;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& dir = fuzz::write_directory(data, size);
  try {
    const Embeddings read = read_embeddings(dir);
    const int64_t rows = read.manifest.at("rows").get<int64_t>(), dim = read.manifest.at("dim").get<int64_t>();
    fuzz::check(read.vectors.dim() == 2 && read.vectors.size(0) == rows && read.vectors.size(1) == dim,
                "\"rows\" x \"dim\" vectors");
    fuzz::check(static_cast<int64_t>(read.ids.size()) == rows, "an id per row");
  } catch (const EmbeddingsError& error) {
    const std::string message = error.what();
    fuzz::check_message(message);
    fuzz::check(message.find(dir) != std::string::npos, "the message names the directory", message);
  }
  return 0;
}
