// The text of an exception as users should read it.
#pragma once

#include "retriever/files/utf8.h"

#include <c10/util/Exception.h>

#include <exception>
#include <string>

namespace gradcache {
namespace retriever {

/// e.what(), except that LibTorch's errors (c10::Error) lose the C++ backtrace their what()
/// carries (twenty lines of frames that say nothing to a user and bury the message), and that
/// bytes which are not UTF-8 (LibTorch quotes what it read from a file) are written as \xNN.
inline std::string error_message(const std::exception& e) {
  if (const auto* torch_error = dynamic_cast<const c10::Error*>(&e)) {
    return printable_utf8(torch_error->what_without_backtrace());
  }
  return printable_utf8(e.what());
}

/// The first line of error_message(e): for a message inside a sentence of our own. A TorchScript
/// module's error carries the interpreter's traceback (the module's code, line by line) under it.
inline std::string error_first_line(const std::exception& e) {
  std::string text = error_message(e);
  return text.substr(0, text.find('\n'));
}

}  // namespace retriever
}  // namespace gradcache
