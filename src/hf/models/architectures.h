// The architectures built in: model_type -> builder and weight counter. Adding one is a file in
// src/hf/models/ and a line here.
#pragma once

#include <gradcache/hf/transformer.h>

#include <map>
#include <string>

namespace gradcache {
namespace hf {
namespace detail {

struct Architecture {
  ArchitectureBuilder build;
  ParameterCounter count;
};

std::map<std::string, Architecture> builtin_architectures();

}  // namespace detail
}  // namespace hf
}  // namespace gradcache
