#include "avout_recipe.hpp"

#include "workloads.hpp"

namespace avout::bench {

AvoutRecipe::AvoutRecipe(ZooKeeperSession& session, std::size_t refs)
    : session_(session), history_(unique_name("avout-2011") + "/stm-history") {
  session_.create_recursive(history_);
  const std::string base = history_.substr(0, history_.rfind('/'));
  for (std::size_t i = 0; i < refs; ++i) {
    refs_.push_back(base + "/ref-" + std::to_string(i));
    for (const auto* folder : {"/lock", "/history", "/txn"})
      session_.create_recursive(refs_.back() + folder);
  }
}

void AvoutRecipe::deref() {
  auto& session = session_;
  const std::string& ref = refs_.front();
  const std::string& history = history_;
  const std::string lock = session.create(ref + "/lock/n-", {}, CreateMode::ephemeral_sequential);
  (void)session.children(ref + "/lock");
  auto versions = session.children(ref + "/history");
  for (const auto& version : versions) {  // candidates, newest first, until a committed one
    (void)session.get(history + "/" + version.substr(0, version.find('@')));
    break;
  }
  (void)session.get(ref);  // the value (ZooKeeper-held)
  session.remove(lock);
}

void AvoutRecipe::ref_set(std::size_t k) {
  auto& session = session_;
  const std::vector<std::string> refs(refs_.begin(),
                                      refs_.begin() + static_cast<std::ptrdiff_t>(k));
  const std::string& history = history_;
  const Bytes value(8, 2);
  const std::string start =
      session.create(history + "/t-", to_bytes("RUNNING"), CreateMode::persistent_sequential);
  const std::string kept = start.substr(start.rfind('/') + 1);
  std::vector<std::string> tags;
  for (const auto& ref : refs) {  // each ref: read its newest committed value, tag it as written
    const std::string lock = session.create(ref + "/lock/n-", {}, CreateMode::ephemeral_sequential);
    (void)session.children(ref + "/lock");
    auto versions = session.children(ref + "/history");
    if (!versions.empty())
      (void)session.get(history + "/" + versions.front().substr(0, versions.front().find('@')));
    (void)session.children(ref + "/txn");
    tags.push_back(session.create(ref + "/txn/" + kept, {}, CreateMode::ephemeral));
    session.remove(lock);
  }
  auto state = session.get(start);
  session.set(start, to_bytes("COMMITTING"), state.stat.version);
  std::vector<std::string> locks;
  for (const auto& ref : refs) {
    locks.push_back(session.create(ref + "/lock/n-", {}, CreateMode::ephemeral_sequential));
    (void)session.children(ref + "/lock");
  }
  const std::string point =
      session.create(history + "/t-", to_bytes("COMMITTED"), CreateMode::persistent_sequential);
  for (const auto& ref : refs) {
    // Named <start>@<commit point> ('@' because the tick names hold '-').
    session.create(ref + "/history/" + kept + "@" + point.substr(point.rfind('/') + 1), {});
    session.set(ref, value);
  }
  session.set(start, to_bytes("COMMITTED"));
  for (const auto& lock : locks) session.remove(lock);
  for (const auto& tag : tags) session.remove(tag);
  // Older versions go (the recipe trims beyond MAX-HISTORY; here it keeps one): this keeps
  // the run's tree small, and deref finds the newest version first. The refs of one
  // transaction share its nodes: the first ref trimmed removes them.
  for (const auto& ref : refs) {
    for (const auto& old : session.children(ref + "/history")) {
      if (old.rfind(kept + "@", 0) == 0) continue;
      session.remove(ref + "/history/" + old);
      for (const auto& node : {old.substr(0, old.find('@')), old.substr(old.find('@') + 1)}) {
        try {
          session.remove(history + "/" + node);
        } catch (const NoNode&) {  // removed with another ref of its transaction
        }
      }
    }
  }
}

}  // namespace avout::bench
