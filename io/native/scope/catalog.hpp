#pragma once
// The native test supervisor's catalog, <state>/native/catalog.db
// (docs/native-scopes.md "The scope service"): the one durable record of every scope and of
// every generation ever destroyed. WAL with synchronous=FULL on every connection: a scope's
// state is committed before it is acted on, so a crash never leaves a worker the catalog does
// not know of. Every state change is a compare-and-swap (`UPDATE … WHERE state IN (…)`): two
// deciders cannot both win. Used by one actor (native_catalog, the only writer); tests open
// their own files.
#include <sqlite3.h>

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "io/native/net/net_address.hpp"

namespace shellctl::io::native {

struct catalog_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// creating -> ready -> lost; any of those -> destroying -> (tombstone) | quarantined;
// quarantined -> destroying (a retried DELETE).
enum class scope_state { creating, ready, lost, destroying, quarantined };
std::string_view state_text(scope_state s);
std::optional<scope_state> parse_state(std::string_view s);

struct scope_record {
  std::string scope_id;
  std::uint64_t generation = 0;
  scope_state state = scope_state::creating;
  std::string state_reason;
  std::string binding_ref;
  std::string base_snapshot_ref;
  std::string input_file_refs;  // JSON array, as pinned
  std::string capability_digest;
  std::string deadline;         // YYYY-MM-DDTHH:MM:SSZ
  std::string limits;           // JSON object, as pinned
  std::string created_at;
  std::string updated_at;
  // The worker's identity (S11), recorded once it is spawned; 0 / "" before.
  long worker_pid = 0;
  std::uint64_t worker_starttime = 0;
  std::string boot_id;
  std::string worker_nonce;
  std::string cgroup_path;
};

struct tombstone {
  std::string scope_id;
  std::uint64_t generation = 0;  // the highest generation destroyed
  std::string reason;            // deleted | deadline | setup_failed
  std::string destroyed_at;
};

// A scope's network (S22): its targets' pinned addresses and its aggregate budget. Kept in
// native_net_pins and native_net_budget from creation until the tombstone; the budget's
// counters only ever grow (each charge a CAS: `UPDATE … WHERE used + n <= limit`).
struct scope_network {
  std::vector<pinned_target> pins;  // by target index
  std::uint64_t bytes_limit = 0, conns_limit = 0;
};
struct net_usage {
  std::uint64_t bytes_limit = 0, bytes_used = 0, conns_limit = 0, conns_used = 0;
};

enum class create_outcome {
  created,           // the scope is recorded in `creating`
  scope_exists,      // any record for the id (S6: never replaced, even when lost)
  generation_stale,  // a tombstone of this or a later generation
};

class catalog {
 public:
  // Opens or creates the file and its schema (user_version 1; a later one is refused).
  explicit catalog(const std::string& path);
  ~catalog();
  catalog(const catalog&) = delete;
  catalog& operator=(const catalog&) = delete;

  bool synchronous_full();  // PRAGMA synchronous reads FULL on this connection

  // The fingerprint of the key scope tokens are made with (S7): kept once, compared after.
  std::optional<std::string> fingerprint();
  void set_fingerprint(const std::string& fp);

  // One transaction: refuses on any record of the id or a tombstone of generation >= the
  // record's, else inserts it in `creating` (the other fields as given).
  create_outcome begin_create(const scope_record& r, const scope_network& net = {});
  // The worker is spawned: its identity, only while `creating` (CAS). False otherwise.
  bool record_worker(const std::string& scope_id, std::uint64_t generation, long pid,
                     std::uint64_t starttime, const std::string& boot_id,
                     const std::string& worker_nonce, const std::string& cgroup_path,
                     const std::string& now);
  // CAS: `to` only from one of `from`, for this exact generation. False when it did not match.
  bool transition(const std::string& scope_id, std::uint64_t generation,
                  const std::vector<scope_state>& from, scope_state to, const std::string& reason,
                  const std::string& now);
  // One transaction: the scope (which must be `destroying`) goes, and its generation is
  // tombstoned (the tombstone keeps the highest generation). False when it was not there
  // in `destroying`.
  bool bury(const std::string& scope_id, std::uint64_t generation, const std::string& reason,
            const std::string& now);

  std::optional<scope_record> find(const std::string& scope_id);
  std::optional<tombstone> find_tombstone(const std::string& scope_id);
  std::vector<scope_record> retained();  // every scope row, by id

  // The network's pins (by index) and budget; none for a scope without targets.
  std::vector<pinned_target> net_pins(const std::string& scope_id);
  std::optional<net_usage> net_budget(const std::string& scope_id);
  // One connection unit (each dial). False: none left (or no budget).
  bool charge_net_connection(const std::string& scope_id);
  // Reserves min(max, what is left) bytes before a read: the bytes granted, 0 when spent.
  std::uint64_t reserve_net_bytes(const std::string& scope_id, std::uint64_t max);

 private:
  void exec(const char* sql);
  sqlite3* db_ = nullptr;
};

}  // namespace shellctl::io::native
