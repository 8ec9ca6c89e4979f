// Where a deployment keeps its coordination data (core/src/runtime/layout.hpp) as functions
// over plain data, no server: every path, and the store keys with their escaping.
#include "runtime/layout.hpp"

#include <doctest/doctest.h>

#include <set>
#include <string>

namespace {
using avout::detail::Layout;
}  // namespace

TEST_CASE("layout: the STM's nodes live under <root>/stm") {
  const Layout layout("/chroot", "/avout");
  CHECK(layout.root() == "/avout");
  CHECK(layout.stm_clock() == "/avout/stm/clock");
  CHECK(layout.ref_heads() == "/avout/stm/refs");
  CHECK(layout.ref_head("/a/b") == "/avout/stm/refs/a/b");
  CHECK(layout.tags() == "/avout/stm/tags");
  CHECK(layout.tag("/a") == "/avout/stm/tags/a");
  CHECK(layout.markers() == "/avout/stm/markers");
  CHECK(layout.marker("attempt-1") == "/avout/stm/markers/attempt-1");
  CHECK(layout.sessions() == "/avout/stm/sessions");
  CHECK(layout.session(0x1234) == "/avout/stm/sessions/0000000000001234");
  CHECK(layout.session(-1) == "/avout/stm/sessions/ffffffffffffffff");
}

TEST_CASE("layout: atoms, agents, locks and leases each have their folder under the root") {
  const Layout layout("", "/d");
  CHECK(layout.atoms() == "/d/atoms");
  CHECK(layout.atom("/x") == "/d/atoms/x");
  CHECK(layout.ref_values("/k") == "/d/ref-values/k");
  CHECK(layout.atom_notices() == "/d/atom-notices");
  CHECK(layout.atom_notice("/x") == "/d/atom-notices/x");
  CHECK(layout.agent_heads() == "/d/agents/heads");
  CHECK(layout.agent_head("/g") == "/d/agents/heads/g");
  CHECK(layout.agent_queue("/g") == "/d/agents/queues/g");
  CHECK(layout.locks() == "/d/locks");
  CHECK(layout.lock("/l", false) == "/d/locks/l");
  CHECK(layout.read_write_locks() == "/d/rwlocks");
  CHECK(layout.lock("/l", true) == "/d/rwlocks/l");
  CHECK(layout.leases() == "/d/leases");
  CHECK(layout.lease("/l") == "/d/leases/l");
}

TEST_CASE("layout: the folders of different kinds never share a path") {
  const Layout layout("", "/d");
  const std::set<std::string> folders{
      layout.stm_clock(),     layout.ref_heads(),    layout.tags(),
      layout.markers(),       layout.sessions(),     layout.atoms(),
      layout.ref_values(""),  layout.atom_notices(), layout.agent_heads(),
      layout.agent_queue(""), layout.locks(),        layout.read_write_locks(),
      layout.leases()};
  CHECK(folders.size() == 13);
}

TEST_CASE("layout: a store key is the escaped deployment, the kind and the name") {
  CHECK(Layout("/app", "/avout").value_key("ref", "/x") == "/%2Fapp%2Favout/ref/x");
  CHECK(Layout("", "/avout").value_key("atom", "/a/b") == "/%2Favout/atom/a/b");
  CHECK(Layout("", "/100%").value_key("agent", "/g") == "/%2F100%25/agent/g");
}

TEST_CASE("layout: store keys of different deployments, kinds or names never meet") {
  const Layout layout("", "/r");
  // Roots may nest: the deployment is one escaped segment, so these differ.
  CHECK(layout.value_key("ref", "/ref/x/y") != Layout("", "/r/ref/x").value_key("ref", "/y"));
  CHECK(layout.value_key("ref", "/x") != layout.value_key("agent", "/x"));
  CHECK(layout.value_key("ref", "/x") != layout.value_key("ref", "/y"));
  CHECK(Layout("", "/a%2Fb").value_key("ref", "/x") != Layout("", "/a/b").value_key("ref", "/x"));
  CHECK(Layout("/one", "/avout").value_key("ref", "/x") !=
        Layout("/two", "/avout").value_key("ref", "/x"));
}

TEST_CASE("layout: the same ZooKeeper nodes give the same store keys, however split") {
  // Chroot "/a" with root "/b" is the node /a/b, as root "/a/b" without a chroot is.
  CHECK(Layout("/a", "/b").value_key("ref", "/x") == Layout("", "/a/b").value_key("ref", "/x"));
}
