// The text of an exception as users should read it.
#pragma once

#include <c10/util/Exception.h>

#include <exception>
#include <string>

namespace gradcache {
namespace retriever {

/// e.what(), except that LibTorch's errors (c10::Error) lose the C++ backtrace their what()
/// carries: twenty lines of frames that say nothing to a user and bury the message.
inline std::string error_message(const std::exception& e) {
  if (const auto* torch_error = dynamic_cast<const c10::Error*>(&e)) return torch_error->what_without_backtrace();
  return e.what();
}

}  // namespace retriever
}  // namespace gradcache
