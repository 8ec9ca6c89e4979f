// Leases in ZooKeeper. Each key is one persistent node holding (held, token, duration,
// holder): records/lease_record.hpp. ZooKeeper has no server-side timers, so the contender's
// own steady clock judges expiry: it takes a lease over only after seeing the node unchanged
// (same mzxid) for the lease's duration plus a margin, and the holder's estimate starts before
// its write was even sent, so the holder always believes its lease ended first. Every write is
// a setData at the version just read (or a create), so of two contenders only one wins. The
// node is never deleted: its token counter must survive releases for tokens to keep increasing.
#include "records/lease_record.hpp"
#include "runtime/zookeeper_backend.hpp"

#include <avout/errors.hpp>

#include <boost/uuid/random_generator.hpp>
#include <boost/uuid/uuid_io.hpp>

#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>

namespace avout::detail {

namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

// Observations of keys this process waited for; past this many (keys never retried), all
// are forgotten (that only makes a later takeover wait a full duration again).
constexpr std::size_t max_observations = 4096;

// Covers clock rate differences between holder and contender (and scheduling noise).
milliseconds takeover_margin(milliseconds duration) { return duration / 10 + milliseconds(20); }

// Set once by a watch; the watch callback only signals (it runs on ZooKeeper's event thread).
struct Signal {
  std::mutex mutex;
  std::condition_variable changed;
  bool fired = false;
  void fire() {
    {
      std::lock_guard lock(mutex);
      fired = true;
    }
    changed.notify_all();
  }
  void wait_until(steady_clock::time_point until) {
    std::unique_lock lock(mutex);
    changed.wait_until(lock, until, [&] { return fired; });
  }
};

class ZooKeeperLeaseStrategy final : public LeaseStrategy {
 public:
  ZooKeeperLeaseStrategy(ZooKeeperSession& session, std::string base)
      : session_(session),
        base_(std::move(base)),
        holder_prefix_(boost::uuids::to_string(boost::uuids::random_generator()())) {
    session_.create_recursive(base_);
  }

  std::string description() const override { return "zookeeper lease lock " + base_; }

  std::optional<Lease> acquire(const std::string& key, milliseconds duration,
                               steady_clock::time_point deadline) override {
    const std::string path = base_ + "/" + key;
    while (true) {
      // The watch is armed by the same read that decides, so no change goes unseen.
      auto signal = std::make_shared<Signal>();
      std::optional<NodeData> node;
      try {
        if (steady_clock::now() < deadline) {
          node = session_.get(path, [signal](const WatchEvent&) { signal->fire(); });
        } else {
          node = session_.get(path);
        }
      } catch (const NoNode&) {
      }
      if (!node) {
        if (auto lease = create(path, key, duration)) return lease;
        continue;  // another creator won: look at what it wrote
      }
      const LeaseRecord record = decode_lease_record(node->data, path);
      const auto now = steady_clock::now();
      const auto free_at =
          record.held ? observe(path, node->stat.mzxid, record.duration, now) : now;
      if (now >= free_at) {
        if (auto lease = take(path, key, *node, record, duration)) return lease;
        continue;  // someone changed it first: look again
      }
      if (now >= deadline) return std::nullopt;
      signal->wait_until(std::min(deadline, free_at));
    }
  }

  bool release(const Lease& lease) override {
    return rewrite(lease, [](LeaseRecord& record) {
      record.held = false;
      record.holder.clear();
    });
  }

  bool renew(Lease& lease, milliseconds duration) override {
    const auto sent = steady_clock::now();
    if (!rewrite(lease, [&](LeaseRecord& record) { record.duration = duration; })) return false;
    lease.expires = sent + duration;
    return true;
  }

 private:
  std::string next_holder() { return holder_prefix_ + "-" + std::to_string(++attempts_); }

  // The first token of a key; a ConnectionLoss is resolved by reading what landed.
  std::optional<Lease> create(const std::string& path, const std::string& key,
                              milliseconds duration) {
    const LeaseRecord record{true, 1, duration, next_holder()};
    const auto sent = steady_clock::now();
    try {
      session_.create(path, encode_lease_record(record), CreateMode::persistent);
    } catch (const NodeExists&) {
      return std::nullopt;
    } catch (const NoNode&) {
      session_.create_recursive(base_);  // the parent was removed: restore it, look again
      return std::nullopt;
    } catch (const ConnectionLoss&) {
      if (!landed(path, record)) throw;
    }
    return Lease{key, record.token, sent + duration};
  }

  // Takes a free or expired key: only if the node still has the version just read.
  std::optional<Lease> take(const std::string& path, const std::string& key, const NodeData& node,
                            const LeaseRecord& previous, milliseconds duration) {
    const LeaseRecord record{true, previous.token + 1, duration, next_holder()};
    const auto sent = steady_clock::now();
    try {
      session_.set(path, encode_lease_record(record), node.stat.version);
    } catch (const BadVersion&) {
      return std::nullopt;
    } catch (const NoNode&) {
      return std::nullopt;
    } catch (const ConnectionLoss&) {
      if (!landed(path, record)) throw;
    }
    forget(path);
    return Lease{key, record.token, sent + duration};
  }

  // After a lost reply: did our write land? A sync first, so the read is not stale.
  bool landed(const std::string& path, const LeaseRecord& written) {
    session_.sync(path);
    try {
      const LeaseRecord now = decode_lease_record(session_.get(path).data, path);
      return now.held && now.token == written.token && now.holder == written.holder;
    } catch (const NoNode&) {
      return false;
    }
  }

  // Applies `change` to the lease's record while its token holds the key, at the version read.
  template <typename Change>
  bool rewrite(const Lease& lease, Change change) {
    const std::string path = base_ + "/" + lease.key;
    while (true) {
      NodeData node;
      try {
        node = session_.get(path);
      } catch (const NoNode&) {
        return false;
      }
      LeaseRecord record = decode_lease_record(node.data, path);
      if (!record.held || record.token != lease.token) return false;
      change(record);
      try {
        session_.set(path, encode_lease_record(record), node.stat.version);
        return true;
      } catch (const BadVersion&) {
        // Changed since the read (taken over, or another thread renewed): judge again.
      } catch (const NoNode&) {
        return false;
      }
    }
  }

  // When this process may take over a held lease: `duration` + margin after it first saw
  // this very node state (mzxid) on its own clock.
  steady_clock::time_point observe(const std::string& path, std::int64_t mzxid,
                                   milliseconds duration, steady_clock::time_point now) {
    std::lock_guard lock(mutex_);
    auto found = observations_.find(path);
    if (found == observations_.end()) {
      if (observations_.size() >= max_observations) observations_.clear();
      found = observations_.emplace(path, Observation{mzxid, now}).first;
    } else if (found->second.mzxid != mzxid) {
      found->second = Observation{mzxid, now};
    }
    return found->second.first_seen + duration + takeover_margin(duration);
  }

  void forget(const std::string& path) {
    std::lock_guard lock(mutex_);
    observations_.erase(path);
  }

  struct Observation {
    std::int64_t mzxid;
    steady_clock::time_point first_seen;
  };

  ZooKeeperSession& session_;
  const std::string base_;
  const std::string holder_prefix_;
  std::atomic<std::uint64_t> attempts_{0};
  std::mutex mutex_;
  std::map<std::string, Observation> observations_;
};

}  // namespace

std::shared_ptr<LeaseStrategy> make_zookeeper_lease_strategy(ZooKeeperSession& session,
                                                             std::string base) {
  return std::make_shared<ZooKeeperLeaseStrategy>(session, std::move(base));
}

}  // namespace avout::detail
