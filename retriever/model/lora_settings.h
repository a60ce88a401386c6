// What a --model-dir encoder adapts with LoRA (--lora-rank, --lora-alpha, --lora-dropout,
// --lora-targets), or the PEFT adapter directory it starts from (--adapter): declared once for
// train, eval, encode and mine. hf/lora.h does the work.
#pragma once

#include <cstdint>
#include <string>

namespace gradcache {
namespace retriever {

struct LoraSettings {
  int64_t rank = 0;      ///< --lora-rank: 0 = no new adapters
  double alpha = 0.0;    ///< --lora-alpha: 0 = the rank (scaling 1, as PEFT's defaults r = alpha = 8)
  double dropout = 0.0;  ///< --lora-dropout
  std::string targets;   ///< --lora-targets: module names, comma-separated; "" = the architecture's
  std::string adapter;   ///< --adapter: a PEFT adapter directory to load (its config gives the rest)
  bool enabled() const { return rank > 0 || !adapter.empty(); }
};

}  // namespace retriever
}  // namespace gradcache
