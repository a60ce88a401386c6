// libFuzzer target: loading a checkpoint (what `gradcache eval` and `--resume` do first) from
// any bytes, through load_checkpoint_bytes: the zip's CRC checks (retriever/zip_integrity.h),
// then LibTorch's reader, the run's info and the model. The contract checked on every input,
// besides no crash, hang or leak: the only exception is CheckpointError, with a valid UTF-8
// message.
#include "retriever/checkpoint.h"
#include "retriever/text_data.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

using namespace gradcache::retriever;

namespace {

void check(bool condition, const char* what, const std::string& detail = {}) {
  if (condition) return;
  std::fprintf(stderr, "contract violated: %s: %s\n", what, detail.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  try {
    load_checkpoint_bytes(bytes, "fuzz.pt");
  } catch (const CheckpointError& error) {
    check(!find_invalid_utf8(error.what()).has_value(), "message is not valid UTF-8", error.what());
  }
  return 0;
}
