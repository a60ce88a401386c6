#include "retriever/launch/process_memory.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
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

int64_t memory_limit_bytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGE_SIZE);
  int64_t limit = pages > 0 && page > 0 ? static_cast<int64_t>(pages) * page : -1;
  struct rlimit address_space {};
  if (::getrlimit(RLIMIT_AS, &address_space) == 0 && address_space.rlim_cur != RLIM_INFINITY) {
    const auto as = static_cast<int64_t>(std::min<rlim_t>(address_space.rlim_cur, INT64_MAX));
    limit = limit < 0 ? as : std::min(limit, as);
  }
  return limit;
}

}  // namespace retriever
}  // namespace gradcache
