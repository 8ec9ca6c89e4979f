// The semaphore's pure parts (no server): the permit-count record of its folder node, and the
// property its fencing tokens rest on: under HoldRule::first(N) the holders are always a
// prefix of the queue, so a node is granted only once every node ahead of it was, and grant
// order is queue (creation, zxid) order, also across the sequence wrap.
#include "queue/hold_rule.hpp"
#include "queue/queue_names.hpp"
#include "recipes/semaphore_record.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

using avout::Bytes;
using avout::detail::decode_permits;
using avout::detail::encode_permits;
using avout::detail::HoldRule;
using avout::detail::NodeKind;

namespace {

Bytes bytes(const std::string& text) { return Bytes(text.begin(), text.end()); }

// A permit node name with sequence `sequence`, formatted as ZooKeeper does ("%010d").
std::string permit(int id, std::int32_t sequence) {
  char name[64];
  std::snprintf(name, sizeof name, "q-%016x-%010d", id, sequence);
  return name;
}

}  // namespace

TEST_CASE("the permit count record round-trips and rejects other bytes") {
  for (std::size_t n : {1u, 3u, 1000u}) CHECK(decode_permits(encode_permits(n)) == n);
  CHECK_FALSE(decode_permits(Bytes{}));
  CHECK_FALSE(decode_permits(bytes("permits=")));
  CHECK_FALSE(decode_permits(bytes("permits=0")));
  CHECK_FALSE(decode_permits(bytes("permits=3x")));
  CHECK_FALSE(decode_permits(bytes("participants=3")));
}

TEST_CASE("first(N): the holders are the first N of the queue, each waiter watches N ahead") {
  const HoldRule rule = HoldRule::first(3);
  std::vector<std::string> line;
  for (int i = 0; i < 6; ++i) line.push_back(permit(i, i + 1));
  for (std::size_t mine = 0; mine < line.size(); ++mine) {
    const auto turn = rule.turn(line, mine);
    CHECK(turn.holds == (mine < 3));
    if (mine >= 3) {
      CHECK(turn.watch == std::vector<std::string>(line.begin() + static_cast<long>(mine) - 3,
                                                   line.begin() + static_cast<long>(mine)));
    }
  }
}

TEST_CASE("grant order is queue order across the sequence wrap: holders are always a prefix") {
  // Nodes created in this order (so with increasing zxids), their 32-bit sequences wrapping.
  const NodeKind kind{"q", 16};
  const std::vector<std::string> created{permit(1, 2147483646), permit(2, 2147483647),
                                         permit(3, -2147483647 - 1), permit(4, -2147483647),
                                         permit(5, -2147483646)};
  auto line = avout::detail::in_queue_order(
      {created[3], created[0], created[4], created[2], created[1]}, kind);
  CHECK(line == created);
  // Release holders one by one (the first, then the second...): whoever holds at any moment
  // holds with every node created before it, so grants follow creation order.
  const HoldRule rule = HoldRule::first(2);
  std::size_t granted = 0;  // nodes granted so far, in creation order
  while (!line.empty()) {
    for (std::size_t mine = 0; mine < line.size(); ++mine) {
      if (!rule.turn(line, mine).holds) continue;
      const auto index = static_cast<std::size_t>(
          std::find(created.begin(), created.end(), line[mine]) - created.begin());
      CHECK(index <= granted);  // never ahead of an earlier-created node still waiting
      if (index == granted) ++granted;
    }
    line.erase(line.begin());
  }
  CHECK(granted == created.size());
}
