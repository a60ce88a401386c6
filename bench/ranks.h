// Process groups of the distributed scenarios: W child processes started together, each
// joining a Gloo group on loopback.
#pragma once

#include "report.h"

#include <memory>
#include <string>
#include <vector>

#ifdef GRADCACHE_WITH_DISTRIBUTED
#include <gradcache/distributed.h>
#endif

namespace gcbench {

/// Runs one child of `program` per element of `args_per_rank`, all at once; their JSON
/// (each child prints one object on stdout), in rank order.
Json run_ranks_together(const std::string& program, const std::vector<std::vector<std::string>>& args_per_rank);

#ifdef GRADCACHE_WITH_DISTRIBUTED
/// Joins the group of `world` ranks whose rank 0 serves the store at 127.0.0.1:`port`
/// (SIGPIPE ignored: a dead peer is an error message, not a silent death).
std::unique_ptr<gradcache::distributed::ProcessGroup> join_loopback_group(int64_t rank, int64_t world, int64_t port);
#endif

}  // namespace gcbench
