#include "runtime/pending_markers.hpp"

#include "base/log.hpp"
#include "runtime/marked_commit.hpp"
#include "zk/multi_size.hpp"

#include <avout/errors.hpp>

#include <algorithm>
#include <set>

namespace avout::detail {

namespace {
// Removals per multi at close: far under rule 11's size (a marker's path is ~100 bytes).
constexpr std::size_t close_batch = 512;
}  // namespace

PendingMarkers::PendingMarkers(ZooKeeperSession& session, Logger logger,
                               std::chrono::milliseconds grace)
    : session_(session), logger_(std::move(logger)), grace_(grace) {}

std::vector<std::string> PendingMarkers::carry(std::size_t& bytes) {
  const std::size_t chroot = session_.options().chroot.size();
  std::vector<std::string> carried;
  std::lock_guard lock(mutex_);
  auto own = waiting_.find(std::this_thread::get_id());
  if (own == waiting_.end()) return carried;
  for (const auto& waiting : own->second) {
    const std::size_t size = serialized_size(op::Remove{waiting.path, 0}, chroot);
    if (bytes + size > multi_limit) break;
    bytes += size;
    carried.push_back(waiting.path);
  }
  return carried;
}

void PendingMarkers::landed(const std::string& marker) {
  std::vector<std::string> evicted;
  {
    std::lock_guard lock(mutex_);
    auto& own = waiting_[std::this_thread::get_id()];
    own.push_back(Waiting{next_order_++, marker});
    ++count_;
    evict_over_limits(own, evicted);
  }
  // Beyond the bounds a marker goes as before rule 16, by a write of its own; not awaited
  // (gc removes it if this removal is lost). Version 0: markers are never changed.
  for (const auto& path : evicted) {
    try {
      (void)session_.remove_async(path, 0);
    } catch (const Error&) {
    }
  }
}

void PendingMarkers::evict_over_limits(std::deque<Waiting>& own,
                                       std::vector<std::string>& evicted) {
  while (own.size() > per_thread) {
    evicted.push_back(std::move(own.front().path));
    own.pop_front();
    --count_;
  }
  while (count_ > in_all) {
    auto oldest = waiting_.end();
    for (auto it = waiting_.begin(); it != waiting_.end(); ++it) {
      if (!it->second.empty() &&
          (oldest == waiting_.end() || it->second.front().order < oldest->second.front().order)) {
        oldest = it;
      }
    }
    evicted.push_back(std::move(oldest->second.front().path));
    oldest->second.pop_front();
    --count_;
    if (oldest->second.empty() && &oldest->second != &own) waiting_.erase(oldest);
  }
}

void PendingMarkers::removed(const std::vector<std::string>& markers) {
  if (markers.empty()) return;
  std::set<std::string> left(markers.begin(), markers.end());
  std::lock_guard lock(mutex_);
  auto drop_from = [&](std::deque<Waiting>& waiting) {
    const auto before = waiting.size();
    std::erase_if(waiting, [&](const Waiting& w) { return left.erase(w.path) > 0; });
    count_ -= before - waiting.size();
  };
  // Mostly the calling thread's own; an agent commit resolved on another worker thread
  // names those of the thread that sent it.
  const auto own = waiting_.find(std::this_thread::get_id());
  if (own != waiting_.end()) drop_from(own->second);
  for (auto it = waiting_.begin(); it != waiting_.end() && !left.empty(); ++it)
    drop_from(it->second);
  std::erase_if(waiting_, [](const auto& entry) { return entry.second.empty(); });
}

void PendingMarkers::commit_landed(const std::vector<std::string>& carried,
                                   const std::string& marker) {
  removed(carried);
  landed(marker);
}

void PendingMarkers::carried_gone(const std::vector<std::string>& carried,
                                  const std::string& path) {
  if (std::find(carried.begin(), carried.end(), path) != carried.end()) removed({path});
}

std::optional<bool> PendingMarkers::commit(std::vector<Operation> operations,
                                           const std::string& marker, MultiResult* result,
                                           std::size_t cleanup, std::function<bool()> written_named,
                                           std::optional<std::uint64_t> generation) {
  const std::size_t chroot = session_.options().chroot.size();
  std::size_t bytes = 0;
  for (const auto& operation : operations) bytes += serialized_size(operation, chroot);
  const std::size_t first_cleanup = operations.size() - std::min(cleanup, operations.size());
  const std::vector<std::string> carried = carry(bytes);
  for (const auto& path : carried) operations.push_back(op::Remove{path, 0});
  MultiResult reply;
  const std::optional<bool> landed =
      commit_with_cleanup(session_, std::move(operations), first_cleanup,
                          Resolution{marker, grace_, std::move(written_named), generation}, reply,
                          [&](const std::string& path) { carried_gone(carried, path); });
  if (landed && *landed) commit_landed(carried, marker);
  if (result != nullptr) *result = std::move(reply);
  return landed;
}

void PendingMarkers::remove_all() noexcept {
  std::vector<Waiting> all;
  {
    std::lock_guard lock(mutex_);
    for (auto& [thread, waiting] : waiting_) all.insert(all.end(), waiting.begin(), waiting.end());
    waiting_.clear();
    count_ = 0;
  }
  std::sort(all.begin(), all.end(),
            [](const Waiting& a, const Waiting& b) { return a.order < b.order; });
  if (all.empty()) return;
  std::size_t left = all.size();
  try {
    // A closing client does not wait out an outage for them.
    if (!session_.connected()) throw ConnectionLoss("the ZooKeeper session is not connected");
    for (std::size_t start = 0; start < all.size(); start += close_batch) {
      std::vector<Operation> batch;
      for (std::size_t i = start; i < std::min(all.size(), start + close_batch); ++i) {
        batch.push_back(op::Remove{all[i].path, 0});
      }
      const std::size_t size = batch.size();
      while (!batch.empty()) {
        const MultiResult result = session_.multi(batch);
        if (result.committed || result.failed_index >= batch.size()) break;
        // That marker is gone already (gc, or a commit whose reply was lost took it): the
        // others go without it.
        batch.erase(batch.begin() + static_cast<std::ptrdiff_t>(result.failed_index));
      }
      left -= size;
    }
  } catch (const std::exception& error) {
    log(logger_, LogLevel::warning,
        std::to_string(left) + " commit marker(s) under " +
            all.front().path.substr(0, all.front().path.rfind('/')) +
            " are left for gc: removing them at close failed: " + error.what());
  }
}

}  // namespace avout::detail
