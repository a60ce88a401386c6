// The rendezvous torchrun describes in the environment of the processes it starts. The
// gradcache library reads no environment variable: the program reads them here.
#pragma once

#include <gradcache/distributed.h>

namespace gradcache {
namespace retriever {

/// Whether this process was started by torchrun in a group of more than one (WORLD_SIZE > 1).
bool started_by_torchrun();

/// The rendezvous from torchrun's variables: RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR,
/// MASTER_PORT, TORCHELASTIC_USE_AGENT_STORE, TORCHELASTIC_RESTART_COUNT and
/// GLOO_SOCKET_IFNAME. Throws, saying how to launch, when the required ones are missing.
distributed::Rendezvous torchrun_rendezvous();

}  // namespace retriever
}  // namespace gradcache
