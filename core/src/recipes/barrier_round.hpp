#pragma once
// The state of a barrier, kept in its folder node's data (its participant count and current
// round: one conditional write changes the round, and a nested barrier's folder among the
// children is neither a participant nor a record), and the judgements made from a
// listing of its folder (docs/recipes.md, "Barrier"). Pure: no ZooKeeper here.
//
// An open round waits for participants: the participant nodes ("p-<id>-<sequence>") whose
// sequence comes after `after` (nodes of earlier rounds may still be there, leaving), in
// queue order. The one at place N-1 closes the round: it writes the N first names as its
// members. A member that leaves records it ("left-<round>-<member>") before its node goes, so
// a member node gone without that record means the member died. The round reopens (number
// + 1, after = its last member's sequence) once every member recorded its leaving (the
// records deleted in the same multi), or once one is seen dead (the records kept, so a member
// still leaving finds its own and knows the round broke; the new round says the last broke,
// for a member whose record's outcome is in doubt).

#include <avout/bytes.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace avout::detail {

/// One round of a barrier as its round node records it.
struct BarrierRound {
  std::uint64_t number = 0;           ///< rounds reopened before this one
  bool closed = false;                ///< its members are chosen (they entered)
  std::optional<std::int32_t> after;  ///< open: only nodes sequenced after this count
  std::vector<std::string> members;   ///< closed: the member node names, in queue order
  bool previous_broke = false;        ///< open: the round before this one broke
  bool operator==(const BarrierRound&) const = default;
};

/// What a barrier's folder node records.
struct BarrierRecord {
  std::size_t participants = 0;  ///< N, fixed by the first opener
  BarrierRound round;            ///< the current round
  bool operator==(const BarrierRecord&) const = default;
};

/// The folder node's bytes for `record`: "<N> open <number> <after|->[ broke]" or
/// "<N> closed <number> <member>...".
Bytes encode_record(const BarrierRecord& record);
/// The record `bytes` hold; CodecError (naming `path`) for bytes no barrier wrote.
BarrierRecord decode_record(const Bytes& bytes, const std::string& path);

/// The participant nodes `round` (open) counts, in queue order, among a folder's `children`.
std::vector<std::string> round_line(std::vector<std::string> children, const BarrierRound& round);
/// `round` closed with the first `n` names of `line` (which must hold that many).
BarrierRound closed_round(const BarrierRound& round, const std::vector<std::string>& line,
                          std::size_t n);
/// The open round after the closed `round`: the next number, after its last member, and
/// whether `round` broke.
BarrierRound next_round(const BarrierRound& round, bool broke);

/// The name of the record that `member` left the round `number`.
std::string left_record(std::uint64_t number, const std::string& member);

/// Where a closed round's leaving stands, from a listing of the folder.
struct LeaveView {
  std::vector<std::string> inside;  ///< members that neither recorded leaving nor died
  std::optional<std::string> dead;  ///< a member whose node is gone without its record
};
/// The leaving of the closed `round` as the folder's `children` show it (listed while the
/// round node still recorded `round`).
LeaveView judge_leave(const BarrierRound& round, const std::vector<std::string>& children);

}  // namespace avout::detail
