#include "inspect.hpp"

#include "json_value.hpp"

#include <avout/inspect.hpp>
#include <avout/zookeeper.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <map>
#include <ostream>

namespace avout::tool {

namespace {

// A stored point's value for a report, as value_fields.
Report describe_point(ReferenceData& data, const Point& point) {
  try {
    return value_fields(data.get(point));
  } catch (const MissingPoint&) {
    return missing_value_fields();
  }
}

// The session owning a node, as a report shows it.
std::string session_text(std::int64_t session) {
  char text[32];
  std::snprintf(text, sizeof text, "session 0x%llx", static_cast<unsigned long long>(session));
  return text;
}

// A recipe's queued node: its name and owner, and its fencing token where it has one.
Report node_row(const inspect::QueuedNode& node, bool token) {
  Report row{{"node", node.node}, {"owner", session_text(node.session)}};
  if (token) row["token"] = node.czxid;
  return row;
}

Report node_rows(const std::vector<inspect::QueuedNode>& nodes, bool tokens) {
  Report rows = Report::array();
  for (const auto& node : nodes) rows.push_back(node_row(node, tokens));
  return rows;
}

// Milliseconds since the epoch as an ISO 8601 UTC time ("2026-11-27T13:50:00.123Z").
std::string utc_time(std::int64_t epoch_ms) {
  const std::time_t seconds = static_cast<std::time_t>(epoch_ms / 1000);
  std::tm parts{};
  gmtime_r(&seconds, &parts);
  char text[40];
  const auto length = std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S", &parts);
  std::snprintf(text + length, sizeof text - length, ".%03dZ", static_cast<int>(epoch_ms % 1000));
  return text;
}

// Which store a report's value comes from: its identity (scheme:name, as ZooKeeper records
// it) and its address (the store's description, never a password).
Report store_fields(const Store& store) {
  return Report{{"store", store.identity().text()}, {"address", store.description()}};
}

// A table cell: strings without JSON quotes, null as "-", the rest as JSON. A stored value
// (the field `key` is "value") keeps its quotes, so the string "5" differs from the number 5.
std::string cell(const Report& value, const std::string& key = "") {
  if (value.is_null()) return "-";
  if (value.is_string() && key != "value") return value.get<std::string>();
  return dump_line(value);
}

}  // namespace

namespace {
const std::map<std::string, inspect::Kind>& kinds() {
  static const std::map<std::string, inspect::Kind> kinds{
      {"atoms", inspect::Kind::atoms},         {"refs", inspect::Kind::refs},
      {"agents", inspect::Kind::agents},       {"leases", inspect::Kind::leases},
      {"locks", inspect::Kind::locks},         {"semaphores", inspect::Kind::semaphores},
      {"elections", inspect::Kind::elections}, {"barriers", inspect::Kind::barriers},
      {"queues", inspect::Kind::queues}};
  return kinds;
}
}  // namespace

const std::vector<std::string>& listed_kinds() {
  static const std::vector<std::string> names{"atoms",     "refs",     "agents",
                                              "leases",    "locks",    "semaphores",
                                              "elections", "barriers", "queues"};
  return names;
}

std::vector<std::string> list(Client& client, const std::string& kind, const std::string& prefix) {
  const auto found = kinds().find(kind);
  if (found == kinds().end()) throw InvalidName("unknown kind '" + kind + "'");
  auto names = inspect::names(client, found->second);
  if (!prefix.empty()) {
    validate_path(prefix);
    const std::string below = prefix == "/" ? prefix : prefix + "/";
    std::erase_if(
        names, [&](const std::string& name) { return name != prefix && !name.starts_with(below); });
  }
  std::sort(names.begin(), names.end());
  return names;
}

namespace {

inspect::AtomValue atom_or_not_found(Client& client, Store& store, const std::string& name) {
  auto atom = inspect::atom(client, store, name);
  if (!atom) throw NotFound("atom " + name + " does not exist in " + store.description());
  return std::move(*atom);
}

inspect::RefHead ref_or_not_found(Client& client, const std::string& name) {
  auto head = inspect::ref_head(client, name);
  if (!head) throw NotFound("ref " + name + " does not exist");
  return std::move(*head);
}

}  // namespace

Bytes atom_value(Client& client, Store& store, const std::string& name) {
  return atom_or_not_found(client, store, name).payload;
}

Report show_atom(Client& client, Store& store, const std::string& name) {
  const auto atom = atom_or_not_found(client, store, name);
  Report report{{"kind", "atom"}, {"name", name}};
  report.update(store_fields(store));
  report.update(value_fields(atom.payload));
  report["writes"] = atom.writes;
  return report;
}

Bytes ref_value(Client& client, Store& store, const std::string& name) {
  const auto head = ref_or_not_found(client, name);
  try {
    return store.reference_data(client.ref_value_key(name))->get(head.newest);
  } catch (const MissingPoint&) {
    throw NotFound("ref " + name + " has no value in " + store.description());
  }
}

Bytes agent_value(Client& client, Store& store, const std::string& name) {
  const auto head = inspect::agent_head(client, name);
  if (!head) throw NotFound("agent " + name + " does not exist");
  try {
    return store.reference_data(client.agent_value_key(name))->get(head->point);
  } catch (const MissingPoint&) {
    throw NotFound("agent " + name + " has no value in " + store.description());
  }
}

Report show_ref(Client& client, Store& store, const std::string& name) {
  const auto head = ref_or_not_found(client, name);
  auto data = store.reference_data(client.ref_value_key(name));
  const Report newest = describe_point(*data, head.newest);
  Report history = Report::array();
  for (const auto& older : head.history) {
    Report row{{"zxid", older.commit_zxid}};
    row.update(describe_point(*data, older.point));
    history.push_back(std::move(row));
  }
  Report report{{"kind", "ref"}, {"name", name}};
  report.update(store_fields(store));
  report.update(newest);
  report.update(Report{{"commit_zxid", head.commit_zxid},
                       {"point", head.newest.id},
                       {"kept", head.keep},
                       {"history", history}});
  return report;
}

Report show_agent(Client& client, Store& store, const std::string& name) {
  const auto head = inspect::agent_head(client, name);
  if (!head) throw NotFound("agent " + name + " does not exist");
  auto data = store.reference_data(client.agent_value_key(name));
  std::size_t queued = 0;
  try {
    queued = client.session().children(inspect::agent_queue_path(client, name)).size();
  } catch (const NoNode&) {
  }
  Report report{{"kind", "agent"}, {"name", name}};
  report.update(store_fields(store));
  report.update(describe_point(*data, head->point));
  report["error"] = head->error ? Report(*head->error) : Report(nullptr);
  report["queued"] = queued;
  return report;
}

namespace {

// The sequence number ending a queue node's name orders the queue.
std::vector<std::string> queue(ZooKeeperSession& session, const std::string& folder) {
  std::vector<std::string> names;
  try {
    names = session.children(folder);
  } catch (const NoNode&) {
  }
  std::sort(names.begin(), names.end(), [](const std::string& a, const std::string& b) {
    return a.substr(a.size() >= 10 ? a.size() - 10 : 0) <
           b.substr(b.size() >= 10 ? b.size() - 10 : 0);
  });
  return names;
}

// Where a lock's nodes are, and whether it is a read-write lock; NotFound when neither exists.
std::pair<std::string, bool> lock_base(Client& client, const std::string& name) {
  auto& session = client.session();
  const bool read_write =
      session.exists(inspect::lock_path(client, name, true) + "/writers").has_value();
  const std::string base = inspect::lock_path(client, name, read_write);
  if (!session.exists(base + "/writers")) throw NotFound("lock " + name + " does not exist");
  return {base, read_write};
}

}  // namespace

Report show_lock(Client& client, const std::string& name) {
  auto& session = client.session();
  const auto [base, read_write] = lock_base(client, name);
  auto owner = [&](const std::string& path) {
    auto stat = session.exists(path);
    return stat ? session_text(stat->ephemeral_owner) : std::string("gone");
  };
  const auto writers = queue(session, base + "/writers");
  // Soft-policy writers close the gate with a node of their own under "gates".
  const bool gate = read_write && !queue(session, base + "/gates").empty();
  const auto readers = read_write ? queue(session, base + "/readers") : std::vector<std::string>{};
  Report nodes = Report::array();
  for (std::size_t i = 0; i < writers.size(); ++i) {
    // The first writer holds once no reader is inside (soft policies also close the gate).
    const bool holds = i == 0 && (!read_write || gate || readers.empty());
    nodes.push_back(Report{{"role", holds ? "holder" : "waiter"},
                           {"node", writers[i]},
                           {"owner", owner(base + "/writers/" + writers[i])}});
  }
  for (const auto& reader : readers) {
    nodes.push_back(Report{
        {"role", "reader"}, {"node", reader}, {"owner", owner(base + "/readers/" + reader)}});
  }
  Report report{
      {"kind", read_write ? "read-write lock" : "lock"}, {"name", name}, {"nodes", nodes}};
  if (read_write) report["gate"] = gate ? "closed (a soft-policy writer holds)" : "open";
  report["free"] = writers.empty() && readers.empty() && !gate;
  return report;
}

Report show_semaphore(Client& client, const std::string& name) {
  const auto state = inspect::semaphore(client, name);
  if (!state) throw NotFound("semaphore " + name + " does not exist");
  return Report{{"kind", "semaphore"},
                {"name", name},
                {"permits", state->permits},
                {"held", state->holders.size()},
                {"holders", node_rows(state->holders, true)},
                {"waiters", node_rows(state->waiters, false)}};
}

Report show_election(Client& client, const std::string& name) {
  const auto state = inspect::election(client, name);
  if (!state) throw NotFound("election " + name + " does not exist");
  Report candidates = Report::array();
  for (const auto& candidate : state->candidates) {
    Report row{{"id", candidate.id}};
    row.update(node_row(candidate.node, false));
    candidates.push_back(row);
  }
  const auto* leader = state->candidates.empty() ? nullptr : &state->candidates.front();
  return Report{
      {"kind", "election"},
      {"name", name},
      {"leader", leader ? Report(leader->id) : Report(nullptr)},
      {"leader_owner", leader ? Report(session_text(leader->node.session)) : Report(nullptr)},
      {"fencing_token", leader ? Report(leader->node.czxid) : Report(nullptr)},
      {"candidates", candidates}};
}

Report show_barrier(Client& client, const std::string& name) {
  const auto state = inspect::barrier(client, name);
  if (!state) throw NotFound("barrier " + name + " does not exist");
  Report members = Report::array();
  for (const auto& member : state->members) {
    Report row = node_row(member.node, false);
    if (member.node.session == 0) row["owner"] = "gone";
    row["state"] = member.state;
    members.push_back(row);
  }
  Report report{{"kind", "barrier"},
                {"name", name},
                {"participants", state->participants},
                {"round", state->round},
                {"state", state->closed ? "closed" : "open"}};
  if (!state->closed && state->round > 0)
    report["previous_round"] = state->previous_broke ? "broke" : "completed";
  report["members"] = members;
  report["waiting"] = node_rows(state->waiting, false);
  return report;
}

Report show_queue(Client& client, const std::string& name) {
  const auto state = inspect::work_queue(client, name);
  if (!state) throw NotFound("queue " + name + " does not exist");
  Report oldest = nullptr;
  if (state->oldest) {
    const auto& item = *state->oldest;
    oldest = Report{{"node", item.node}};
    oldest.update(value_fields(item.payload));
    oldest["put_at"] = utc_time(item.created_ms);
    oldest["put_at_ms"] = item.created_ms;
  }
  return Report{{"kind", "queue"},
                {"name", name},
                {"length", state->length},
                {"waiting_takers", state->waiting_takers},
                {"oldest", oldest}};
}

void print(const Report& report, bool json, std::ostream& out) {
  if (json) {
    out << dump_line(report) << "\n";
    return;
  }
  out << cell(report["kind"]) << " " << cell(report["name"]);
  if (report.contains("store")) out << " in " << cell(report["store"]);
  out << "\n";
  for (const auto& [key, value] : report.items()) {
    if (key == "kind" || key == "name" || key == "store") continue;
    if (value.is_object() && key != "value") {
      out << "  " << key << ":\n";
      for (const auto& [field, entry] : value.items())
        out << "    " << field << ": " << cell(entry, field) << "\n";
      continue;
    }
    if (!value.is_array() || key == "value") {
      out << "  " << key << ": " << cell(value, key) << "\n";
      continue;
    }
    out << "  " << key << ": " << value.size() << "\n";
    for (const auto& row : value) {
      out << "   ";
      for (const auto& [field, entry] : row.items())
        out << " " << field << " " << cell(entry, field);
      out << "\n";
    }
  }
}

std::string delete_object(Client& client, Store& store, const std::string& kind,
                          const std::string& name) {
  const bool removed = kind == "atom"     ? client.remove_atom(name, store)
                       : kind == "ref"    ? client.remove_ref(name, store)
                       : kind == "agent"  ? client.remove_agent(name, store)
                       : kind == "lock"   ? client.remove_lock(name)
                       : kind == "rwlock" ? client.remove_read_write_lock(name)
                                          : client.remove_lease(name);
  const std::string what = (kind == "rwlock"  ? "read-write lock"
                            : kind == "lease" ? "lease lock"
                                              : kind) +
                           " " + name;
  if (!removed) throw NotFound(what + " does not exist (or was deleted already)");
  return "deleted " + what;
}

}  // namespace avout::tool
