#include "agents/agent_core.hpp"
#include "agents/agent_workers.hpp"
#include "atoms/atom_core.hpp"
#include "base/callback_executor.hpp"
#include "base/durations.hpp"
#include "locks/lock_core.hpp"
#include "queue/node_removals.hpp"
#include "runtime/runtime.hpp"
#include "runtime/store_records.hpp"
#include "runtime/zookeeper_backend.hpp"
#include "runtime/zookeeper_held_values.hpp"
#include "stm/barging.hpp"
#include "stm/stm_context.hpp"
#include "zk/chroot.hpp"

#include <avout/client.hpp>
#include <avout/errors.hpp>

#include <algorithm>
#include <random>
#include <thread>

namespace avout {

SessionOptions session_options(const ClientOptions& options) {
  return SessionOptions{.hosts = options.hosts,
                        .chroot = options.chroot,
                        .session_timeout = options.session_timeout,
                        .connect_timeout = options.connect_timeout,
                        .digest = options.digest,
                        .logger = options.logger};
}

Client::Client(const std::string& hosts) : Client(ClientOptions{.hosts = hosts}) {}

Client::Client(ClientOptions options) : options_(std::move(options)) {
  detail::normalize_chroot(options_.hosts, options_.chroot);  // store keys name the chroot
  validate_path(options_.root);
  if (options_.retry_limit == 0) throw Error("ClientOptions::retry_limit must be at least 1");
  if (options_.operation_timeout) {
    detail::require_positive(*options_.operation_timeout, "ClientOptions::operation_timeout");
  }
  detail::require_valid(options_.barging);
  detail::require_positive(options_.marker_grace, "ClientOptions::marker_grace");
  if (options_.min_history > options_.max_history) {
    throw Error("ClientOptions::min_history (" + std::to_string(options_.min_history) +
                ") exceeds max_history (" + std::to_string(options_.max_history) + ")");
  }
  session_ = std::make_unique<ZooKeeperSession>(session_options(options_));
  callbacks_ = std::make_shared<detail::CallbackExecutor>(options_.logger);
  zookeeper_store_ = detail::make_zookeeper_store(*session_, options_.root);
  runtime_ = std::make_unique<detail::Runtime>(*session_, options_, callbacks_);
  stm_ = std::make_unique<detail::StmContext>(*runtime_);
  agent_workers_ = std::make_shared<detail::AgentWorkers>(options_.logger);
  node_removals_ = std::make_shared<detail::NodeRemovals>(*session_);
}

Client::~Client() {
  // Callbacks read through the session (a watch fetching the new value): stop them before
  // the session goes; events the closing session still posts are dropped.
  agent_workers_->stop();  // actions in flight finish; their agents are let go
  callbacks_->stop();
  node_removals_->stop();  // the session's close deletes what is left
  stm_.reset();
  runtime_.reset();
  zookeeper_store_.reset();
  session_.reset();
}

ZooKeeperSession& Client::session() { return *session_; }

GarbageReport Client::gc(const std::vector<std::reference_wrapper<Store>>& stores,
                         std::chrono::milliseconds marker_grace) {
  // A store named twice (the default store too) is swept once: a sweep costs requests per ref.
  std::vector<Store*> all{zookeeper_store_.get()};
  for (auto& store : stores) {
    if (std::find(all.begin(), all.end(), &store.get()) == all.end()) all.push_back(&store.get());
  }
  return stm_->collect_garbage(all, marker_grace);
}

Store& Client::default_store() { return *zookeeper_store_; }

const ClientOptions& Client::options() const { return options_; }

std::pair<std::uint64_t, std::uint64_t> Client::transaction_counts() const {
  return {stm_->commits(), stm_->retries()};
}

std::string Client::ref_value_key(const std::string& name) const {
  return runtime_->layout().value_key("ref", name);
}

std::string Client::agent_value_key(const std::string& name) const {
  return runtime_->layout().value_key("agent", name);
}

std::string Client::atom_value_key(const std::string& name) const {
  return runtime_->layout().value_key("atom", name);
}

std::shared_ptr<detail::RefHandle> Client::attach_ref(const std::string& name, Store& store,
                                                      const Bytes& initial) {
  return stm_->attach(name, store, initial);
}

std::shared_ptr<detail::AtomHandle> Client::attach_atom(const std::string& name, Store& store) {
  validate_path(name);
  detail::claim_store(*session_, runtime_->layout(), "atom", name, store.identity(),
                      options_.retry_limit);
  auto state = store.atom_state(name);
  std::string watch_path = detail::held_node_path(*state);
  const bool notify = watch_path.empty();
  if (notify) {
    // A store outside ZooKeeper may be shared by deployments: the value's key names ours, as
    // refs' and agents' do (a ZooKeeper-held atom already lives under our root).
    state = store.atom_state(atom_value_key(name));
    // Values outside ZooKeeper announce their changes through a node of their own.
    watch_path = runtime_->layout().atom_notice(name);
    session_->create_recursive(watch_path);
  }
  return std::make_shared<detail::AtomCore>(
      name, std::move(state), store.max_value_size(), *session_, std::move(watch_path), notify,
      callbacks_, options_.retry_limit, options_.operation_timeout, runtime_->session_deaths(),
      [runtime = runtime_.get()] { runtime->announce_session(); });
}

std::shared_ptr<detail::AgentHandle> Client::attach_agent(const std::string& name, Store& store) {
  validate_path(name);
  detail::claim_store(*session_, runtime_->layout(), "agent", name, store.identity(),
                      options_.retry_limit);
  return std::make_shared<detail::AgentCore>(name,
                                             std::shared_ptr<ReferenceData>(store.reference_data(
                                                 runtime_->layout().value_key("agent", name))),
                                             store.max_value_size(), *runtime_, agent_workers_);
}

Lock Client::lock(const std::string& name) {
  validate_path(name);
  auto core = std::make_shared<detail::LockCore>(
      *session_, runtime_->liveness(), name, runtime_->layout().lock(name, false), std::nullopt,
      std::chrono::milliseconds(0), callbacks_, node_removals_, options_.operation_timeout,
      runtime_->metrics());
  core->start();
  return Lock(std::move(core));
}

ReadWriteLock Client::read_write_lock(const std::string& name, WriterPolicy policy,
                                      std::chrono::milliseconds quiet_period) {
  validate_path(name);
  if (quiet_period.count() < 0) throw InvalidDuration("read_write_lock: negative quiet period");
  auto core = std::make_shared<detail::LockCore>(
      *session_, runtime_->liveness(), name, runtime_->layout().lock(name, true), policy,
      quiet_period, callbacks_, node_removals_, options_.operation_timeout, runtime_->metrics());
  core->start();
  return ReadWriteLock(std::move(core));
}

}  // namespace avout
