#include "recipes/barrier_round.hpp"
#include "queue/queue_names.hpp"
#include "recipes/barrier_names.hpp"

#include <avout/errors.hpp>

#include <algorithm>
#include <charconv>
#include <sstream>

namespace avout::detail {

Bytes encode_record(const BarrierRecord& record) {
  const BarrierRound& round = record.round;
  std::string text = std::to_string(record.participants) + (round.closed ? " closed " : " open ") +
                     std::to_string(round.number);
  if (round.closed) {
    for (const auto& member : round.members) text += " " + member;
  } else {
    text += " " + (round.after ? std::to_string(*round.after) : std::string("-"));
    if (round.previous_broke) text += " broke";
  }
  return to_bytes(text);
}

BarrierRecord decode_record(const Bytes& bytes, const std::string& path) {
  const std::string text(bytes.begin(), bytes.end());
  const auto bad = [&] {
    return CodecError("barrier " + path + ": not a barrier record: " + text);
  };
  std::istringstream in(text);
  std::string state, word;
  BarrierRecord record;
  BarrierRound& round = record.round;
  if (!(in >> record.participants >> state >> round.number) || record.participants == 0 ||
      (state != "open" && state != "closed")) {
    throw bad();
  }
  round.closed = state == "closed";
  if (round.closed) {
    while (in >> word) {
      if (!is_queue_node(word, participant_kind())) throw bad();
      round.members.push_back(word);
    }
    if (round.members.size() != record.participants) throw bad();
    return record;
  }
  if (!(in >> word)) throw bad();
  if (in >> state) {
    if (state != "broke" || (in >> state)) throw bad();
    round.previous_broke = true;
  }
  if (word != "-") {
    std::int32_t after = 0;
    const auto* end = word.data() + word.size();
    const auto [stop, error] = std::from_chars(word.data(), end, after);
    if (error != std::errc{} || stop != end) throw bad();
    round.after = after;
  }
  return record;
}

std::vector<std::string> round_line(std::vector<std::string> children, const BarrierRound& round) {
  auto line = in_queue_order(std::move(children), participant_kind());
  if (round.after) {
    std::erase_if(line, [&](const std::string& name) {
      return !SequenceOrder{}(*round.after, *sequence_of(name));
    });
  }
  return line;
}

BarrierRound closed_round(const BarrierRound& round, const std::vector<std::string>& line,
                          std::size_t n) {
  BarrierRound closed{round.number, true, std::nullopt, {}, false};
  closed.members.assign(line.begin(), line.begin() + static_cast<std::ptrdiff_t>(n));
  return closed;
}

BarrierRound next_round(const BarrierRound& round, bool broke) {
  // Members are the head of the line: every later node has a later sequence than the last.
  return BarrierRound{round.number + 1, false, sequence_of(round.members.back()), {}, broke};
}

std::string left_record(std::uint64_t number, const std::string& member) {
  return "left-" + std::to_string(number) + "-" + member;
}

LeaveView judge_leave(const BarrierRound& round, const std::vector<std::string>& children) {
  LeaveView view;
  const auto listed = [&](const std::string& name) {
    return std::find(children.begin(), children.end(), name) != children.end();
  };
  for (const auto& member : round.members) {
    if (listed(left_record(round.number, member))) continue;
    if (listed(member)) {
      view.inside.push_back(member);
    } else if (!view.dead) {
      view.dead = member;
    }
  }
  return view;
}

}  // namespace avout::detail
