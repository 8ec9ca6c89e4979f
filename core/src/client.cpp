#include <avout/client.hpp>
#include <avout/errors.hpp>

#include <algorithm>
#include <random>
#include <thread>

namespace avout {

namespace {

SessionOptions session_options(const ClientOptions& options) {
  return SessionOptions{options.hosts, options.chroot, options.session_timeout,
                        options.connect_timeout, options.digest};
}

}  // namespace

Client::Client(const std::string& hosts) : Client(ClientOptions{.hosts = hosts}) {}

Client::Client(ClientOptions options) : options_(std::move(options)) {
  validate_path(options_.root);
  if (options_.retry_limit == 0) throw Error("ClientOptions::retry_limit must be at least 1");
  session_ = std::make_unique<ZooKeeperSession>(session_options(options_));
  callbacks_ = std::make_shared<detail::CallbackExecutor>();
  zookeeper_store_ = detail::make_zookeeper_store(*session_, options_.root);
  stm_ = std::make_unique<detail::StmContext>(
      *session_, options_.root, callbacks_,
      detail::StmOptions{options_.retry_limit, options_.max_history});
}

void Client::back_off(std::size_t attempt) {
  // Random, growing pauses spread contending retries apart (capped at about 50 ms).
  thread_local std::minstd_rand random{std::random_device{}()};
  const auto cap = std::min<std::size_t>(50, 1 + attempt * 2);
  std::this_thread::sleep_for(std::chrono::microseconds(random() % (cap * 1000)));
}

Client::~Client() {
  // No ZooKeeper event may reach a callback after the executor stopped: close the session
  // first, then drain the callbacks already queued.
  stm_.reset();
  zookeeper_store_.reset();
  session_.reset();
  callbacks_->stop();
}

ZooKeeperSession& Client::session() { return *session_; }

Store& Client::default_store() { return *zookeeper_store_; }

const ClientOptions& Client::options() const { return options_; }

std::shared_ptr<detail::AtomCore> Client::attach_atom(const std::string& name, Store& store) {
  validate_path(name);
  auto state = store.atom_state(name);
  std::string watch_path = state->zookeeper_path();
  const bool notify = watch_path.empty();
  if (notify) {
    // Values outside ZooKeeper announce their changes through a node of their own.
    watch_path = options_.root + "/atom-notices" + name;
    session_->create_recursive(watch_path);
  }
  return std::make_shared<detail::AtomCore>(name, std::move(state), store.max_value_size(),
                                            *session_, std::move(watch_path), notify, callbacks_,
                                            options_.retry_limit);
}

}  // namespace avout
