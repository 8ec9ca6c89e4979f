// The pure parts of core/src/zk as functions over plain data, no server: what a multi weighs
// (what fits one request) and where a chroot written in the hosts string goes.
#include "zk/chroot.hpp"
#include "zk/multi_size.hpp"

#include <avout/errors.hpp>

#include <doctest/doctest.h>

#include <string>

namespace {

using avout::Bytes;
using avout::Operation;
using avout::detail::multi_limit;
using avout::detail::op_overhead;
using avout::detail::serialized_size;
namespace op = avout::op;

// `hosts` and `chroot` after normalize_chroot.
std::pair<std::string, std::string> normalized(std::string hosts, std::string chroot) {
  avout::detail::normalize_chroot(hosts, chroot);
  return {hosts, chroot};
}

}  // namespace

TEST_CASE("multi size: an op weighs its overhead, its path under the chroot and its data") {
  CHECK(serialized_size(10, 100, 0) == op_overhead + 110);
  CHECK(serialized_size(10, 100, 5) == op_overhead + 115);
  const std::string path = "/avout/stm/refs/x";
  const Bytes data(300, 1);
  CHECK(serialized_size(Operation{op::Create{path, data}}, 0) == op_overhead + path.size() + 300);
  CHECK(serialized_size(Operation{op::SetData{path, data, 3}}, 4) ==
        op_overhead + 4 + path.size() + 300);
  // Deletes and checks carry no data.
  CHECK(serialized_size(Operation{op::Remove{path, 3}}, 4) == op_overhead + 4 + path.size());
  CHECK(serialized_size(Operation{op::Check{path, 3}}, 0) == op_overhead + path.size());
}

TEST_CASE("multi size: the limit leaves a margin under ZooKeeper's 1 MB jute.maxbuffer") {
  CHECK(multi_limit < 1024 * 1024);
  CHECK(1024 * 1024 - multi_limit >= 64 * 1024);
}

TEST_CASE("multi size: what fits one request") {
  const std::string path = "/avout/ref-values/r/p-0000000001";
  // The largest value one SetData can carry in a multi of its own.
  const std::size_t largest = multi_limit - op_overhead - path.size();
  CHECK(serialized_size(Operation{op::SetData{path, Bytes(largest, 0), 1}}, 0) == multi_limit);
  CHECK(serialized_size(Operation{op::SetData{path, Bytes(largest + 1, 0), 1}}, 0) > multi_limit);
  // How many creates of 1 KiB values fit together, and that a chroot makes each weigh more.
  const auto per_create = [&](std::size_t chroot) {
    return serialized_size(Operation{op::Create{path, Bytes(1024, 0)}}, chroot);
  };
  const std::size_t fit = multi_limit / per_create(0);
  CHECK(fit * per_create(0) <= multi_limit);
  CHECK((fit + 1) * per_create(0) > multi_limit);
  CHECK(per_create(200) == per_create(0) + 200);
  CHECK(multi_limit / per_create(200) < fit);
  // Checks alone: thousands fit in one request.
  CHECK(multi_limit / serialized_size(Operation{op::Check{path, 1}}, 0) > 5000);
}

TEST_CASE("chroot: a chroot at the end of the hosts moves into the chroot field") {
  CHECK(normalized("a:1,b:2/app", "") == std::pair<std::string, std::string>{"a:1,b:2", "/app"});
  CHECK(normalized("a:1/app/deep", "") == std::pair<std::string, std::string>{"a:1", "/app/deep"});
  CHECK(normalized("a:1/app", "/app") == std::pair<std::string, std::string>{"a:1", "/app"});
  CHECK(normalized("a:1", "/app") == std::pair<std::string, std::string>{"a:1", "/app"});
  CHECK(normalized("a:1", "") == std::pair<std::string, std::string>{"a:1", ""});
}

TEST_CASE("chroot: \"/\" is the whole tree, no chroot") {
  CHECK(normalized("a:1", "/") == std::pair<std::string, std::string>{"a:1", ""});
  CHECK(normalized("a:1/", "") == std::pair<std::string, std::string>{"a:1", ""});
}

TEST_CASE("chroot: two different chroots or an invalid one is InvalidName") {
  CHECK_THROWS_WITH_AS(
      normalized("a:1/one", "/two"),
      "zookeeper: two chroots, \"/one\" in the hosts \"a:1/one\" and \"/two\" in the options",
      avout::InvalidName);
  for (const char* chroot : {"app", "/app/", "/a//b", "/a/../b", "/zookeeper", "/a\x01"}) {
    CAPTURE(chroot);
    CHECK_THROWS_AS(normalized("a:1", chroot), avout::InvalidName);
  }
  CHECK_THROWS_AS(normalized("a:1/app/", ""), avout::InvalidName);
}
