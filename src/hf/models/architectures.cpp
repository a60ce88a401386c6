#include "hf/models/architectures.h"

#include <gradcache/hf/bert.h>

#include "hf/models/bloom.h"
#include "hf/models/llama.h"
#include "hf/models/modernbert.h"
#include "hf/models/mpnet.h"

namespace gradcache {
namespace hf {
namespace detail {

std::map<std::string, Architecture> builtin_architectures() {
  return {
      {"bert", {&build_bert, &count_bert_parameters}},
      {"roberta", {&build_bert, &count_bert_parameters}},      // BertModel with RoBERTa's positions
      {"xlm-roberta", {&build_bert, &count_bert_parameters}},  // the same as roberta
      {"llama", {&build_llama, &count_llama_parameters}},
      {"mistral", {&build_llama, &count_llama_parameters}},
      {"qwen2", {&build_llama, &count_llama_parameters}},
      {"qwen3", {&build_llama, &count_llama_parameters}},
      {"modernbert", {&build_modernbert, &count_modernbert_parameters}},
      {"mpnet", {&build_mpnet, &count_mpnet_parameters}},
      {"bloom", {&build_bloom, &count_bloom_parameters}},
  };
}

}  // namespace detail
}  // namespace hf
}  // namespace gradcache
