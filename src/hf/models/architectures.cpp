#include "hf/models/architectures.h"

#include <gradcache/hf/bert.h>

#include "hf/models/bloom.h"
#include "hf/models/llama.h"
#include "hf/models/modernbert.h"
#include "hf/models/mpnet.h"
#include "hf/model_json.h"

namespace gradcache {
namespace hf {
namespace detail {

namespace {

// The registry's builder and counter of a built-in, each from the text, through its reader.
Architecture built_in(ReadConfig (*read)(const Json&, const std::string&, const std::string&)) {
  return {[read](const std::string& text, const std::string& file) { return read(parse_json(text, file), text, file).build(); },
          [read](const std::string& text, const std::string& file) { return read(parse_json(text, file), text, file).parameters; },
          read};
}

}  // namespace

std::map<std::string, Architecture> builtin_architectures() {
  return {
      {"bert", built_in(&read_bert)},
      {"roberta", built_in(&read_bert)},      // BertModel with RoBERTa's positions
      {"xlm-roberta", built_in(&read_bert)},  // the same as roberta
      {"llama", built_in(&read_llama)},
      {"mistral", built_in(&read_llama)},
      {"qwen2", built_in(&read_llama)},
      {"qwen3", built_in(&read_llama)},
      {"modernbert", built_in(&read_modernbert)},
      {"mpnet", built_in(&read_mpnet)},
      {"bloom", built_in(&read_bloom)},
  };
}

}  // namespace detail
}  // namespace hf
}  // namespace gradcache
