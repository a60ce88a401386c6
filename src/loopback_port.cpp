// free_loopback_port() of <gradcache/distributed.h>, built with or without c10d: launchers and
// tests of single-machine groups need a port before any process group exists.
#include <gradcache/distributed.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

namespace gradcache {
namespace distributed {

int free_loopback_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw std::runtime_error(std::string("cannot open a socket: ") + std::strerror(errno));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  socklen_t length = sizeof address;
  const bool ok = bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0 &&
                  getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0;
  const int error = errno;
  close(fd);
  if (!ok) throw std::runtime_error(std::string("cannot find a free port on 127.0.0.1: ") + std::strerror(error));
  return ntohs(address.sin_port);
}

}  // namespace distributed
}  // namespace gradcache
