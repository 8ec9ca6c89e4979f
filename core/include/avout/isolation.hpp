#pragma once
// How a dosync isolates its reads from other transactions (docs/transactions.md, "Isolation").

namespace avout {

/// The guarantee a dosync gives: ClientOptions::isolation for every dosync of a client, or
/// given to one dosync.
enum class Isolation {
  /// The default: every read-write commit checks every ref it read, so transactions are
  /// strictly serializable (no write skew without ensure).
  serializable,
  /// Clojure's: every read as of one snapshot, only written and ensured refs checked at
  /// commit; write skew is possible unless the refs read are ensured.
  snapshot,
};

}  // namespace avout
