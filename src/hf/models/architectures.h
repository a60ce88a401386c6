// The architectures built in: model_type -> a reader of its config.json (the weights it needs and
// a builder, from one parse), and from it the registry's builder and weight counter. Adding one is
// a file in src/hf/models/ and a line in architectures.cpp.
#pragma once

#include <gradcache/hf/transformer.h>

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

namespace gradcache {
namespace hf {
namespace detail {

/// A config.json read once: how many weights a checkpoint of it holds at least, and its model.
struct ReadConfig {
  int64_t parameters = 0;
  std::function<std::shared_ptr<TransformerBackbone>()> build;
};
/// Reads (validates) a parsed config.json whose text is `text`, for ModelFileError naming `file`.
using ConfigReader =
    std::function<ReadConfig(const nlohmann::json& config, const std::string& text, const std::string& file)>;

struct Architecture {
  ArchitectureBuilder build;
  ParameterCounter count;
  /// The built-ins': count and build from one parse (load_transformer); null for one registered
  /// with register_architecture, whose builder and counter each parse the text.
  ConfigReader read;
};

/// "bert", "roberta", "xlm-roberta" (defined in bert.cpp).
ReadConfig read_bert(const nlohmann::json& config, const std::string& text, const std::string& file);

std::map<std::string, Architecture> builtin_architectures();

}  // namespace detail
}  // namespace hf
}  // namespace gradcache
