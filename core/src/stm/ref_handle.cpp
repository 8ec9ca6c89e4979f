// RefCore's side of Ref<T>: each call goes to the running transaction of this ref's client,
// or reads the newest value outside one.
#include "stm/transaction.hpp"

#include <avout/errors.hpp>

namespace avout::detail {

namespace {

// The transaction running on this thread when it belongs to `ref`'s client; null outside one.
Transaction* transaction_of(RefCore& ref) {
  Transaction* transaction = Transaction::current();
  if (transaction != nullptr && &transaction->stm() != &ref.stm()) {
    throw Error("ref " + ref.name() + " belongs to another client than the running dosync");
  }
  return transaction;
}

Transaction& required_transaction(RefCore& ref) {
  Transaction* transaction = transaction_of(ref);
  if (transaction == nullptr) {
    throw NoTransaction("ref " + ref.name() +
                        ": alter, commute, ensure and ref_set need "
                        "a running dosync on this thread");
  }
  return *transaction;
}

}  // namespace

Bytes RefCore::deref() {
  if (Transaction* transaction = transaction_of(*this)) return transaction->read(*this);
  return read_latest();
}

Bytes RefCore::read_in_transaction() { return required_transaction(*this).read(*this); }

std::vector<Bytes> RefCore::deref_together(const std::vector<RefHandle*>& handles) {
  std::vector<RefCore*> refs;
  for (RefHandle* handle : handles) {
    auto* ref = dynamic_cast<RefCore*>(handle);
    if (ref == nullptr || &ref->stm() != &stm()) {
      throw Error("deref_all: ref " + handle->name() + " belongs to another client than ref " +
                  name());
    }
    refs.push_back(ref);
  }
  auto read_all = [&](Transaction& transaction) {
    transaction.read_heads(refs);
    transaction.prefetch_values(refs);
    std::vector<Bytes> values;
    for (RefCore* ref : refs) values.push_back(transaction.read(*ref));
    return values;
  };
  if (Transaction* transaction = transaction_of(*this)) return read_all(*transaction);
  std::vector<Bytes> values;
  run_transaction(stm(), [&] { values = read_all(*Transaction::current()); });
  return values;
}

void RefCore::write(Bytes value) { required_transaction(*this).write(*this, std::move(value)); }

Bytes RefCore::ensure() { return required_transaction(*this).ensure(*this); }

Bytes RefCore::commute(std::function<Bytes(const Bytes&)> function) {
  return required_transaction(*this).commute(*this, std::move(function));
}

}  // namespace avout::detail
