// <avout/json.hpp>: types with nlohmann to_json/from_json store as JSON without a Codec of
// their own, in atoms and refs too; built-in codecs keep winning for the types they cover.
#include <avout/avout.hpp>
#include <avout/json.hpp>

#include "support/servers.hpp"
#include "support/three_stores.hpp"

#include <doctest/doctest.h>

#include <map>

namespace shop {

struct Order {
  std::string id;
  long quantity = 0;
  std::vector<std::string> tags;
  bool operator==(const Order&) const = default;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Order, id, quantity, tags)

}  // namespace shop

namespace {

std::string unique_root() { return avout::testing::unique_name("", "json"); }

}  // namespace

TEST_CASE("a type with to_json and from_json round-trips as JSON text under the user tag") {
  const shop::Order order{"a1", 3, {"rush", "gift"}};
  const avout::Bytes bytes = avout::encode(order);
  CHECK(avout::codec::kind_of(bytes) == "a user type");
  CHECK(avout::decode<shop::Order>(bytes) == order);
  CHECK(avout::codec::describe(bytes).find("#user") == 0);
  // Containers of such types use the built-in list and map codecs around the JSON.
  const std::map<std::string, shop::Order> book{{"x", order}};
  CHECK(avout::decode<std::map<std::string, shop::Order>>(avout::encode(book)) == book);
  const nlohmann::json raw = {{"k", {1, 2}}};
  CHECK(avout::decode<nlohmann::json>(avout::encode(raw)) == raw);
}

TEST_CASE("built-in codecs still encode strings and vectors, not as JSON") {
  CHECK(avout::codec::kind_of(avout::encode(std::string("x"))) == "a string");
  CHECK(avout::codec::kind_of(avout::encode(std::vector<long>{1})) == "a list");
}

TEST_CASE("JSON that does not parse or has the wrong shape is CodecError") {
  avout::Bytes broken;
  const std::string text = "{\"id\": ";
  avout::codec::write_blob(broken, avout::codec::Tag::user,
                           reinterpret_cast<const std::uint8_t*>(text.data()), text.size());
  CHECK_THROWS_AS(avout::decode<shop::Order>(broken), avout::CodecError);
  CHECK_THROWS_AS(avout::decode<shop::Order>(avout::encode(nlohmann::json{{"id", 5}})),
                  avout::CodecError);
  CHECK_THROWS_AS(avout::decode<shop::Order>(avout::encode(5L)), avout::CodecError);
}

TEST_CASE("an atom and a ref hold a JSON type across clients") {
  const std::string hosts = avout::testing::shared_zookeeper().connect_string();
  const std::string root = unique_root();
  avout::Client writer(avout::ClientOptions{.hosts = hosts, .root = root});
  auto atom = writer.atom<shop::Order>("/latest", shop::Order{"a1", 1, {}});
  atom.swap([](shop::Order order) {
    order.quantity += 4;
    return order;
  });
  auto ref = writer.ref<shop::Order>("/book", shop::Order{"b", 2, {"x"}});
  avout::Client reader(avout::ClientOptions{.hosts = hosts, .root = root});
  CHECK(reader.atom<shop::Order>("/latest", shop::Order{}).deref() == shop::Order{"a1", 5, {}});
  CHECK(reader.ref<shop::Order>("/book", shop::Order{}).deref() == shop::Order{"b", 2, {"x"}});
}
