// libFuzzer target: loading a checkpoint (what `gradcache eval` and `--resume` do first) from
// any bytes, through load_checkpoint_bytes: the zip's CRC checks (retriever/files/zip_integrity.h),
// then LibTorch's reader, the run's info and the model. The contract checked on every input,
// besides no crash, hang or leak: the only exception is CheckpointError, with a valid UTF-8
// message.
#include "fuzz_common.h"
#include "retriever/run/checkpoint.h"

#include <cstdint>
#include <string>

using namespace gradcache::retriever;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  try {
    load_checkpoint_bytes(bytes, "fuzz.pt");
  } catch (const CheckpointError& error) {
    fuzz::check_message(error.what());
  }
  return 0;
}
