// This process's resident memory, as Linux reports it in /proc/self/status: what the program's
// progress lines and summaries and the benchmarks print as "peak memory".
#pragma once

#include <cstdint>

namespace gradcache {
namespace retriever {

/// Peak resident set size of this process so far (VmHWM), bytes; -1 when it cannot be read.
int64_t peak_rss_bytes();

/// Resident set size now (VmRSS), bytes; -1 when it cannot be read.
int64_t current_rss_bytes();

/// The most memory this process can have: the machine's physical memory, or the address-space
/// limit (`ulimit -v`) when lower; -1 when neither can be read.
int64_t memory_limit_bytes();

}  // namespace retriever
}  // namespace gradcache
