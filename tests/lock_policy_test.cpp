// A ReadWriteLock's writer policy belongs to the lock, not to a handle: a hard writer closes no
// gate and soft readers look only at gates, so two policies on one lock would let a reader in
// beside a writer. The first process to open the lock records its policy; one that opens it
// with another is refused with avout::Mismatch naming both.
#include <avout/avout.hpp>

#include "support/servers.hpp"
#include "support/three_stores.hpp"

#include <doctest/doctest.h>

#include <future>
#include <optional>
#include <set>

using namespace std::chrono_literals;

namespace {

std::string unique_name(const std::string& stem) {
  return avout::testing::unique_name("/lock-policy", stem);
}

avout::ClientOptions options() {
  return avout::ClientOptions{.hosts = avout::testing::shared_zookeeper().connect_string(),
                              .session_timeout = 4000ms};
}

const char* name_of(avout::WriterPolicy policy) {
  switch (policy) {
    case avout::WriterPolicy::hard: return "hard";
    case avout::WriterPolicy::soft: return "soft";
    case avout::WriterPolicy::timed_soft: return "timed_soft";
  }
  return "?";
}

}  // namespace

TEST_CASE(
    "opening a read-write lock with another writer policy than its creator's is refused with "
    "Mismatch") {
  avout::Client creator(options()), other(options());
  const std::string name = unique_name("refused");
  auto hard = creator.read_write_lock(name, avout::WriterPolicy::hard);
  for (auto policy : {avout::WriterPolicy::soft, avout::WriterPolicy::timed_soft}) {
    INFO(std::string(name_of(policy)));
    try {
      (void)other.read_write_lock(name, policy);
      FAIL("opened with another policy");
    } catch (const avout::Mismatch& error) {
      const std::string message = error.what();
      CHECK(message.find(name) != std::string::npos);
      CHECK(message.find(std::string("policy ") + name_of(policy)) != std::string::npos);
      CHECK(message.find("hard") != std::string::npos);
    }
  }
  // The same policy opens, and the lock works across the two clients.
  auto same = other.read_write_lock(name, avout::WriterPolicy::hard);
  hard.lock();
  CHECK_FALSE(same.try_lock_shared_for(200ms));
  hard.unlock();
  CHECK(same.try_lock_shared_for(5s));
  same.unlock_shared();
}

TEST_CASE(
    "clients opening one read-write lock at once with different policies agree on one of them") {
  const std::string name = unique_name("race");
  const std::vector<avout::WriterPolicy> policies{
      avout::WriterPolicy::hard, avout::WriterPolicy::soft, avout::WriterPolicy::timed_soft,
      avout::WriterPolicy::soft, avout::WriterPolicy::hard, avout::WriterPolicy::timed_soft};
  std::vector<std::future<bool>> openers;  // true: opened; false: refused with Mismatch
  for (auto policy : policies) {
    openers.push_back(std::async(std::launch::async, [&name, policy] {
      avout::Client client(options());
      try {
        (void)client.read_write_lock(name, policy);
        return true;
      } catch (const avout::Mismatch&) {
        return false;
      }
    }));
  }
  std::set<std::string> opened, refused;
  for (std::size_t i = 0; i < policies.size(); ++i) {
    (openers[i].get() ? opened : refused).insert(name_of(policies[i]));
  }
  REQUIRE(opened.size() == 1);  // every opener that got the lock has the one recorded policy
  CHECK(refused.count(*opened.begin()) == 0);
  CHECK(refused.size() == 2);
}
