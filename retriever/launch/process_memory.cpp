#include "retriever/launch/process_memory.h"

#include <fstream>
#include <string>

namespace gradcache {
namespace retriever {
namespace {

// A "Key:   1234 kB" line of /proc/self/status, in bytes.
int64_t proc_status_bytes(const std::string& key) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key + ":", 0) == 0) return std::stoll(line.substr(key.size() + 1)) * 1024;
  }
  return -1;
}

}  // namespace

int64_t peak_rss_bytes() { return proc_status_bytes("VmHWM"); }
int64_t current_rss_bytes() { return proc_status_bytes("VmRSS"); }

}  // namespace retriever
}  // namespace gradcache
