#include "retriever/files/scratch.h"

#include "files/leftovers.h"

#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>

namespace gradcache::retriever {
namespace {

namespace fs = std::filesystem;

constexpr const char* kPrefix = "gradcache-";

fs::path swept_temporary_directory() {
  const fs::path tmp = fs::temp_directory_path();
  files::remove_dead_processes_entries(tmp.string(), kPrefix);  // "gradcache-<pid>-..." of dead processes
  return tmp;
}

std::string own_prefix() { return kPrefix + std::to_string(::getpid()) + "-"; }

}  // namespace

std::string scratch_file_path(const std::string& name) {
  return (swept_temporary_directory() / (own_prefix() + name)).string();
}

std::string make_scratch_directory(const std::string& tag) {
  const fs::path tmp = swept_temporary_directory();
  std::string pattern = (tmp / (own_prefix() + tag + "-XXXXXX")).string();
  if (mkdtemp(pattern.data()) == nullptr) {
    throw std::runtime_error("cannot create a temporary directory in " + tmp.string() + " (" +
                             std::strerror(errno) + "): set TMPDIR to a writable directory");
  }
  return pattern;
}

}  // namespace gradcache::retriever
