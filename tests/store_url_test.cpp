// Stores made from URLs: the registry (zookeeper:, the backends' schemes, a program's own),
// Redis URLs with ACL users, databases, unix sockets and IPv6, and PostgreSQL connection
// strings whose passwords stay out of every message whatever form they come in.
#include <avout/avout.hpp>
#include <avout/postgres.hpp>
#include <avout/redis.hpp>
#include <avout/store_registry.hpp>

#include "support/servers.hpp"
#include "support/three_stores.hpp"

#include <doctest/doctest.h>

#include <cstdlib>

using namespace std::chrono_literals;

namespace {

std::string unique_name(const std::string& stem) { return avout::testing::unique_name("", stem); }

avout::ClientOptions options() {
  return avout::ClientOptions{.hosts = avout::testing::shared_zookeeper().connect_string(),
                              .session_timeout = 6000ms};
}

void register_backends() {
  avout::redis::register_store_schemes();
  avout::postgres::register_store_schemes();
}

// The message of the error `work` throws (BackendError or InvalidName expected).
template <typename F>
std::string error_of(F&& work) {
  try {
    work();
  } catch (const avout::BackendError& error) {
    return error.what();
  } catch (const avout::InvalidName& error) {
    return error.what();
  }
  FAIL("no error was thrown");
  return {};
}

void redis_cli(const avout::testing::RedisServer& server, const std::string& command) {
  const std::string line =
      "redis-cli -p " + std::to_string(server.port()) + " " + command + " >/dev/null";
  REQUIRE(std::system(line.c_str()) == 0);
}

// A store that names itself after its URL and keeps values in the client's own store.
class NamedStore final : public avout::Store {
 public:
  NamedStore(avout::Store& inner, std::string url) : inner_(inner), url_(std::move(url)) {}
  std::string description() const override { return "named " + url_; }
  avout::StoreIdentity identity() const override { return inner_.identity(); }
  std::size_t max_value_size() const override { return inner_.max_value_size(); }
  std::unique_ptr<avout::AtomState> atom_state(const std::string& name) override {
    return inner_.atom_state(name);
  }
  std::unique_ptr<avout::ReferenceData> reference_data(const std::string& name) override {
    return inner_.reference_data(name);
  }

 private:
  avout::Store& inner_;
  std::string url_;
};

}  // namespace

TEST_CASE("zookeeper: is the client's own default store, borrowed and not owned") {
  avout::Client client(options());
  auto store = avout::make_store(client, "zookeeper:");
  CHECK(&store.get() == &client.default_store());
  CHECK_FALSE(store.owns());
  CHECK_THROWS_AS(avout::make_store(client, "zookeeper://elsewhere:2181"), avout::InvalidName);
}

TEST_CASE(
    "a scheme registered at runtime makes its stores, and unknown schemes name only the scheme") {
  avout::Client client(options());
  avout::register_store_scheme("Named", [](avout::Client& owner, const std::string& url) {
    return avout::StoreHandle(std::make_unique<NamedStore>(owner.default_store(), url));
  });
  auto store = avout::make_store(client, "NAMED:shelf-1");
  CHECK(store.owns());
  CHECK(store->description() == "named NAMED:shelf-1");
  const auto name = unique_name("named");
  client.atom<long>(name, 7, *store).reset(8);
  CHECK(client.atom<long>(name, 0).deref() == 8);

  const auto schemes = avout::store_schemes();
  CHECK(std::find(schemes.begin(), schemes.end(), "named") != schemes.end());
  const auto unknown = error_of([&] { (void)avout::make_store(client, "nosuch://u:hunter2@h/x"); });
  CHECK(unknown.find("nosuch") != std::string::npos);
  CHECK(unknown.find("hunter2") == std::string::npos);
  CHECK_THROWS_AS(avout::make_store(client, "no scheme here"), avout::InvalidName);
  CHECK_THROWS_AS(avout::register_store_scheme("1bad", nullptr), avout::InvalidName);
}

TEST_CASE(
    "the backends' schemes make Redis and PostgreSQL stores; rediss is refused for want of TLS") {
  register_backends();
  avout::Client client(options());
  for (const std::string& url :
       {avout::testing::shared_redis().url(), avout::testing::shared_postgres().url()}) {
    CAPTURE(url);
    auto store = avout::make_store(client, url);
    CHECK(store.owns());
    const auto name = unique_name("by-url");
    CHECK(client.atom<long>(name, 1, *store).swap([](long v) { return v + 1; }) == 2);
  }
  auto postgres = avout::make_store(
      client, "postgres://avout@127.0.0.1:" +
                  std::to_string(avout::testing::shared_postgres().port()) + "/avout");
  CHECK(postgres->description().rfind("postgres avout@127.0.0.1:", 0) == 0);
  const auto tls =
      error_of([&] { (void)avout::make_store(client, "rediss://:pw@127.0.0.1:6380"); });
  CHECK(tls.find("TLS") != std::string::npos);
}

TEST_CASE("a redis url's ACL user, password and database are used; the password never printed") {
  avout::testing::RedisServer server;
  const std::string port = std::to_string(server.port());
  redis_cli(server, "ACL SETUSER alice on '>al1ce-pw' '~*' '+@all'");
  redis_cli(server, "ACL SETUSER bob on '>b@b:pw' '~*' '+@all'");
  redis_cli(server, "CONFIG SET requirepass r00t-pw");
  avout::Client client(options());
  const auto name = unique_name("acl");

  avout::redis::Store as_alice("redis://alice:al1ce-pw@127.0.0.1:" + port + "/3");
  CHECK(as_alice.description() == "redis alice@127.0.0.1:" + port + "/3");
  client.atom<long>(name, 0, as_alice).reset(42);
  // The same database as the default user (requirepass) sees it; database 0 does not.
  avout::redis::Store default_user_db3("redis://:r00t-pw@127.0.0.1:" + port + "/3");
  CHECK(client.atom<long>(name, 0, default_user_db3).deref() == 42);
  avout::redis::Store default_user_db0("redis://:r00t-pw@127.0.0.1:" + port);
  CHECK(client.atom<long>(name, 5, default_user_db0).deref() == 5);

  // A percent-encoded password ('@' and ':' in it).
  avout::redis::Store as_bob("redis://bob:b%40b%3Apw@127.0.0.1:" + port + "/3");
  CHECK(client.atom<long>(name, 0, as_bob).deref() == 42);

  avout::redis::Store wrong(
      avout::redis::StoreOptions{.url = "redis://alice:wr0ng-pw@127.0.0.1:" + port});
  const auto refused = error_of([&] { (void)client.atom<long>(name, 0, wrong).deref(); });
  CHECK(refused.find("AUTH") != std::string::npos);
  CHECK(refused.find("wr0ng-pw") == std::string::npos);
  CHECK_THROWS_AS(avout::redis::Store("redis://alice@127.0.0.1:" + port), avout::InvalidName);
  CHECK_THROWS_AS(avout::redis::Store("redis://127.0.0.1:" + port + "/notadb"), avout::InvalidName);
  CHECK_THROWS_AS(avout::redis::Store("redis://127.0.0.1:70000"), avout::InvalidName);
}

TEST_CASE("a redis url reaches the server over a unix socket with ?db=N and over IPv6 [::1]") {
  auto& server = avout::testing::shared_redis();
  const std::string port = std::to_string(server.port());
  avout::Client client(options());
  const auto name = unique_name("socket");

  avout::redis::Store by_socket("unix://" + server.socket_path() + "?db=2");
  CHECK(by_socket.description() == "redis unix:" + server.socket_path() + "/2");
  client.atom<long>(name, 0, by_socket).reset(11);
  avout::redis::Store by_tcp_db2(server.url() + "/2");
  CHECK(client.atom<long>(name, 0, by_tcp_db2).deref() == 11);

  avout::redis::Store by_ipv6("redis://[::1]:" + port + "/2");
  CHECK(by_ipv6.description() == "redis [::1]:" + port + "/2");
  CHECK(client.atom<long>(name, 0, by_ipv6).deref() == 11);
  CHECK_THROWS_AS(avout::redis::Store("unix://relative/redis.sock"), avout::InvalidName);
  CHECK_THROWS_AS(avout::redis::Store("unix:///tmp/redis.sock?pool=3"), avout::InvalidName);
}

TEST_CASE(
    "a postgres password stays out of messages in the URL, in ?password= and in key=value form") {
  const std::string port = std::to_string(avout::testing::shared_postgres().port());
  const std::string secret = "pg-S3cret-pw";
  // A database that does not exist: the server refuses the connection after reading it.
  for (const std::string& url :
       {"postgresql://avout:" + secret + "@127.0.0.1:" + port + "/no_such_db",
        "postgres://avout@127.0.0.1:" + port + "/no_such_db?password=" + secret,
        "host=127.0.0.1 port=" + port + " user=avout password=" + secret + " dbname=no_such_db",
        "host=127.0.0.1 port=" + port + " user=avout password='" + secret +
            "' dbname=no_such_db"}) {
    CAPTURE(url);
    avout::postgres::Store store(avout::postgres::StoreOptions{.url = url, .connect_timeout = 2s});
    CHECK(store.description().find(secret) == std::string::npos);
    const auto message = error_of([&] { (void)store.atom_state("/x")->get(); });
    CHECK(message.find("no_such_db") != std::string::npos);
    CHECK(message.find(secret) == std::string::npos);
  }
  const auto malformed =
      error_of([&] { avout::postgres::Store("host=127.0.0.1 password " + secret); });
  CHECK(malformed.find(secret) == std::string::npos);
}

TEST_CASE("a postgres connection string in key=value form connects") {
  const std::string port = std::to_string(avout::testing::shared_postgres().port());
  avout::postgres::Store store("host=127.0.0.1 port=" + port + " user=avout dbname=avout");
  CHECK(store.description() == "postgres avout@127.0.0.1:" + port + "/avout");
  avout::Client client(options());
  const auto name = unique_name("conninfo");
  CHECK(client.atom<long>(name, 3, store).swap([](long v) { return v * 2; }) == 6);
}

TEST_CASE("a store url's name= names the store: its identity is its scheme and that name") {
  register_backends();
  avout::Client client(options());
  const std::string redis = avout::testing::shared_redis().url();
  const std::string postgres = avout::testing::shared_postgres().url();
  CHECK(avout::make_store(client, "zookeeper:")->identity() ==
        avout::StoreIdentity{"zookeeper", "default"});
  CHECK(avout::make_store(client, redis)->identity() == avout::StoreIdentity{"redis", "default"});
  CHECK(avout::make_store(client, redis + "?db=2&name=main")->identity() ==
        avout::StoreIdentity{"redis", "main"});
  CHECK(avout::make_store(client, postgres + "?name=ledger")->identity() ==
        avout::StoreIdentity{"postgresql", "ledger"});
  // A bad name is refused without quoting the URL (it may hold a password).
  const auto bad = error_of([&] { (void)avout::make_store(client, "redis://:pw-42@h:1?name=a:b"); });
  CHECK(bad.find("store name") != std::string::npos);
  CHECK(bad.find("pw-42") == std::string::npos);
  CHECK_THROWS_AS(avout::make_store(client, "redis://h:1?name=x&nope=1"), avout::InvalidName);
}
