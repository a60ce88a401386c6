// The one exception type of gradcache::hf for model files that cannot be used.
#pragma once

#include <stdexcept>
#include <string>

namespace gradcache {
namespace hf {

/// A model directory or file that cannot be used: missing, malformed, of a kind not supported,
/// or disagreeing with its configuration. what() is "<file>: <what is wrong>", in valid UTF-8
/// (bytes of the file are never copied into it raw).
class ModelFileError : public std::runtime_error {
 public:
  ModelFileError(const std::string& file, const std::string& problem)
      : std::runtime_error(file + ": " + problem), file_(file) {}
  /// The file (or directory) at fault.
  const std::string& file() const { return file_; }

 private:
  std::string file_;
};

}  // namespace hf
}  // namespace gradcache
