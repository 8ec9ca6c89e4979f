// Semaphore against a real ZooKeeper, from threads and real processes: never more than N
// permits held at once (a shared log of every hold, checked at the end), tokens unique and
// increasing in each holder's grant order, N agreed by every opener (Mismatch), deadlines that
// leave nothing queued, a SIGKILLed holder's permit freed, a session expiry or a freeze that
// ends a hold (is_held false, the guarded commit refused), and a lost create reply counted
// once.
#include <avout/avout.hpp>

#include "support/processes.hpp"
#include "support/servers.hpp"
#include "support/three_stores.hpp"
#include "support/zookeeper_faults.hpp"

#include <doctest/doctest.h>

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using avout::testing::scaled;
using Clock = std::chrono::steady_clock;

namespace {

std::string unique_name(const std::string& stem) {
  return avout::testing::unique_name("/semaphore-test", stem);
}

avout::ClientOptions options() {
  return avout::ClientOptions{.hosts = avout::testing::shared_zookeeper().connect_string(),
                              .session_timeout = 2000ms};
}

std::string folder_of(avout::Client& client, const std::string& name) {
  return client.options().root + "/semaphores" + name;
}

// The permit nodes queued in the semaphore's folder.
std::size_t permits_queued(avout::Client& client, const std::string& name) {
  const auto children = client.session().children(folder_of(client, name));
  return static_cast<std::size_t>(std::count_if(children.begin(), children.end(),
                                                [](const auto& c) { return c.starts_with("q-"); }));
}

// The permit nodes still queued once `within` passed or none is left: a delete whose reply was
// lost goes to the client's background removals, which send it again until the node is gone.
std::size_t permits_left(avout::Client& client, const std::string& name,
                         std::chrono::milliseconds within) {
  const auto give_up_at = Clock::now() + within;
  std::size_t left = permits_queued(client, name);
  while (left != 0 && Clock::now() < give_up_at) {
    std::this_thread::sleep_for(20ms);
    left = permits_queued(client, name);
  }
  return left;
}

// A log shared by every process and thread: "E <holder> <token>" once a permit is granted,
// "L <holder> <token>" before it is released. Each line is one O_APPEND write, so lines of
// different writers never interleave. The logged interval lies inside the real hold, so more
// than N logged at once means more than N held at once.
class HoldLog {
 public:
  explicit HoldLog(const std::filesystem::path& file)
      : fd_(::open(file.c_str(), O_WRONLY | O_APPEND | O_CREAT, 0600)) {}
  ~HoldLog() { ::close(fd_); }
  void line(char what, const std::string& holder, std::uint64_t token) {
    const std::string text =
        std::string(1, what) + ' ' + holder + ' ' + std::to_string(token) + '\n';
    if (::write(fd_, text.data(), text.size()) != static_cast<ssize_t>(text.size())) {
      throw std::runtime_error("the hold log refused a line");
    }
  }

 private:
  int fd_;
};

// The checker: at most `n` holds at once, every token granted once, and each holder's tokens
// strictly increasing (its grants in order). Returns the number of grants.
std::size_t check_log(const std::filesystem::path& file, std::size_t n) {
  std::ifstream in(file);
  std::set<std::uint64_t> live, granted;
  std::map<std::string, std::uint64_t> last_of_holder;
  std::size_t most = 0;
  char what = 0;
  std::string holder;
  std::uint64_t token = 0;
  while (in >> what >> holder >> token) {
    if (what == 'E') {
      CHECK(granted.insert(token).second);
      CHECK(token > last_of_holder[holder]);
      last_of_holder[holder] = token;
      live.insert(token);
      most = std::max(most, live.size());
    } else {
      CHECK(live.erase(token) == 1);
    }
  }
  CHECK(live.empty());
  CHECK(most <= n);
  CHECK(most >= 1);
  return granted.size();
}

}  // namespace

TEST_CASE("N=3: 4 processes x 3 threads never hold more than 3 permits at once") {
  (void)avout::testing::shared_zookeeper();
  const std::string name = unique_name("processes");
  const auto file =
      std::filesystem::temp_directory_path() / ("avout-semaphore" + name.substr(name.rfind('-')));
  constexpr int processes = 4, threads = 3, rounds = 8;
  const auto codes = avout::testing::run_in_processes(
      processes,
      [&](int index) {
        avout::Client client(options());
        auto semaphore = client.semaphore(name, 3);
        HoldLog log(file);
        std::vector<std::thread> workers;
        for (int t = 0; t < threads; ++t) {
          workers.emplace_back([&, t] {
            const std::string holder = std::to_string(index) + "." + std::to_string(t);
            for (int r = 0; r < rounds; ++r) {
              avout::Permit permit = semaphore.acquire(avout::Deadline::after(scaled(60s)));
              // 0: a stall of this loaded process already made the permit not count; it
              // never held as far as anyone can tell, so nothing is logged.
              const std::uint64_t token = permit.fencing_token();
              if (token != 0) log.line('E', holder, token);
              std::this_thread::sleep_for(std::chrono::milliseconds(2 + (r * 7 + t) % 9));
              if (token != 0) log.line('L', holder, token);
              permit.release();
              permit.release();  // idempotent
            }
          });
        }
        for (auto& worker : workers) worker.join();
      },
      scaled(120s));
  CHECK(codes == std::vector<int>(processes, 0));
  CHECK(check_log(file, 3) <= std::size_t{processes * threads * rounds});
  std::filesystem::remove(file);
  avout::Client client(options());
  CHECK(permits_queued(client, name) == 0);
}

TEST_CASE("lost replies, early failures and delays: 3 threads never hold more than 2") {
  (void)avout::testing::shared_zookeeper();
  const std::string name = unique_name("faults");
  const auto file =
      std::filesystem::temp_directory_path() / ("avout-semaphore" + name.substr(name.rfind('-')));
  avout::Client client(options());
  auto semaphore = client.semaphore(name, 2);
  constexpr int threads = 3, rounds = 10;
  {
    avout::testing::FaultPlan faults(std::random_device{}(),
                                     {.reply_lost = 0.1, .fail_early = 0.1, .delay = 0.1},
                                     avout::testing::shared_zookeeper().connect_string());
    HoldLog log(file);
    std::vector<std::future<void>> workers;
    for (int t = 0; t < threads; ++t) {
      workers.push_back(std::async(std::launch::async, [&, t] {
        for (int r = 0; r < rounds; ++r) {
          avout::Permit permit = semaphore.acquire(avout::Deadline::after(scaled(60s)));
          const std::uint64_t token = permit.fencing_token();
          if (token != 0) log.line('E', std::to_string(t), token);
          std::this_thread::sleep_for(5ms);
          if (token != 0) log.line('L', std::to_string(t), token);
        }
      }));
    }
    for (auto& worker : workers) worker.get();
    CHECK(avout::testing::FaultPlan::counts().reply_lost > 0);
  }
  CHECK(check_log(file, 2) <= std::size_t{threads * rounds});
  std::filesystem::remove(file);
  // Every lost create found once, every node gone (a lost delete's retry may come later).
  CHECK(permits_left(client, name, scaled(10s)) == 0);
}

TEST_CASE("one thread's permits: tokens strictly increase with each grant; moves keep the hold") {
  (void)avout::testing::shared_zookeeper();
  avout::Client client(options());
  auto semaphore = client.semaphore(unique_name("tokens"), 2);
  CHECK(semaphore.permits() == 2);
  std::uint64_t last = 0;
  for (int i = 0; i < 5; ++i) {
    avout::Permit a = semaphore.acquire();
    avout::Permit b = semaphore.acquire();
    CHECK(a.fencing_token() > last);
    CHECK(b.fencing_token() > a.fencing_token());
    last = b.fencing_token();
    avout::Permit moved = std::move(a);
    CHECK(moved.is_held());
    CHECK_FALSE(a.is_held());  // NOLINT: moved from on purpose
    CHECK_FALSE(semaphore.try_acquire());
  }
  // Every permit above was released by its destructor.
  auto one = semaphore.try_acquire();
  auto two = semaphore.try_acquire();
  REQUIRE(one);
  REQUIRE(two);
  one->release();
  CHECK_FALSE(one->is_held());
  CHECK(one->fencing_token() == 0);
}

TEST_CASE("another N for the same name is a Mismatch; 0 is an InvalidOption") {
  (void)avout::testing::shared_zookeeper();
  const std::string name = unique_name("mismatch");
  avout::Client client(options());
  avout::Client other(options());
  auto first = client.semaphore(name, 3);
  CHECK_THROWS_AS(other.semaphore(name, 2), avout::Mismatch);
  CHECK_NOTHROW(other.semaphore(name, 3));
  CHECK_THROWS_AS(client.semaphore(unique_name("zero"), 0), avout::InvalidOption);
}

TEST_CASE("deadlines: Timeout or nullopt, and nothing left queued") {
  (void)avout::testing::shared_zookeeper();
  const std::string name = unique_name("deadline");
  avout::Client client(options());
  auto semaphore = client.semaphore(name, 1);
  avout::Permit held = semaphore.acquire();
  CHECK_THROWS_AS(semaphore.acquire(avout::Deadline::after(300ms)), avout::Timeout);
  CHECK_FALSE(semaphore.try_acquire_for(300ms));
  CHECK_FALSE(semaphore.try_acquire());
  std::stop_source stop;
  auto cancelled = std::async(std::launch::async, [&] {
    return semaphore.acquire(avout::Deadline::after(scaled(30s)).with_stop(stop.get_token()));
  });
  std::this_thread::sleep_for(200ms);
  stop.request_stop();
  CHECK_THROWS_AS(cancelled.get(), avout::Timeout);
  CHECK(permits_queued(client, name) == 1);  // the holder's only
  held.release();
  CHECK(semaphore.try_acquire_for(scaled(10s)));
}

TEST_CASE("a waiter is granted the permit a holder releases") {
  (void)avout::testing::shared_zookeeper();
  avout::Client client(options());
  avout::Client other(options());
  const std::string name = unique_name("handover");
  auto mine = client.semaphore(name, 2);
  auto theirs = other.semaphore(name, 2);
  avout::Permit a = mine.acquire();
  avout::Permit b = mine.acquire();
  auto waiting = std::async(std::launch::async,
                            [&] { return theirs.acquire(avout::Deadline::after(scaled(20s))); });
  CHECK(waiting.wait_for(300ms) == std::future_status::timeout);
  const auto before = b.fencing_token();
  b.release();
  avout::Permit c = waiting.get();
  CHECK(c.fencing_token() > before);
  CHECK(a.is_held());
}

TEST_CASE("a holder SIGKILLed frees its permit once its session ends") {
  (void)avout::testing::shared_zookeeper();
  const std::string name = unique_name("killed");
  const auto held_file = std::filesystem::temp_directory_path() /
                         ("avout-semaphore-killed-" + name.substr(name.rfind('-') + 1));
  avout::testing::ChildProcess holder(0, [&](int) {
    avout::Client client(options());
    auto semaphore = client.semaphore(name, 1);
    avout::Permit permit = semaphore.acquire();
    std::ofstream(held_file) << "held";
    std::this_thread::sleep_for(60s);  // killed here
  });
  REQUIRE(avout::testing::wait_for_file(held_file, scaled(30s)));
  std::filesystem::remove(held_file);
  avout::Client client(options());
  auto semaphore = client.semaphore(name, 1);
  CHECK_FALSE(semaphore.try_acquire());
  holder.signal(SIGKILL);
  (void)holder.wait(scaled(10s));
  CHECK(semaphore.try_acquire_for(scaled(10s)));  // 2 s session timeout, then the node is gone
}

TEST_CASE("a session expiry: is_held false, on_lost called, the guarded commit refused") {
  (void)avout::testing::shared_zookeeper();
  avout::Client client(options());
  auto ref = client.ref<long>(unique_name("guarded-ref"), 0);
  auto semaphore = client.semaphore(unique_name("expired"), 2);
  std::promise<void> told;
  semaphore.on_lost([&] { told.set_value(); });
  avout::Permit permit = semaphore.acquire();
  client.dosync(avout::guarded_by(permit), [&] { ref.alter([](long v) { return v + 1; }); });
  CHECK(ref.deref() == 1);
  client.session().expire_for_testing();
  CHECK(told.get_future().wait_for(scaled(10s)) == std::future_status::ready);
  CHECK_FALSE(permit.is_held());
  CHECK_THROWS_AS(
      client.dosync(avout::guarded_by(permit), [&] { ref.alter([](long v) { return v + 1; }); }),
      avout::LockLost);
  CHECK(ref.deref() == 1);
  permit.release();  // a lost permit's release is quiet
  // The semaphore works on the renewed session.
  avout::Permit again = semaphore.acquire(avout::Deadline::after(scaled(10s)));
  CHECK(again.is_held());
}

TEST_CASE("a guarded commit whose permit node vanished before the commit is refused") {
  (void)avout::testing::shared_zookeeper();
  avout::Client client(options());
  auto ref = client.ref<long>(unique_name("vanished-ref"), 0);
  auto semaphore = client.semaphore(unique_name("vanished"), 1);
  avout::Permit permit = semaphore.acquire();
  // Another party removes the node (an operator): the check inside the commit sees it.
  const auto children = client.session().children(folder_of(client, semaphore.name()));
  for (const auto& child : children) {
    client.session().remove(folder_of(client, semaphore.name()) + "/" + child);
  }
  CHECK_THROWS_AS(
      client.dosync(avout::guarded_by(permit), [&] { ref.alter([](long v) { return v + 1; }); }),
      avout::LockLost);
  CHECK(ref.deref() == 0);
}

TEST_CASE("a create whose reply was lost counts once") {
  (void)avout::testing::shared_zookeeper();
  const std::string name = unique_name("lost-reply");
  avout::Client client(options());
  auto semaphore = client.semaphore(name, 1);
  const auto folder = folder_of(client, name);
  // Counted twice, the second node would wait behind the first: the acquire would never end.
  avout::testing::fail_next(avout::testing::ZooKeeperCall::create, folder, 1, true);
  avout::Permit permit = semaphore.acquire(avout::Deadline::after(scaled(20s)));
  CHECK(avout::testing::failures_to_come() == 0);
  CHECK(permits_queued(client, name) == 1);
  permit.release();
  CHECK(permits_queued(client, name) == 0);
  // A lost reply at the deadline: the node made is found and removed.
  avout::Permit holder = semaphore.acquire();
  avout::testing::fail_next(avout::testing::ZooKeeperCall::create, folder, 1, true);
  CHECK_FALSE(semaphore.try_acquire_for(500ms));
  CHECK(avout::testing::failures_to_come() == 0);
  CHECK(permits_queued(client, name) == 1);
}

// A permit node whose deletes fail (here: before they are sent) for longer than one session
// timeout, while its session lives on, must still go: left behind, it would take one of the N
// slots until the session ends. `other` is a process forked beforehand, told to go once the
// node's deletes fail; it must get the N-th permit.
namespace {

avout::testing::ChildProcess nth_permit_taker(avout::testing::StartSignal& go,
                                              const std::string& name, std::size_t n) {
  return avout::testing::ChildProcess(0, [&go, name, n](int) {
    go.wait();
    avout::Client client(options());
    auto semaphore = client.semaphore(name, n);
    if (!semaphore.try_acquire_for(scaled(20s))) {
      throw std::runtime_error("the permit of a failed removal was never freed");
    }
  });
}

// More failed deletes than a session timeout's worth of retries every 100 ms (one second:
// the shortest session the test server grants).
constexpr int failed_deletes = 12;

avout::ClientOptions short_session() {
  auto result = options();
  result.session_timeout = 1000ms;
  return result;
}

}  // namespace

TEST_CASE("a released permit whose deletes fail for a session timeout still frees its slot") {
  (void)avout::testing::shared_zookeeper();
  const std::string name = unique_name("release-fails");
  avout::testing::StartSignal go;
  auto other = nth_permit_taker(go, name, 2);
  avout::Client client(short_session());
  auto semaphore = client.semaphore(name, 2);
  avout::Permit kept = semaphore.acquire();
  avout::Permit released = semaphore.acquire();
  avout::testing::fail_next(avout::testing::ZooKeeperCall::remove, folder_of(client, name),
                            failed_deletes);
  released.release();
  go.release();
  CHECK(other.wait(scaled(40s)) == 0);
  CHECK(avout::testing::failures_to_come() == 0);
  CHECK(kept.is_held());
}

TEST_CASE("an acquire timed out while its deletes fail leaves no node taking a slot") {
  (void)avout::testing::shared_zookeeper();
  const std::string name = unique_name("give-up-fails");
  avout::testing::StartSignal go;
  auto other = nth_permit_taker(go, name, 1);
  avout::Client client(short_session());
  auto semaphore = client.semaphore(name, 1);
  {
    avout::Permit held = semaphore.acquire();
    avout::testing::fail_next(avout::testing::ZooKeeperCall::remove, folder_of(client, name),
                              failed_deletes);
    CHECK_FALSE(semaphore.try_acquire_for(300ms));
  }
  go.release();
  CHECK(other.wait(scaled(40s)) == 0);
  CHECK(avout::testing::failures_to_come() == 0);
}

// A process frozen past its session timeout may have lost its permit to another process by
// the time it runs again; its client hears of the expiry only later. The permit must not be
// reported as held in between.
TEST_CASE("a holder frozen past its session timeout is not held when it resumes") {
  const std::string name = unique_name("frozen");
  const auto held_file = std::filesystem::temp_directory_path() /
                         ("avout-semaphore-frozen-" + name.substr(name.rfind('-') + 1));
  avout::testing::ChildProcess holder(0, [&](int) {
    avout::Client client(options());
    auto semaphore = client.semaphore(name, 1);
    avout::Permit permit = semaphore.acquire();
    auto previous = std::chrono::steady_clock::now();
    std::ofstream(held_file) << "held";
    const auto deadline = previous + scaled(60s);
    while (std::chrono::steady_clock::now() < deadline) {
      const auto started = std::chrono::steady_clock::now();
      const bool held = permit.is_held();
      if (started - previous > 1500ms) {
        if (held) throw std::runtime_error("is_held() true right after a freeze past the session");
        return;
      }
      previous = started;
      std::this_thread::sleep_for(10ms);
    }
    throw std::runtime_error("never frozen");
  });
  REQUIRE(avout::testing::wait_for_file(held_file, scaled(30s)));
  holder.signal(SIGSTOP);
  const auto stopped = std::chrono::steady_clock::now();
  {
    avout::Client client(options());
    auto semaphore = client.semaphore(name, 1);
    // Taking the permit proves the frozen holder's session ended.
    auto permit = semaphore.try_acquire_for(scaled(30s));
    REQUIRE(permit);
    std::this_thread::sleep_until(stopped + 3s);
    holder.signal(SIGCONT);
    CHECK(holder.wait(scaled(30s)) == 0);
  }
  std::filesystem::remove(held_file);
}
