#pragma once
// Which operations one round's commit multi holds, and in which order (docs/transactions.md
// rules 5, 11, 16): the marker, written/ensured heads, read checks, commuted heads, barging tags, what
// agents and locks added, values created by the multi, the clock, then clean-up. Pure, over
// plain data: tested without a server (tests/stm_unit_test.cpp).

#include <avout/bytes.hpp>
#include <avout/zookeeper_session.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace avout::detail {

/// What a ref's entry asks of the commit.
enum class CommitRole {
  none,      ///< only read: the commit has nothing to do with it
  fixed,     ///< written or ensured: checked at the version read
  commuted,  ///< commuted only: recomputed from the newest value at commit
};

/// The role of a ref that was `written`, `ensured`, and commuted (`commuted`) in an attempt.
CommitRole commit_role(bool written, bool ensured, bool commuted);

/// Everything one round's commit multi is made of, in plain data.
struct CommitPlan {
  /// A head the multi sets (`record`) or only checks (no record), at `version`.
  struct Head {
    std::string path;             ///< the ref's head node
    std::optional<Bytes> record;  ///< the encoded head to set; none: an ensured head's check
    std::int32_t version = 0;     ///< the head's version as read
  };
  std::string marker;                             ///< created by op 0 (rule 6)
  std::vector<Head> fixed;                        ///< written or ensured refs' heads
  std::vector<Head> read_checks;                  ///< heads only read: checked (V4)
  std::vector<Head> commuted;                     ///< commuted refs' heads (always set)
  std::vector<Operation> tags;                    ///< barging tags set or released (rule 10)
  std::vector<std::vector<Operation>> additions;  ///< agents' sends, locks' guards, per addition
  std::vector<Operation> values;                  ///< values the multi creates (rule 11)
  std::string clock;                              ///< the STM clock's path
  std::vector<std::string> cleanup;  ///< trimmed value nodes, carried markers (rule 16)
  std::set<std::string> gone;        ///< clean-up nodes found gone: left out
};

/// One round's commit multi and where its parts start.
struct CommitMulti {
  std::vector<Operation> operations;   ///< the multi, in order
  std::size_t first_commuted = 0;      ///< the commuted heads
  std::size_t first_addition = 0;      ///< agent sends, lock guards
  std::size_t after_additions = 0;     ///< the values created in the multi, then the clock
  std::size_t first_cleanup = 0;       ///< after the clock: clean-up removals
  std::vector<std::size_t> heads_set;  ///< where the multi sets a written or commuted head
};

/// Lays out `plan` as a commit multi (rule 5): marker, fixed heads, read checks (before the
/// commuted heads, so rule 4's first-failing-op inference holds), commuted heads, tags,
/// additions, created values, clock, then removals at version 0 of the clean-up nodes not gone.
CommitMulti lay_out_commit_multi(CommitPlan plan);

}  // namespace avout::detail
