// libFuzzer target: an export directory (what `gradcache export` writes) read as `encode
// --model` and `mine --model` read it, through load_exported_encoder: export.json validated, the
// file names it gives, tokenizer.model, the CRC of model.pt's entries, LibTorch's TorchScript
// loader, and the encoder's probe with the tokenizer's largest id. The input is the directory's
// files (fuzz_common.h's write_directory); the seed is a real export of a tiny run. The side is
// "query" for inputs of even size, else "passage". The contract checked on every input, besides
// no crash, hang or leak:
// - the only exception is a std::runtime_error, with a valid UTF-8 message that names the
//   export's directory and holds no LibTorch backtrace ("frame #", unless the input has it);
// - an encoder that loads turns a text into one finite vector of export.json's "dim" (any
//   exception there escapes, and libFuzzer reports it).
#include "fuzz_common.h"
#include "files/atomic_file.h"
#include "retriever/run/saved_encoder.h"

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

using namespace gradcache::retriever;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& dir = fuzz::write_directory(data, size);
  const std::string side = size % 2 == 0 ? "query" : "passage";
  std::optional<TextEncoder> encoder;
  try {
    encoder.emplace(load_exported_encoder(dir, side));
  } catch (const std::runtime_error& error) {
    const std::string message = error.what();
    fuzz::check_message(message);
    fuzz::check(message.find(dir) != std::string::npos, "the message names the export", message);
    const std::string_view input(reinterpret_cast<const char*>(data), size);  // messages may quote it
    if (input.find("frame #") == std::string_view::npos)
      fuzz::check(message.find("frame #") == std::string::npos, "no LibTorch backtrace", message);
    return 0;
  }
  const auto ids = encoder->tokens("which red fox", side == "query");
  const TokenBatch batch{{"input_ids", torch::tensor(ids, torch::kLong).unsqueeze(0)},
                         {"attention_mask", torch::ones({1, static_cast<int64_t>(ids.size())}, torch::kLong)}};
  torch::NoGradGuard no_grad;
  auto model = side == "query" ? encoder->model.query_model() : encoder->model.passage_model();
  const at::Tensor vectors = model(gradcache::ModelInput(batch)).toTensor();
  const auto dim = nlohmann::json::parse(gradcache::files::read_file(dir + "/export.json")).at("dim").get<int64_t>();
  fuzz::check(vectors.dim() == 2 && vectors.size(0) == 1 && vectors.size(1) == dim, "one vector of \"dim\"");
  fuzz::check(torch::isfinite(vectors).all().item<bool>(), "a finite vector");
  return 0;
}
