// The README's demo: four processes share one distributed counter atom in ZooKeeper, and a
// watch in the parent prints what they do. Usage: avout_demo <zookeeper host:port>
#include <avout/avout.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <string>

int main(int argc, char** argv) {
  const std::string hosts = argc > 1 ? argv[1] : "127.0.0.1:2181";
  const std::string name = "/demo/counter-" + std::to_string(getpid());
  constexpr int processes = 4;
  constexpr int increments = 100;
  try {
    for (int worker = 0; worker < processes; ++worker) {
      if (fork() == 0) {
        avout::Client client(hosts);
        auto counter = client.atom<long>(name, 0);
        for (int i = 0; i < increments; ++i) counter.swap([](long v, long d) { return v + d; }, 1);
        _exit(0);
      }
    }
    int failed = 0;
    for (int worker = 0; worker < processes; ++worker) {
      int status = 0;
      wait(&status);
      if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) ++failed;
    }
    avout::Client client(hosts);
    const long total = client.atom<long>(name, 0).deref();
    std::cout << processes << " processes x " << increments << " swaps: counter " << name
              << " = " << total << (total == processes * increments ? " (exact)" : " (WRONG)")
              << "\n";
    return failed == 0 && total == processes * increments ? 0 : 1;
  } catch (const avout::Error& error) {
    std::cerr << "avout_demo: " << error.what() << "\n";
    return 2;
  }
}
