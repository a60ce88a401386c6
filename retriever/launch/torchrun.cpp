#include "retriever/launch/torchrun.h"

#include <cstdlib>
#include <stdexcept>
#include <string>

namespace gradcache {
namespace retriever {
namespace {

const char* env(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? value : nullptr;
}

int env_int(const char* name, int fallback) {
  const char* value = env(name);
  if (value == nullptr) return fallback;
  try {
    return std::stoi(value);
  } catch (const std::exception&) {
    throw std::invalid_argument(std::string("environment variable ") + name + " must be an integer, got '" + value +
                                "'");
  }
}

}  // namespace

bool started_by_torchrun() { return env_int("WORLD_SIZE", 1) > 1; }

distributed::Rendezvous torchrun_rendezvous() {
  if (!env("RANK") || !env("WORLD_SIZE") || !env("MASTER_ADDR") || !env("MASTER_PORT")) {
    throw std::invalid_argument(
        "RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT must be set; launch with torchrun (e.g. torchrun "
        "--nproc_per_node=2 --no_python PROGRAM ARGS; torchrun 2.x spells it --no-python), or use --nproc N on one "
        "machine");
  }
  distributed::Rendezvous r;
  r.rank = env_int("RANK", 0);
  r.world_size = env_int("WORLD_SIZE", 1);
  r.local_rank = env_int("LOCAL_RANK", r.rank);
  r.address = env("MASTER_ADDR");
  r.port = env_int("MASTER_PORT", 29500);
  r.agent_store = env("TORCHELASTIC_USE_AGENT_STORE") && std::string(env("TORCHELASTIC_USE_AGENT_STORE")) == "True";
  r.restart_count = env_int("TORCHELASTIC_RESTART_COUNT", 0);
  if (const char* interface = env("GLOO_SOCKET_IFNAME")) r.socket_interface = interface;
  return r;
}

}  // namespace retriever
}  // namespace gradcache
