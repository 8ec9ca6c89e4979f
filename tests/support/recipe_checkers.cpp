#include "recipe_checkers.hpp"

#include <algorithm>
#include <functional>
#include <iterator>
#include <limits>
#include <set>
#include <utility>

namespace avout::testing {

namespace {

constexpr std::int64_t never = std::numeric_limits<std::int64_t>::max();

// One grant of a permit or a leadership: surely real from its grant's return until the invoke
// of its last confirmation (0: never confirmed after the grant).
struct Hold {
  const Operation* grant = nullptr;
  std::uint64_t token = 0;
  std::int64_t sure_until = 0;
};

std::uint64_t token_of(const nlohmann::json& value) {
  if (!value.is_object() || !value.contains("token")) return 0;
  return value.at("token").get<std::uint64_t>();
}

std::string op(const Operation& operation) { return "op " + std::to_string(operation.id); }

// Grants ("ok" with a token above 0) of operations named `grant` whose argument's `key`
// equals `name` (any when `key` is empty), by token; a token granted twice is reported.
std::map<std::uint64_t, Hold> grants(const std::map<std::int64_t, Operation>& operations,
                                     const std::string& grant, const std::string& key,
                                     const std::string& name, std::vector<std::string>& problems) {
  std::map<std::uint64_t, Hold> holds;
  for (const auto& [id, operation] : operations) {
    if (operation.f != grant || operation.outcome != "ok") continue;
    if (!key.empty() && operation.argument.value(key, std::string()) != name) continue;
    const auto token = token_of(operation.result);
    if (token == 0) continue;
    const auto [at, fresh] = holds.try_emplace(token, Hold{&operation, token});
    if (!fresh)
      problems.push_back(name + ": token " + std::to_string(token) + " granted twice, " +
                         op(*at->second.grant) + " and " + op(operation));
  }
  return holds;
}

// The injected expiries ("expiry", argument {"after_ns"}: it came after that moment), by
// process.
std::map<std::int64_t, std::vector<std::int64_t>> expiries_by_process(
    const std::map<std::int64_t, Operation>& operations) {
  std::map<std::int64_t, std::vector<std::int64_t>> expiries;
  for (const auto& [id, operation] : operations) {
    if (operation.f == "expiry")
      expiries[id / 1000000].push_back(operation.argument.at("after_ns").get<std::int64_t>());
  }
  return expiries;
}

// Applies the confirmations (operations named `check`, result true) and the guarded commits
// that landed (named `commit`) to the holds they name by token. A check that found the hold
// lost ends nothing: after a stall is_held() is false until the server confirms the session,
// then true again when it never ended (session_liveness.hpp). A check true after an expiry
// injected into its process since the grant began confirms nothing: the client believes
// until it hears of the expiry (a guarded commit, checked by the server, still confirms).
// `expiries`: expiries_by_process of every operation.
void confirm(const std::map<std::int64_t, Operation>& operations, const std::string& check,
             const std::string& commit, std::map<std::uint64_t, Hold>& holds,
             const std::map<std::int64_t, std::vector<std::int64_t>>& expiries) {
  auto expired_meanwhile = [&](const Hold& hold, const Operation& operation) {
    const auto found = expiries.find(hold.grant->id / 1000000);
    if (found == expiries.end()) return false;
    return std::any_of(found->second.begin(), found->second.end(), [&](std::int64_t after) {
      return after >= hold.grant->invoked_ns && after <= operation.invoked_ns;
    });
  };
  for (const auto& [id, operation] : operations) {
    const bool checked = operation.f == check && operation.result == true;
    if (!(checked || operation.f == commit) || operation.outcome != "ok") continue;
    const auto found = holds.find(token_of(operation.argument));
    if (found == holds.end() || (checked && expired_meanwhile(found->second, operation))) continue;
    found->second.sure_until = std::max(found->second.sure_until, operation.invoked_ns);
  }
}

// More than `n` holds surely real at one moment.
void check_overlap(const std::map<std::uint64_t, Hold>& holds, std::size_t n,
                   const std::string& name, std::vector<std::string>& problems) {
  // (time, +1 start / -1 end, token): at one instant ends go first (no false overlap).
  std::vector<std::tuple<std::int64_t, int, std::uint64_t>> events;
  for (const auto& [token, hold] : holds) {
    if (hold.sure_until <= hold.grant->completed_ns) continue;
    events.emplace_back(hold.grant->completed_ns, 1, token);
    events.emplace_back(hold.sure_until, -1, token);
  }
  std::sort(events.begin(), events.end());
  std::set<std::uint64_t> active;
  for (const auto& [time, kind, token] : events) {
    if (kind < 0) {
      active.erase(token);
      continue;
    }
    active.insert(token);
    if (active.size() <= n) continue;
    std::string tokens;
    for (const auto held : active) tokens += " " + std::to_string(held);
    problems.push_back(name + ": " + std::to_string(active.size()) + " holds at once (at most " +
                       std::to_string(n) + "), tokens" + tokens + " (grant " +
                       op(*holds.at(token).grant) + ")");
  }
}

// A grant that returned before another was invoked has the smaller token.
void check_grant_order(const std::map<std::uint64_t, Hold>& holds, const std::string& name,
                       std::vector<std::string>& problems) {
  std::vector<const Hold*> by_completion, by_invoke;
  for (const auto& [token, hold] : holds) by_completion.push_back(&hold);
  by_invoke = by_completion;
  std::sort(by_completion.begin(), by_completion.end(), [](const Hold* a, const Hold* b) {
    return a->grant->completed_ns < b->grant->completed_ns;
  });
  std::sort(by_invoke.begin(), by_invoke.end(), [](const Hold* a, const Hold* b) {
    return a->grant->invoked_ns < b->grant->invoked_ns;
  });
  const Hold* highest = nullptr;
  std::size_t next = 0;
  for (const auto* hold : by_invoke) {
    while (next < by_completion.size() &&
           by_completion[next]->grant->completed_ns < hold->grant->invoked_ns) {
      if (highest == nullptr || by_completion[next]->token > highest->token)
        highest = by_completion[next];
      ++next;
    }
    if (highest != nullptr && highest->token >= hold->token)
      problems.push_back(name + ": token " + std::to_string(hold->token) + " of " +
                         op(*hold->grant) + " is not above token " +
                         std::to_string(highest->token) + " of " + op(*highest->grant) +
                         ", granted before it began");
  }
}

// A ledger of guarded commits (the op ids of operations named `commit`, in commit order):
// acknowledged commits in it once, failed ones never, nothing else in it; and at each commit
// of token c, the smaller tokens committed later (so alive then) plus c at most `n`. Returns
// nothing; adds to `problems`.
void check_ledger(const std::map<std::int64_t, Operation>& operations, const std::string& commit,
                  const std::vector<long>& ledger, std::size_t n, const std::string& name,
                  const std::function<bool(const Operation&)>& ours,
                  std::vector<std::string>& problems) {
  std::map<long, int> seen;
  std::vector<std::uint64_t> tokens;
  for (const long entry : ledger) {
    ++seen[entry];
    const auto found = operations.find(entry);
    if (found == operations.end() || found->second.f != commit || !ours(found->second)) {
      problems.push_back(name + ": ledger entry " + std::to_string(entry) +
                         " is no guarded commit of it");
      continue;
    }
    // A commit made under no token (0: the grant was not confirmed yet) bounds nothing.
    if (const auto token = token_of(found->second.argument); token != 0) tokens.push_back(token);
  }
  std::set<std::uint64_t> later;
  for (auto at = tokens.rbegin(); at != tokens.rend(); ++at) {
    const auto smaller =
        static_cast<std::size_t>(std::distance(later.begin(), later.lower_bound(*at)));
    if (smaller + 1 > n)
      problems.push_back(name + ": a guarded commit of token " + std::to_string(*at) +
                         " landed before commits of " + std::to_string(smaller) +
                         " smaller tokens: more than " + std::to_string(n) + " alive at once");
    later.insert(*at);
  }
  for (const auto& [id, operation] : operations) {
    if (operation.f != commit || !ours(operation)) continue;
    const int count = seen.contains(id) ? seen.at(id) : 0;
    if (count > 1 || (operation.outcome == "ok" && count != 1) ||
        (operation.outcome == "fail" && count != 0))
      problems.push_back(name + ": " + operation.outcome + " guarded " + op(operation) +
                         " is in the ledger " + std::to_string(count) + " times");
  }
}

}  // namespace

std::vector<std::string> check_permits(const std::map<std::int64_t, Operation>& operations,
                                       const std::map<std::string, std::vector<long>>& ledgers) {
  std::vector<std::string> problems;
  std::map<std::string, std::size_t> semaphores;
  for (const auto& [id, operation] : operations) {
    if (operation.f == "acquire")
      semaphores[operation.argument.at("sem").get<std::string>()] =
          operation.argument.at("n").get<std::size_t>();
  }
  for (const auto& [name, n] : semaphores) {
    auto holds = grants(operations, "acquire", "sem", name, problems);
    std::map<std::int64_t, Operation> own;  // this semaphore's confirmations only
    for (const auto& [id, operation] : operations) {
      if ((operation.f == "permit-held" || operation.f == "permit-commit") &&
          operation.argument.value("sem", std::string()) == name)
        own.emplace(id, operation);
    }
    confirm(own, "permit-held", "permit-commit", holds, expiries_by_process(operations));
    check_overlap(holds, n, "semaphore " + name, problems);
    check_grant_order(holds, "semaphore " + name, problems);
    const auto ledger = ledgers.find(name);
    check_ledger(
        operations, "permit-commit", ledger == ledgers.end() ? std::vector<long>{} : ledger->second,
        n, "semaphore " + name,
        [&](const Operation& operation) {
          return operation.argument.value("sem", std::string()) == name;
        },
        problems);
  }
  return problems;
}

std::vector<std::string> check_leaders(const std::map<std::int64_t, Operation>& operations,
                                       const std::vector<long>& ledger) {
  std::vector<std::string> problems;
  auto holds = grants(operations, "campaign", "", "election", problems);
  confirm(operations, "leading", "leader-commit", holds, expiries_by_process(operations));
  check_overlap(holds, 1, "election", problems);
  check_grant_order(holds, "election", problems);
  // A guarded commit lands only while its leadership is real: never once a later one began.
  for (const auto& [id, operation] : operations) {
    if (operation.f != "leader-commit" || operation.outcome != "ok") continue;
    const auto token = token_of(operation.argument);
    for (auto later = holds.upper_bound(token); later != holds.end(); ++later) {
      if (later->second.grant->completed_ns < operation.invoked_ns) {
        problems.push_back("election: guarded " + op(operation) + " of token " +
                           std::to_string(token) + " landed after token " +
                           std::to_string(later->first) + " was granted (" +
                           op(*later->second.grant) + ")");
        break;
      }
    }
  }
  // The ledger, in commit order: at one leader, tokens never decrease.
  check_ledger(
      operations, "leader-commit", ledger, 1, "election", [](const Operation&) { return true; },
      problems);
  // leader() names the leader whose leadership was surely real throughout the read.
  for (const auto& [id, operation] : operations) {
    if (operation.f != "leader-read" || operation.outcome != "ok") continue;
    for (const auto& [token, hold] : holds) {
      if (hold.grant->completed_ns > operation.invoked_ns ||
          hold.sure_until < operation.completed_ns)
        continue;
      const auto candidate = hold.grant->argument.at("candidate");
      if (operation.result != candidate)
        problems.push_back("election: leader() of " + op(operation) + " read " +
                           operation.result.dump() + " while " + candidate.dump() +
                           " surely led (token " + std::to_string(token) + ")");
    }
  }
  return problems;
}

std::vector<std::string> check_barriers(const std::map<std::int64_t, Operation>& operations) {
  struct Attempt {
    const Operation* enter = nullptr;
    const Operation* leave = nullptr;
    std::int64_t end = never;  // when it was surely out of the barrier
  };
  std::map<std::int64_t, const Operation*> leaves;
  for (const auto& [id, operation] : operations) {
    if (operation.f == "leave")
      leaves[operation.argument.at("attempt").get<std::int64_t>()] = &operation;
  }
  std::map<std::string, std::vector<Attempt>> barriers;
  for (const auto& [id, operation] : operations) {
    if (operation.f != "enter") continue;
    Attempt attempt{&operation};
    if (operation.outcome == "fail") attempt.end = operation.completed_ns;
    if (operation.outcome == "ok" && leaves.contains(id)) {
      attempt.leave = leaves.at(id);
      if (attempt.leave->outcome != "info") attempt.end = attempt.leave->completed_ns;
    }
    barriers[operation.argument.at("barrier").get<std::string>()].push_back(attempt);
  }
  std::vector<std::string> problems;
  for (const auto& [name, attempts] : barriers) {
    for (const auto& p : attempts) {
      if (p.enter->outcome != "ok") continue;
      const auto n = p.enter->argument.at("n").get<std::size_t>();
      std::size_t possible = 0;
      for (const auto& q : attempts) {
        if (&q == &p) continue;
        const bool arrived = q.enter->invoked_ns < p.enter->completed_ns;
        const bool still_in = q.end > p.enter->invoked_ns;
        const bool earlier_round =
            q.enter->outcome == "ok" && q.enter->completed_ns <= p.enter->invoked_ns;
        if (arrived && still_in && !earlier_round) ++possible;
      }
      if (possible + 1 < n)
        problems.push_back("barrier " + name + ": enter " + op(*p.enter) + " returned with " +
                           std::to_string(possible + 1) + " participants that could have been in " +
                           "its round, " + std::to_string(n) + " needed");
      // A leave that returned: every other member of its round had begun to leave.
      if (p.leave == nullptr || p.leave->outcome != "ok") continue;
      std::size_t leaving = 0;
      for (const auto& q : attempts) {
        if (&q == &p || q.enter->outcome != "ok" || q.leave == nullptr) continue;
        const bool same_round = q.enter->invoked_ns < p.enter->completed_ns &&
                                q.enter->completed_ns > p.enter->invoked_ns;
        if (same_round && q.leave->invoked_ns < p.leave->completed_ns) ++leaving;
      }
      if (leaving + 1 < n)
        problems.push_back("barrier " + name + ": leave " + op(*p.leave) + " returned with " +
                           std::to_string(leaving + 1) + " members of its round leaving, " +
                           std::to_string(n) + " needed");
    }
  }
  return problems;
}

std::vector<std::string> check_work_queue(const std::map<std::int64_t, Operation>& operations,
                                          const std::map<std::string, std::vector<long>>& ledgers) {
  std::vector<std::string> problems;
  std::map<long, const Operation*> puts;
  for (const auto& [id, operation] : operations) {
    if (operation.f == "put") puts[operation.argument.at("item").get<long>()] = &operation;
  }
  std::map<long, std::vector<std::string>> taken;  // item: the ledgers it is in
  for (const auto& [ledger, items] : ledgers) {
    for (const long item : items) taken[item].push_back(ledger);
  }
  for (const auto& [item, where] : taken) {
    std::string places;
    for (const auto& ledger : where) places += " " + ledger;
    const auto put = puts.find(item);
    if (put == puts.end())
      problems.push_back("work queue: item " + std::to_string(item) + " was never put, taken in" +
                         places);
    else if (put->second->outcome == "fail")
      problems.push_back("work queue: item " + std::to_string(item) + " of failed put " +
                         op(*put->second) + " was taken in" + places);
    if (where.size() > 1)
      problems.push_back("work queue: item " + std::to_string(item) + " taken by " +
                         std::to_string(where.size()) + " committed takes:" + places);
  }
  for (const auto& [item, put] : puts) {
    if (put->outcome == "ok" && !taken.contains(item))
      problems.push_back("work queue: item " + std::to_string(item) + " of committed put " +
                         op(*put) + " was never taken");
  }
  for (const auto& [id, operation] : operations) {
    if (operation.f != "take" || operation.outcome != "ok" || operation.result.is_null()) continue;
    const auto item = operation.result.get<long>();
    const auto ledger = operation.argument.at("ledger").get<std::string>();
    const auto found = ledgers.find(ledger);
    if (found == ledgers.end() ||
        std::find(found->second.begin(), found->second.end(), item) == found->second.end())
      problems.push_back("work queue: acknowledged take " + op(operation) + " of item " +
                         std::to_string(item) + " is not in its ledger " + ledger);
  }
  return problems;
}

}  // namespace avout::testing
