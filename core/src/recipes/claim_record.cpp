// The first opener's record of what every opener must agree on (recipes/claim_record.hpp).
#include "recipes/claim_record.hpp"
#include "base/back_off.hpp"

#include <avout/errors.hpp>

namespace avout::detail {

void claim_record(ZooKeeperSession& session, const std::string& folder, const Bytes& record,
                  const std::function<void(const Bytes&)>& check, const std::string& what) {
  // The count is the name's, not the handle's: the first opener records it in the folder's
  // empty data; the others must name the same. As Lock's writer policy
  // (locks/lock_core.cpp, claim_policy).
  const Deadline bound = Deadline::after(2 * session.negotiated_timeout());
  for (std::size_t attempt = 0;; ++attempt) {
    try {
      const ReplyDeadline replies(bound);
      const auto node = session.get(folder);
      if (node.data.empty()) {
        try {
          session.set(folder, record, node.stat.version);
        } catch (const BadVersion&) {  // another opener came first: read its record
        }
        continue;
      }
      check(node.data);
      return;
    } catch (const ConnectionLoss&) {  // the set may have landed: the next read tells
    }
    if (!back_off(attempt, bound, outage_pauses)) bound.expire(what);
  }
}

}  // namespace avout::detail
