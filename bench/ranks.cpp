// Children started together, and the loopback group they join.
#include "ranks.h"

#include "system.h"

#include <chrono>
#include <csignal>
#include <future>

namespace gcbench {

Json run_ranks_together(const std::string& program, const std::vector<std::vector<std::string>>& args_per_rank) {
  std::vector<std::future<std::string>> children;
  for (const auto& args : args_per_rank) children.push_back(std::async(std::launch::async, run_child, program, args));
  Json ranks = Json::array();
  for (auto& c : children) ranks.push_back(Json::parse(c.get()));
  return ranks;
}

#ifdef GRADCACHE_WITH_DISTRIBUTED
std::unique_ptr<gradcache::distributed::ProcessGroup> join_loopback_group(int64_t rank, int64_t world, int64_t port) {
  namespace gd = gradcache::distributed;
  gd::Rendezvous rendezvous;
  rendezvous.rank = static_cast<int>(rank);
  rendezvous.world_size = static_cast<int>(world);
  rendezvous.port = static_cast<int>(port);
  std::signal(SIGPIPE, SIG_IGN);
  return std::make_unique<gd::ProcessGroup>(
      gd::ProcessGroup::create(rendezvous, gd::ProcessGroupOptions().timeout(std::chrono::minutes(10))));
}
#endif

}  // namespace gcbench
