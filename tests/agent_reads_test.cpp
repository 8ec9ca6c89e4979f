// Reads of an agent while another process keeps changing it: every batch erases the value it
// replaced right after its commit, so a reader may find the point its head named gone. That is
// a re-read (rule 8), never the BackendError reserved for lost data: on every store.
#include <avout/avout.hpp>

#include "support/processes.hpp"
#include "support/servers.hpp"
#include "support/three_stores.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using avout::testing::scaled;

namespace {

long plus_one(long value) { return value + 1; }

// What the reader process saw: reads made, the errors among them, the first error's text.
struct ReadReport {
  long reads = 0;
  long errors = 0;
  std::string first_error;
};

ReadReport read_report(const std::filesystem::path& file) {
  ReadReport report;
  std::ifstream in(file);
  in >> report.reads >> report.errors;
  std::getline(in >> std::ws, report.first_error);
  return report;
}

// One process sends `v + 1` for `period` while another reads the agent on 3 threads the same
// way a user does: deref(), a new handle (Client::agent's kind check) and set_validator.
ReadReport read_while_sending(int store_index, std::chrono::milliseconds period) {
  const std::string name = avout::testing::unique_name("/agent-reads-test", "deref");
  const auto directory = std::filesystem::temp_directory_path() /
                         ("avout-agent-reads-" + name.substr(name.rfind('-') + 1));
  std::filesystem::create_directories(directory);
  const auto report_file = directory / "report";
  const auto codes = avout::testing::run_in_processes(
      2,
      [&](int index) {
        avout::testing::ThreeStores stores;
        auto agent = stores.client.agent<long>(name, 0, stores.store(store_index));
        const auto until = std::chrono::steady_clock::now() + period;
        if (index == 0) {
          while (std::chrono::steady_clock::now() < until) {
            agent.send(plus_one);
            std::this_thread::sleep_for(200us);
          }
          if (!agent.await_for(scaled(30s))) throw std::runtime_error("await timed out");
          return;
        }
        std::atomic<long> reads{0};
        std::atomic<long> errors{0};
        std::mutex first_mutex;
        std::string first_error;
        std::vector<std::jthread> readers;
        for (int thread = 0; thread < 3; ++thread) {
          readers.emplace_back([&, thread] {
            for (long i = 0; std::chrono::steady_clock::now() < until; ++i) {
              try {
                switch ((thread + i) % 4) {
                  case 0:
                    (void)stores.client.agent<long>(name, 0, stores.store(store_index));
                    break;
                  case 1: agent.set_validator([](long value) { return value >= 0; }); break;
                  default: (void)agent.deref();
                }
              } catch (const std::exception& error) {
                if (errors++ == 0) {
                  std::lock_guard lock(first_mutex);
                  first_error = error.what();
                }
              }
              ++reads;
            }
          });
        }
        readers.clear();
        std::ofstream(report_file) << reads << ' ' << errors << ' ' << first_error << '\n';
      },
      scaled(60s));
  CHECK(codes == std::vector<int>{0, 0});
  auto report = read_report(report_file);
  std::filesystem::remove_all(directory);
  return report;
}

}  // namespace

TEST_CASE(
    "an agent read while another process sends never fails: deref, a new handle and "
    "set_validator re-read a value erased under a newer head, on every store") {
  avout::testing::start_shared_servers();
  for (int store = 0; store < 3; ++store) {
    CAPTURE(avout::testing::shared_store_urls()[static_cast<std::size_t>(store)].name);
    const auto report = read_while_sending(store, 3s);
    CAPTURE(report.first_error);
    CHECK(report.reads > 0);
    CHECK(report.errors == 0);
  }
}
