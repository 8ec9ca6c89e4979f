#pragma once
// One ref of a client: its head node, its value store, its validator and watches (rule 14:
// one per name per client). Its reads and writes go to the transaction running on the
// calling thread (ref_handle.cpp).

#include "runtime/value_watcher.hpp"

#include <avout/backend.hpp>
#include <avout/detail/ref_handle.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace avout::detail {

class StmContext;

/// One ref: its head node, its value store, its validator and watches.
class RefCore : public RefHandle, public std::enable_shared_from_this<RefCore> {
 public:
  RefCore(std::string name, std::shared_ptr<ReferenceData> data, Store& store,
          std::size_t max_value_size, StmContext& stm);
  const std::string& name() const override { return name_; }
  const std::string& head_path() const { return head_path_; }
  ReferenceData& data() { return *data_; }
  /// The store that made data(): commits write its values through it, batched per store.
  Store& store() { return store_; }
  std::size_t max_value_size() const { return max_value_size_; }
  StmContext& stm() { return stm_; }

  /// The newest committed value (outside transactions).
  Bytes read_latest();
  // RefHandle, the calls of Ref<T> (ref_handle.cpp).
  Bytes deref() override;
  Bytes read_in_transaction() override;
  std::vector<Bytes> deref_together(const std::vector<RefHandle*>& refs) override;
  void write(Bytes value) override;
  Bytes ensure() override;
  Bytes commute(std::function<Bytes(const Bytes&)> function) override;
  void require_kind(const Bytes& sample) override;
  void set_validator(std::function<bool(const Bytes&)> validator) override;
  /// Throws ValidationError when the validator rejects `value`.
  void validate(const Bytes& value);
  /// Notes a history miss in this process (Transaction also reports it to other processes).
  void count_history_miss() { ++history_misses_; }
  /// History misses seen in this process (they grow the kept history, like Clojure's faults;
  /// other processes' misses arrive through the head's child version).
  std::uint32_t history_misses() const { return history_misses_; }
  /// See ValueWatcher.
  void add_watch(const std::string& key, BytesWatch watch) override {
    watcher_->add(key, std::move(watch));
  }
  /// See ValueWatcher.
  void remove_watch(const std::string& key) override { watcher_->remove(key); }

 private:
  std::string name_;
  std::string head_path_;
  std::shared_ptr<ReferenceData> data_;
  Store& store_;
  std::size_t max_value_size_;
  StmContext& stm_;
  std::mutex validator_mutex_;
  std::function<bool(const Bytes&)> validator_;
  std::shared_ptr<ValueWatcher> watcher_;
  std::atomic<std::uint32_t> history_misses_{0};
};

}  // namespace avout::detail
