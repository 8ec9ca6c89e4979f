// Reading an object as a type other than the one it holds: the CodecError names the object and
// says what was expected and what was found, instead of a bare "truncated value".
#include <avout/avout.hpp>

#include "support/servers.hpp"
#include "support/three_stores.hpp"

#include <doctest/doctest.h>

#include <functional>
#include <utility>
#include <vector>

namespace {

std::string unique_root() { return avout::testing::unique_name("", "typed"); }

std::string codec_error_of(const auto& read) {
  try {
    read();
  } catch (const avout::CodecError& error) {
    return error.what();
  }
  return "no CodecError";
}

}  // namespace

TEST_CASE("an atom holding a string read as long is CodecError naming the atom and both kinds") {
  avout::Client client(avout::ClientOptions{
      .hosts = avout::testing::shared_zookeeper().connect_string(), .root = unique_root()});
  (void)client.atom<std::string>("/greeting", "hi");
  const std::string message =
      codec_error_of([&] { (void)client.atom<long>("/greeting", 0).deref(); });
  INFO(message);
  CHECK(message.find("atom /greeting") != std::string::npos);
  CHECK(message.find("expected an integer, found a string") != std::string::npos);
}

TEST_CASE(
    "an agent holding a list attached as a string is CodecError naming the agent, and the "
    "agent keeps working for its own type") {
  avout::Client client(avout::ClientOptions{
      .hosts = avout::testing::shared_zookeeper().connect_string(), .root = unique_root()});
  auto jobs = client.agent<std::vector<long>>("/jobs", {1, 2});
  // Before, the handle attached and its first send failed the agent for every process.
  const std::string message = codec_error_of([&] {
    auto mistyped = client.agent<std::string>("/jobs", "");
    mistyped.send([](std::string text) { return text + "!"; });
    (void)mistyped.await_for(std::chrono::seconds(30));
  });
  INFO(message);
  CHECK(message.find("agent /jobs holds a list, not a string") != std::string::npos);
  jobs.send([](std::vector<long> list) {
    list.push_back(3);
    return list;
  });
  REQUIRE(jobs.await_for(avout::testing::scaled(std::chrono::seconds(30))));
  CHECK_FALSE(jobs.error().has_value());
  CHECK(jobs.deref() == std::vector<long>{1, 2, 3});
}

TEST_CASE(
    "a ref whose value does not fit the handle's type is CodecError naming the ref, read "
    "by alter, commute and ensure in a transaction too") {
  avout::Client client(avout::ClientOptions{
      .hosts = avout::testing::shared_zookeeper().connect_string(), .root = unique_root()});
  (void)client.ref<long>("/wide", 1L << 40);
  auto narrow = client.ref<int>("/wide", 0);
  const std::vector<std::pair<const char*, std::function<void()>>> reads{
      {"deref", [&] { (void)narrow.deref(); }},
      {"alter", [&] { client.dosync([&] { narrow.alter([](int value) { return value + 1; }); }); }},
      {"commute",
       [&] { client.dosync([&] { narrow.commute([](int value) { return value + 1; }); }); }},
      {"ensure", [&] { client.dosync([&] { (void)narrow.ensure(); }); }},
  };
  for (const auto& read : reads) {
    const std::string message = codec_error_of(read.second);
    INFO(std::string(read.first) << ": " << message);
    CHECK(message.find("ref /wide") != std::string::npos);
    CHECK(message.find("out of the type's range") != std::string::npos);
  }
}
