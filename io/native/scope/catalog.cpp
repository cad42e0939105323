#include "io/native/scope/catalog.hpp"

#include <algorithm>

#include "io/store/statement.hpp"

namespace shellctl::io::native {
namespace {

using store::run_sql;
using store::statement;
using store::transaction;

constexpr const char* kSchema = R"(
CREATE TABLE IF NOT EXISTS native_meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS native_scopes(
  scope_id TEXT PRIMARY KEY,
  generation INTEGER NOT NULL,
  state TEXT NOT NULL,
  state_reason TEXT NOT NULL DEFAULT '',
  binding_ref TEXT NOT NULL,
  base_snapshot_ref TEXT NOT NULL,
  input_file_refs TEXT NOT NULL,
  capability_digest TEXT NOT NULL,
  deadline TEXT NOT NULL,
  limits TEXT NOT NULL,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  worker_pid INTEGER NOT NULL DEFAULT 0,
  worker_starttime INTEGER NOT NULL DEFAULT 0,
  boot_id TEXT NOT NULL DEFAULT '',
  worker_nonce TEXT NOT NULL DEFAULT '',
  cgroup_path TEXT NOT NULL DEFAULT '');
CREATE TABLE IF NOT EXISTS native_tombstones(
  scope_id TEXT PRIMARY KEY,
  generation INTEGER NOT NULL,
  reason TEXT NOT NULL,
  destroyed_at TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS native_net_pins(
  scope_id TEXT NOT NULL, idx INTEGER NOT NULL, host TEXT NOT NULL, port INTEGER NOT NULL,
  address TEXT NOT NULL, PRIMARY KEY(scope_id, idx, address));
CREATE TABLE IF NOT EXISTS native_net_budget(
  scope_id TEXT PRIMARY KEY, bytes_limit INTEGER NOT NULL, bytes_used INTEGER NOT NULL,
  conns_limit INTEGER NOT NULL, conns_used INTEGER NOT NULL);
)";

constexpr const char* kColumns =
    "scope_id, generation, state, state_reason, binding_ref, base_snapshot_ref, input_file_refs, "
    "capability_digest, deadline, limits, created_at, updated_at, worker_pid, worker_starttime, "
    "boot_id, worker_nonce, cgroup_path";

std::int64_t i64(std::uint64_t v) { return static_cast<std::int64_t>(v); }

scope_record read_record(const statement& s) {
  scope_record r;
  r.scope_id = s.text(0);
  r.generation = static_cast<std::uint64_t>(s.int64(1));
  // A state word this build does not know reads as lost: nothing here accounts for it.
  r.state = parse_state(s.text(2)).value_or(scope_state::lost);
  r.state_reason = s.text(3);
  r.binding_ref = s.text(4);
  r.base_snapshot_ref = s.text(5);
  r.input_file_refs = s.text(6);
  r.capability_digest = s.text(7);
  r.deadline = s.text(8);
  r.limits = s.text(9);
  r.created_at = s.text(10);
  r.updated_at = s.text(11);
  r.worker_pid = static_cast<long>(s.int64(12));
  r.worker_starttime = static_cast<std::uint64_t>(s.int64(13));
  r.boot_id = s.text(14);
  r.worker_nonce = s.text(15);
  r.cgroup_path = s.text(16);
  return r;
}

}  // namespace

std::string_view state_text(scope_state s) {
  constexpr std::string_view names[] = {"creating", "ready", "lost", "destroying", "quarantined"};
  return names[static_cast<int>(s)];
}

std::optional<scope_state> parse_state(std::string_view s) {
  for (auto st : {scope_state::creating, scope_state::ready, scope_state::lost,
                  scope_state::destroying, scope_state::quarantined})
    if (state_text(st) == s) return st;
  return std::nullopt;
}

catalog::catalog(const std::string& path)
    // FULL on every connection: each state is durable before anything acts on it.
    : db_(store::open_full_sync(path, 5000)) {
  try {
    statement v(db_, "PRAGMA user_version");
    const auto version = v.step() ? v.int64(0) : 0;
    if (version > 1)
      throw catalog_error(path + " has schema version " + std::to_string(version) +
                          ", newer than this build knows (1)");
    exec(kSchema);
    exec("PRAGMA user_version=1");
  } catch (...) {
    sqlite3_close(db_);
    db_ = nullptr;
    throw;
  }
}

catalog::~catalog() { sqlite3_close(db_); }

void catalog::exec(const char* sql) { run_sql(db_, sql); }

bool catalog::synchronous_full() {
  statement s(db_, "PRAGMA synchronous");
  return s.step() && s.int64(0) == 2;
}

std::optional<std::string> catalog::fingerprint() {
  statement s(db_, "SELECT value FROM native_meta WHERE key='fingerprint'");
  if (!s.step()) return std::nullopt;
  return s.text(0);
}

void catalog::set_fingerprint(const std::string& fp) {
  statement s(db_, "INSERT INTO native_meta(key, value) VALUES('fingerprint', ?1) "
                   "ON CONFLICT(key) DO NOTHING");
  s.bind(1, fp);
  s.step();
}

create_outcome catalog::begin_create(const scope_record& r, const scope_network& net) {
  transaction t(db_);
  {
    statement s(db_, "SELECT 1 FROM native_scopes WHERE scope_id=?1");
    s.bind(1, r.scope_id);
    if (s.step()) return create_outcome::scope_exists;
  }
  {
    statement s(db_, "SELECT generation FROM native_tombstones WHERE scope_id=?1");
    s.bind(1, r.scope_id);
    if (s.step() && static_cast<std::uint64_t>(s.int64(0)) >= r.generation)
      return create_outcome::generation_stale;
  }
  statement s(db_, std::string("INSERT INTO native_scopes(") + kColumns +
                       ") VALUES(?1, ?2, 'creating', ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?10, 0, 0, "
                       "'', '', '')");
  s.bind(1, r.scope_id);
  s.bind(2, i64(r.generation));
  s.bind(3, r.state_reason);
  s.bind(4, r.binding_ref);
  s.bind(5, r.base_snapshot_ref);
  s.bind(6, r.input_file_refs);
  s.bind(7, r.capability_digest);
  s.bind(8, r.deadline);
  s.bind(9, r.limits);
  s.bind(10, r.created_at);
  s.step();
  // A row left by an interrupted earlier generation's burial would be merged: clear first.
  for (const char* table : {"native_net_pins", "native_net_budget"}) {
    statement d(db_, std::string("DELETE FROM ") + table + " WHERE scope_id=?1");
    d.bind(1, r.scope_id);
    d.step();
  }
  for (std::size_t i = 0; i < net.pins.size(); ++i)
    for (const auto& address : net.pins[i].addresses) {
      statement p(db_, "INSERT INTO native_net_pins(scope_id, idx, host, port, address) "
                       "VALUES(?1, ?2, ?3, ?4, ?5)");
      p.bind(1, r.scope_id);
      p.bind(2, static_cast<std::int64_t>(i));
      p.bind(3, net.pins[i].host);
      p.bind(4, static_cast<std::int64_t>(net.pins[i].port));
      p.bind(5, address);
      p.step();
    }
  if (!net.pins.empty()) {
    statement b(db_, "INSERT INTO native_net_budget(scope_id, bytes_limit, bytes_used, conns_limit, "
                     "conns_used) VALUES(?1, ?2, 0, ?3, 0)");
    b.bind(1, r.scope_id);
    b.bind(2, i64(net.bytes_limit));
    b.bind(3, i64(net.conns_limit));
    b.step();
  }
  t.commit();
  return create_outcome::created;
}

bool catalog::record_worker(const std::string& scope_id, std::uint64_t generation, long pid,
                            std::uint64_t starttime, const std::string& boot_id,
                            const std::string& worker_nonce, const std::string& cgroup_path,
                            const std::string& now) {
  statement s(db_, "UPDATE native_scopes SET worker_pid=?3, worker_starttime=?4, boot_id=?5, "
                   "worker_nonce=?6, cgroup_path=?7, updated_at=?8 "
                   "WHERE scope_id=?1 AND generation=?2 AND state='creating'");
  s.bind(1, scope_id);
  s.bind(2, i64(generation));
  s.bind(3, static_cast<std::int64_t>(pid));
  s.bind(4, i64(starttime));
  s.bind(5, boot_id);
  s.bind(6, worker_nonce);
  s.bind(7, cgroup_path);
  s.bind(8, now);
  s.step();
  return sqlite3_changes(db_) == 1;
}

bool catalog::transition(const std::string& scope_id, std::uint64_t generation,
                         const std::vector<scope_state>& from, scope_state to,
                         const std::string& reason, const std::string& now) {
  if (from.empty()) return false;
  std::string in;
  for (std::size_t i = 0; i < from.size(); ++i)
    in += std::string(i ? "," : "") + "'" + std::string(state_text(from[i])) + "'";
  statement s(db_, "UPDATE native_scopes SET state=?3, state_reason=?4, updated_at=?5 "
                   "WHERE scope_id=?1 AND generation=?2 AND state IN (" + in + ")");
  s.bind(1, scope_id);
  s.bind(2, i64(generation));
  s.bind(3, std::string(state_text(to)));
  s.bind(4, reason);
  s.bind(5, now);
  s.step();
  return sqlite3_changes(db_) == 1;
}

bool catalog::bury(const std::string& scope_id, std::uint64_t generation, const std::string& reason,
                   const std::string& now) {
  transaction t(db_);
  {
    statement s(db_, "DELETE FROM native_scopes "
                     "WHERE scope_id=?1 AND generation=?2 AND state='destroying'");
    s.bind(1, scope_id);
    s.bind(2, i64(generation));
    s.step();
    if (sqlite3_changes(db_) != 1) return false;
  }
  for (const char* table : {"native_net_pins", "native_net_budget"}) {
    statement s(db_, std::string("DELETE FROM ") + table + " WHERE scope_id=?1");
    s.bind(1, scope_id);
    s.step();
  }
  statement s(db_, "INSERT INTO native_tombstones(scope_id, generation, reason, destroyed_at) "
                   "VALUES(?1, ?2, ?3, ?4) ON CONFLICT(scope_id) DO UPDATE SET "
                   "generation=max(generation, excluded.generation), reason=excluded.reason, "
                   "destroyed_at=excluded.destroyed_at");
  s.bind(1, scope_id);
  s.bind(2, i64(generation));
  s.bind(3, reason);
  s.bind(4, now);
  s.step();
  t.commit();
  return true;
}

std::optional<scope_record> catalog::find(const std::string& scope_id) {
  statement s(db_, std::string("SELECT ") + kColumns + " FROM native_scopes WHERE scope_id=?1");
  s.bind(1, scope_id);
  if (!s.step()) return std::nullopt;
  return read_record(s);
}

std::optional<tombstone> catalog::find_tombstone(const std::string& scope_id) {
  statement s(db_, "SELECT scope_id, generation, reason, destroyed_at FROM native_tombstones "
                   "WHERE scope_id=?1");
  s.bind(1, scope_id);
  if (!s.step()) return std::nullopt;
  return tombstone{s.text(0), static_cast<std::uint64_t>(s.int64(1)), s.text(2), s.text(3)};
}

std::vector<scope_record> catalog::retained() {
  statement s(db_, std::string("SELECT ") + kColumns + " FROM native_scopes ORDER BY scope_id");
  std::vector<scope_record> out;
  while (s.step()) out.push_back(read_record(s));
  return out;
}

std::vector<pinned_target> catalog::net_pins(const std::string& scope_id) {
  // rowid order: the resolver's order within a target, as pinned.
  statement s(db_, "SELECT idx, host, port, address FROM native_net_pins WHERE scope_id=?1 "
                   "ORDER BY idx, rowid");
  s.bind(1, scope_id);
  std::vector<pinned_target> out;
  while (s.step()) {
    const auto idx = static_cast<std::size_t>(s.int64(0));
    if (idx >= 64) continue;
    if (out.size() <= idx) out.resize(idx + 1);
    out[idx].host = s.text(1);
    out[idx].port = static_cast<std::uint16_t>(s.int64(2));
    out[idx].addresses.push_back(s.text(3));
  }
  return out;
}

std::optional<net_usage> catalog::net_budget(const std::string& scope_id) {
  statement s(db_, "SELECT bytes_limit, bytes_used, conns_limit, conns_used FROM native_net_budget "
                   "WHERE scope_id=?1");
  s.bind(1, scope_id);
  if (!s.step()) return std::nullopt;
  return net_usage{static_cast<std::uint64_t>(s.int64(0)), static_cast<std::uint64_t>(s.int64(1)),
                   static_cast<std::uint64_t>(s.int64(2)), static_cast<std::uint64_t>(s.int64(3))};
}

bool catalog::charge_net_connection(const std::string& scope_id) {
  statement s(db_, "UPDATE native_net_budget SET conns_used = conns_used + 1 "
                   "WHERE scope_id=?1 AND conns_used + 1 <= conns_limit");
  s.bind(1, scope_id);
  s.step();
  return sqlite3_changes(db_) == 1;
}

std::uint64_t catalog::reserve_net_bytes(const std::string& scope_id, std::uint64_t max) {
  transaction t(db_);
  std::uint64_t n = 0;
  {
    statement s(db_, "SELECT bytes_limit - bytes_used FROM native_net_budget WHERE scope_id=?1");
    s.bind(1, scope_id);
    if (!s.step()) return 0;
    const auto left = s.int64(0);
    n = left > 0 ? std::min<std::uint64_t>(max, static_cast<std::uint64_t>(left)) : 0;
  }
  if (n == 0) return 0;
  statement s(db_, "UPDATE native_net_budget SET bytes_used = bytes_used + ?2 "
                   "WHERE scope_id=?1 AND bytes_used + ?2 <= bytes_limit");
  s.bind(1, scope_id);
  s.bind(2, i64(n));
  s.step();
  if (sqlite3_changes(db_) != 1) return 0;
  t.commit();
  return n;
}

}  // namespace shellctl::io::native
