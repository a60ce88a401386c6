// A tensor's sizes as the search code's messages show them: "[3, 64]".
#pragma once

#include <ATen/core/Tensor.h>

#include <sstream>
#include <string>

namespace gradcache::retriever {

inline std::string shape_of(const at::Tensor& t) {
  std::ostringstream out;
  out << t.sizes();
  return out.str();
}

}  // namespace gradcache::retriever
