// Process groups of the distributed scenarios: W child processes started together, each
// joining a Gloo group on loopback.
#pragma once

#include "options.h"
#include "report.h"

#include <gradcache/distributed.h>  // free_loopback_port(), with or without c10d

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace gcbench {

/// Runs one child of `program` per element of `args_per_rank`, all at once; their JSON
/// (each child prints one object on stdout), in rank order.
Json run_ranks_together(const std::string& program, const std::vector<std::vector<std::string>>& args_per_rank);

/// Runs `world` children `program command FLAGS`, FLAGS being `point`'s settings with its rank
/// (point.rank, point.world, point.port: a ChildRank) set for each, on a fresh loopback port;
/// their JSON in rank order.
template <class Point>
Json run_ranks(const std::string& program, const std::string& command, Point point, int64_t world) {
  point.world = world;
  point.port = gradcache::distributed::free_loopback_port();
  std::vector<std::vector<std::string>> args_per_rank;
  for (int64_t r = 0; r < world; ++r) {
    point.rank = r;
    args_per_rank.push_back(child_command_line(command, point));
  }
  return run_ranks_together(program, args_per_rank);
}

#ifdef GRADCACHE_WITH_DISTRIBUTED
/// Joins the group of `world` ranks whose rank 0 serves the store at 127.0.0.1:`port`
/// (SIGPIPE ignored: a dead peer is an error message, not a silent death).
std::unique_ptr<gradcache::distributed::ProcessGroup> join_loopback_group(int64_t rank, int64_t world, int64_t port);
#endif

}  // namespace gcbench
