#include "retriever/model/trainable_parameters.h"

#include "retriever/model/encoders.h"

#include <gradcache/hf/frozen_weights.h>
#include <gradcache/hf/sentence_transformer.h>
#include <gradcache/precision.h>

#include <torch/torch.h>

#include <algorithm>
#include <regex>
#include <stdexcept>
#include <utility>
#include <vector>

namespace gradcache {
namespace retriever {
namespace {

struct EncoderParameter {
  std::string name;  // the name it is matched by
  torch::Tensor tensor;
  bool embedding;  // part of the embeddings: --freeze-embeddings freezes it
};

// The parameters of a C++ module with the name each is matched by (`strip` removed from the
// front) and whether it is an embedding: its name says so, as the Hugging Face architectures'
// ("embeddings.", "embed_tokens", "word_embeddings_layernorm"), or it is a torch::nn::Embedding's
// (the built-in encoder's "tokens" and "positions").
void add_module(const torch::nn::Module& module, const std::string& strip, std::vector<EncoderParameter>& out) {
  std::vector<const void*> in_embeddings;
  for (const auto& item : module.named_modules()) {
    if (item.value()->as<torch::nn::EmbeddingImpl>() == nullptr) continue;
    for (const auto& p : item.value()->parameters()) in_embeddings.push_back(p.unsafeGetTensorImpl());
  }
  for (const auto& kv : module.named_parameters()) {
    const bool stripped = !strip.empty() && kv.key().compare(0, strip.size(), strip) == 0;
    std::string name = stripped ? kv.key().substr(strip.size()) : kv.key();
    const bool embedding = name.find("embed") != std::string::npos ||
                           std::find(in_embeddings.begin(), in_embeddings.end(), kv.value().unsafeGetTensorImpl()) !=
                               in_embeddings.end();
    out.push_back({std::move(name), kv.value(), embedding});
  }
}

// Every encoder parameter once (tied: one encoder).
std::vector<EncoderParameter> encoder_parameters(const BiEncoder& model) {
  std::vector<EncoderParameter> out;
  const size_t encoders = model.tied() ? 1 : 2;
  for (size_t i = 0; i < encoders; ++i) {
    if (!model.pretrained_encoders().empty()) {
      // The Hugging Face name: the backbone's parameters are registered under "transformer.".
      add_module(*model.pretrained_encoders()[i], "transformer.", out);
    } else if (!model.builtin_encoders().empty()) {
      add_module(*model.builtin_encoders()[i], "", out);
    } else {
      for (const auto& kv : model.scripts()[i]->named_parameters())
        out.push_back({kv.name, kv.value, kv.name.find("embed") != std::string::npos});
    }
  }
  return out;
}

std::string with_commas(int64_t n) {
  std::string digits = std::to_string(n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string flags_of(const TrainableParameters& selection) {
  std::string flags = selection.pattern.empty() ? "" : "--train-params " + selection.pattern;
  if (selection.freeze_embeddings) flags += std::string(flags.empty() ? "" : " ") + "--freeze-embeddings";
  if (selection.adapters_only) flags += std::string(flags.empty() ? "" : " ") + "LoRA adapters only";
  return flags;
}

}  // namespace

std::string pattern_error(const std::string& pattern) {
  try {
    std::regex compiled(pattern, std::regex::ECMAScript);
    (void)compiled;
    return "";
  } catch (const std::regex_error& e) {
    return std::string("is not a regular expression (") + e.what() + ")";
  }
}

bool trains(const TrainableParameters& selection, const std::string& name, bool embedding) {
  if (selection.adapters_only) return name.find(".lora_A.") != std::string::npos || name.find(".lora_B.") != std::string::npos;
  if (selection.freeze_embeddings && embedding) return false;
  if (selection.pattern.empty()) return true;
  return std::regex_search(name, std::regex(selection.pattern, std::regex::ECMAScript));
}

TrainableCounts select_trainable(BiEncoder& model, const TrainableParameters& selection) {
  TrainableCounts counts;
  for (auto& parameter : encoder_parameters(model)) {
    const bool train = trains(selection, parameter.name, parameter.embedding);  // a regex per tensor: hundreds
    parameter.tensor.requires_grad_(train);
    (train ? counts.trained : counts.frozen) += parameter.tensor.numel();
  }
  if (counts.trained == 0) {
    throw std::invalid_argument(flags_of(selection) + " leaves no parameter of the encoder to train (" +
                                with_commas(counts.frozen) +
                                " frozen); the pattern is searched in each parameter's name, e.g. "
                                "\"encoder.layer.0.attention.self.query.bias\": use \"bias\", or a pattern that "
                                "matches some of them");
  }
  return counts;
}

int64_t hold_frozen_weights(BiEncoder& model, Precision precision) {
  if (precision == Precision::fp32) return 0;
  int64_t converted = 0;
  for (hf::SentenceTransformer encoder : model.pretrained_encoders())  // a holder: the module, not a copy
    converted += hf::hold_frozen_weights_in(encoder->transformer(), scalar_type(precision));
  return converted;
}

std::string describe(const TrainableCounts& counts, const TrainableParameters& selection) {
  const std::string flags = flags_of(selection);
  return with_commas(counts.trained) + " of " + with_commas(counts.trained + counts.frozen) + " parameters train" +
         (flags.empty() ? "" : " (" + flags + ")") +
         (counts.held_narrow > 0 ? "; " + with_commas(counts.held_narrow) + " frozen ones held in bf16 (--base-precision)"
                                 : "");
}

}  // namespace retriever
}  // namespace gradcache
