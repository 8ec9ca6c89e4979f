// hold_ports FROM [TO]: binds every free loopback port from FROM to TO without listening on
// it, the way an outgoing connection holds its local port, prints "held N" and keeps them until
// its standard input closes. A connect to such a port is refused, yet a server cannot bind it:
// the tests use it to take a port a server is about to be started on.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    std::fprintf(stderr, "usage: hold_ports FROM [TO]\n");
    return 2;
  }
  const int from = std::atoi(argv[1]);
  const int to = argc == 3 ? std::atoi(argv[2]) : from;
  std::vector<int> held;
  for (int port = from; port <= to; ++port) {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) break;  // out of descriptors: hold what it has
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<std::uint16_t>(port));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0) {
      held.push_back(fd);
    } else {
      close(fd);
    }
  }
  std::printf("held %zu\n", held.size());
  std::fflush(stdout);
  char byte;
  while (read(0, &byte, 1) > 0) {
  }
  return 0;
}
