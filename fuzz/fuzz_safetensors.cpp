// libFuzzer target: the safetensors reader (gradcache::hf::read_safetensors_bytes) on any bytes,
// as a model.safetensors: the header's validation, then the tensors. The contract checked on
// every input, besides no crash, hang or leak:
// - the only exception is ModelFileError, with a valid UTF-8 message;
// - a file that reads holds no more tensor bytes than the file has, and written back (our
//   writer) and read again it gives the same names, dtypes, shapes, bytes and metadata.
#include "fuzz_common.h"

#include <gradcache/hf/safetensors.h>

#include <ATen/ops/equal.h>

#include <cstdint>
#include <cstring>
#include <string_view>

namespace hf = gradcache::hf;

namespace {

void check_round_trip(const hf::SafetensorsContents& contents) {
  const std::string written = hf::safetensors_bytes(contents.tensors, contents.metadata);
  const hf::SafetensorsContents again = hf::read_safetensors_bytes(written, "round trip");
  fuzz::check(again.metadata == contents.metadata, "metadata round trip");
  fuzz::check(again.tensors.size() == contents.tensors.size(), "tensor count round trip");
  for (const auto& [name, tensor] : contents.tensors) {
    const at::Tensor* read = again.find(name);
    fuzz::check(read != nullptr, "tensor lost in the round trip", name);
    fuzz::check(read->scalar_type() == tensor.scalar_type() && read->sizes() == tensor.sizes(), "dtype/shape round trip", name);
    fuzz::check(read->nbytes() == tensor.nbytes() &&
                    (tensor.nbytes() == 0 || std::memcmp(read->data_ptr(), tensor.data_ptr(), tensor.nbytes()) == 0),
                "bytes round trip", name);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  try {
    const hf::SafetensorsContents contents = hf::read_safetensors_bytes(bytes, "fuzz.safetensors");
    size_t total = 0;
    for (const auto& entry : contents.tensors) total += entry.second.nbytes();
    fuzz::check(total + 8 <= size, "tensors hold more bytes than the file");
    check_round_trip(contents);
  } catch (const hf::ModelFileError& error) {
    fuzz::check_message(error.what());
  }
  return 0;
}
