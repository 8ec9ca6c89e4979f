#pragma once
// Checkers of the randomized recipe workload's histories (tests/randomized_recipe_test.cpp,
// support/history.hpp format). Each returns the anomalies found, each naming the operations
// involved; empty means none.
//
// Holds are judged by what the library promises, not more: a holder's view is honest, not
// instant. A permit or a leadership is surely real from the return of the call that granted
// it until the invoke of the last check that confirmed it (is_held()/is_leader() true, or a
// commit guarded by it that landed): is_held() true means the session still backed the node
// then, and a node, once gone, never comes back. A frozen holder (SIGSTOP past its session
// timeout) may lose its hold without knowing while frozen; the promise is that it does not
// confirm the hold once it runs again unless the server confirms its session never ended, so
// a lost hold's sure interval ends before the freeze, and a wrong confirmation after it shows
// as two holds at once. is_held() false is no end: after a stall it is false until the server
// answers, then true again when the session lived. An expiry injected from outside (the
// test's fault injector ends the session while the client's connection may still look alive,
// which a real server does not: it expires only a session it stopped hearing from, and the
// client notices first) is heard of only later: a check true after one ("expiry", argument
// {"after_ns"}: it came after that moment; the process is the operation id / 1000000) since
// the grant began confirms nothing. A guarded commit, which the server checks, always does.

#include "support/history.hpp"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace avout::testing {

/// Semaphores: "acquire" (argument {"sem", "n"}; result {"token"} when granted, null when
/// not), "permit-held" (argument {"sem", "token"}; result is_held()), "permit-commit"
/// (argument {"sem", "token"}; a dosync guarded by the permit that appended its own operation
/// id to the semaphore's ledger in `ledgers`, by "sem"). Finds more than N permits of a
/// semaphore surely held at one moment, one token granted twice, tokens out of grant order
/// (a grant that returned before another began has the smaller token), acknowledged commits
/// missing from the ledger or failed ones in it, and a ledger showing more than N permits alive at
/// one commit: the holders are the first N in line, so a commit of token c followed by commits of k
/// smaller tokens (alive then, as a node never comes back) needs k + 1 <= N.
std::vector<std::string> check_permits(const std::map<std::int64_t, Operation>& operations,
                                       const std::map<std::string, std::vector<long>>& ledgers);

/// Leader election: "campaign" (argument {"candidate"}; result {"token"}), "leading"
/// (argument {"token"}; result is_leader()), "leader-commit" (argument {"token"}; a dosync
/// guarded by the leadership that appended its own operation id to the `ledger` ref),
/// "leader-read" (result leader(): an id or null). Finds two leaderships surely real at one
/// moment, a token granted twice or out of grant order, a guarded commit that landed after a
/// later leadership had been granted, a ledger whose tokens decrease (a deposed leader's
/// commit after its successor's), acknowledged commits missing from the ledger, failed ones
/// in it, and a leader() read naming another candidate while a leadership was surely real
/// throughout the read.
std::vector<std::string> check_leaders(const std::map<std::int64_t, Operation>& operations,
                                       const std::vector<long>& ledger);

/// Double barriers: "enter" (argument {"barrier", "n"}; the operation id names the attempt)
/// and "leave" (argument {"barrier", "attempt": the enter's id}). An enter that returned
/// needs N-1 other attempts of its barrier that could have been in its round: invoked before
/// it returned, still in the barrier when it was invoked (not ended before), and not already
/// past an earlier round's enter when it was invoked. Finds an enter that returned with fewer,
/// and a leave that returned before N-1 others that could have been in its round (entered
/// while it entered) had begun to leave.
std::vector<std::string> check_barriers(const std::map<std::int64_t, Operation>& operations);

/// Work queues: "put" (argument {"item"}; ok: committed, fail: certainly not) and "take"
/// (argument {"ledger"}; result the item or null; a dosync that took the item and appended
/// it to the `ledger` ref in the same commit). `ledgers` are the final lists, read after the
/// queue was drained. Finds an item taken by two committed takes, a committed put never
/// taken, a taken item never put or whose put failed, and an acknowledged take whose item
/// is missing from its ledger.
std::vector<std::string> check_work_queue(const std::map<std::int64_t, Operation>& operations,
                                          const std::map<std::string, std::vector<long>>& ledgers);

}  // namespace avout::testing
