#include "history.hpp"

#include <time.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <stdexcept>

namespace avout::testing {

std::int64_t monotonic_ns() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return std::int64_t{now.tv_sec} * 1000000000 + now.tv_nsec;
}

HistoryWriter::HistoryWriter(const std::string& path, int process)
    : out_(path, std::ios::app), process_(process) {
  if (!out_) throw std::runtime_error("cannot write history " + path);
}

void HistoryWriter::record(const std::string& type, const std::string& f, std::int64_t id,
                           const nlohmann::json& value) {
  nlohmann::json line{{"process", process_},       {"type", type},  {"f", f}, {"id", id},
                      {"time_ns", monotonic_ns()}, {"value", value}};
  out_ << line.dump() << '\n' << std::flush;
}

SharedHistory::SharedHistory(const std::string& path, int process)
    : writer_(path, process), next_(std::int64_t{process} * 1000000) {}

void SharedHistory::record(const std::string& type, const std::string& f, std::int64_t id,
                           const nlohmann::json& value) {
  std::lock_guard lock(mutex_);
  writer_.record(type, f, id, value);
}

std::vector<nlohmann::json> read_histories(const std::string& directory) {
  std::vector<nlohmann::json> events;
  for (const auto& file : std::filesystem::directory_iterator(directory)) {
    std::ifstream in(file.path());
    std::string line;
    while (std::getline(in, line)) {
      if (line.empty()) continue;
      // A process killed mid-write may leave a torn last line: it completed nothing.
      auto parsed = nlohmann::json::parse(line, nullptr, false);
      if (!parsed.is_discarded()) events.push_back(std::move(parsed));
    }
  }
  return events;
}

std::map<std::int64_t, Operation> pair_operations(const std::vector<nlohmann::json>& events) {
  std::map<std::int64_t, Operation> operations;
  for (const auto& event : events) {
    const auto id = event.at("id").get<std::int64_t>();
    auto& operation = operations[id];
    operation.id = id;
    operation.f = event.at("f").get<std::string>();
    const auto type = event.at("type").get<std::string>();
    if (type == "invoke") {
      operation.invoked_ns = event.at("time_ns").get<std::int64_t>();
      operation.argument = event.at("value");
    } else {
      operation.outcome = type;
      operation.completed_ns = event.at("time_ns").get<std::int64_t>();
      operation.result = event.at("value");
    }
  }
  for (auto& [id, operation] : operations) {
    if (operation.outcome.empty()) operation.outcome = "info";  // its process died first
  }
  return operations;
}

std::vector<std::string> check_counter(const std::map<std::int64_t, Operation>& operations,
                                       long final_value) {
  std::vector<std::string> problems;
  std::vector<const Operation*> acknowledged;
  long unknown = 0;
  for (const auto& [id, operation] : operations) {
    if (operation.f != "increment") continue;
    if (operation.outcome == "ok") acknowledged.push_back(&operation);
    if (operation.outcome == "info") ++unknown;
  }
  std::set<long> values;
  for (const auto* operation : acknowledged) {
    const long value = operation->result.get<long>();
    if (!values.insert(value).second) {
      problems.push_back("two increments returned " + std::to_string(value));
    }
    if (value > final_value) {
      problems.push_back("an increment returned " + std::to_string(value) +
                         " above the final value " + std::to_string(final_value));
    }
  }
  const long acked = static_cast<long>(acknowledged.size());
  if (final_value < acked) {
    problems.push_back("lost increments: final " + std::to_string(final_value) + " < " +
                       std::to_string(acked) + " acknowledged");
  }
  if (final_value > acked + unknown) {
    problems.push_back("doubled increments: final " + std::to_string(final_value) + " > " +
                       std::to_string(acked) + " acknowledged + " + std::to_string(unknown) +
                       " unknown");
  }
  // Real time: sorted by completion, each value must exceed every value of an increment
  // that completed before this one was invoked.
  std::sort(acknowledged.begin(), acknowledged.end(), [](const Operation* a, const Operation* b) {
    return a->completed_ns < b->completed_ns;
  });
  long highest_completed = 0;
  std::size_t next = 0;
  std::vector<const Operation*> by_invoke = acknowledged;
  std::sort(by_invoke.begin(), by_invoke.end(),
            [](const Operation* a, const Operation* b) { return a->invoked_ns < b->invoked_ns; });
  for (const auto* operation : by_invoke) {
    while (next < acknowledged.size() && acknowledged[next]->completed_ns < operation->invoked_ns) {
      highest_completed = std::max(highest_completed, acknowledged[next]->result.get<long>());
      ++next;
    }
    if (operation->result.get<long>() <= highest_completed) {
      problems.push_back("increment " + std::to_string(operation->id) + " returned " +
                         std::to_string(operation->result.get<long>()) + " although " +
                         std::to_string(highest_completed) + " had completed before it began");
    }
  }
  return problems;
}

std::vector<std::string> check_bank(const std::map<std::int64_t, Operation>& operations,
                                    const std::vector<long>& ledger_ids,
                                    const std::vector<long>& balances, long initial) {
  std::vector<std::string> problems;
  std::set<long> recorded;
  for (long id : ledger_ids) {
    if (!recorded.insert(id).second)
      problems.push_back("transfer " + std::to_string(id) + " recorded twice");
  }
  std::vector<long> replayed(balances.size(), initial);
  const long total = initial * static_cast<long>(balances.size());
  for (const auto& [id, operation] : operations) {
    if (operation.f == "audit" && operation.outcome == "ok" &&
        operation.result.get<long>() != total) {
      problems.push_back("audit " + std::to_string(id) + " saw total " +
                         std::to_string(operation.result.get<long>()));
    }
    if (operation.f != "transfer") continue;
    const bool in_ledger = recorded.contains(id);
    if (operation.outcome == "ok" && !in_ledger) {
      problems.push_back("acknowledged transfer " + std::to_string(id) + " is lost");
    }
    if (operation.outcome == "fail" && in_ledger) {
      problems.push_back("failed transfer " + std::to_string(id) + " took effect");
    }
    if (in_ledger) {
      const auto from = operation.argument.at("from").get<std::size_t>();
      const auto to = operation.argument.at("to").get<std::size_t>();
      const auto amount = operation.argument.at("amount").get<long>();
      replayed.at(from) -= amount;
      replayed.at(to) += amount;
      recorded.erase(id);
    }
  }
  for (long id : recorded)
    problems.push_back("ledger holds unknown transfer " + std::to_string(id));
  if (replayed != balances) problems.push_back("replaying the ledgers does not give the balances");
  return problems;
}

}  // namespace avout::testing
