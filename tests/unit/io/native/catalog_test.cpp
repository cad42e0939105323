// The supervisor catalog on a real SQLite file (docs/native-scopes.md "The scope service"): FULL on
// every connection, creation that never replaces a scope (S6), stale generations refused
// after a tombstone, compare-and-swap transitions, the worker identity recorded only while
// creating, burial into a tombstone that keeps the highest generation, and all of it
// surviving a reopen.
#include <doctest/doctest.h>

#include <unistd.h>

#include <cstdlib>
#include <string>

#include "io/native/scope/catalog.hpp"

namespace native = shellctl::io::native;
using native::scope_state;

namespace {
struct temp_db {
  std::string dir, path;
  temp_db() {
    char tmpl[] = "/tmp/shellctl-catalog-XXXXXX";
    dir = ::mkdtemp(tmpl);
    path = dir + "/catalog.db";
  }
  ~temp_db() { (void)!std::system(("rm -rf " + dir).c_str()); }
};

native::scope_record request(const std::string& id, std::uint64_t generation) {
  native::scope_record r;
  r.scope_id = id;
  r.generation = generation;
  r.binding_ref = "run-1";
  r.base_snapshot_ref = "canary/base";
  r.input_file_refs = R"(["canary/input.txt"])";
  r.capability_digest = "sha256:00";
  r.deadline = "2026-12-06T00:00:00Z";
  r.limits = R"({"max_jobs":64})";
  r.created_at = "2026-12-05T00:00:00Z";
  return r;
}
}  // namespace

TEST_CASE("a scope is created once; its generation is fenced by its tombstone") {
  temp_db t;
  native::catalog c(t.path);
  CHECK(c.synchronous_full());
  CHECK(c.begin_create(request("s1", 3)) == native::create_outcome::created);
  auto r = c.find("s1");
  REQUIRE(r);
  CHECK(r->state == scope_state::creating);
  CHECK(r->generation == 3);
  CHECK(r->input_file_refs == R"(["canary/input.txt"])");
  // Never replaced, whatever its state or the generation asked for (S6).
  CHECK(c.begin_create(request("s1", 4)) == native::create_outcome::scope_exists);
  CHECK(c.transition("s1", 3, {scope_state::creating}, scope_state::lost, "worker_lost", "t1"));
  CHECK(c.begin_create(request("s1", 9)) == native::create_outcome::scope_exists);

  // Burial only from destroying, for the exact generation.
  CHECK_FALSE(c.bury("s1", 3, "deleted", "t2"));
  CHECK_FALSE(c.transition("s1", 2, {scope_state::lost}, scope_state::destroying, "", "t2"));
  CHECK(c.transition("s1", 3, {scope_state::creating, scope_state::ready, scope_state::lost},
                     scope_state::destroying, "", "t2"));
  CHECK(c.bury("s1", 3, "deleted", "t3"));
  CHECK_FALSE(c.find("s1"));
  auto tomb = c.find_tombstone("s1");
  REQUIRE(tomb);
  CHECK(tomb->generation == 3);
  CHECK(tomb->reason == "deleted");
  // The id is reusable, with a higher generation only.
  CHECK(c.begin_create(request("s1", 3)) == native::create_outcome::generation_stale);
  CHECK(c.begin_create(request("s1", 2)) == native::create_outcome::generation_stale);
  CHECK(c.begin_create(request("s1", 4)) == native::create_outcome::created);
}

TEST_CASE("transitions are compare-and-swap; the worker is recorded only while creating") {
  temp_db t;
  native::catalog c(t.path);
  REQUIRE(c.begin_create(request("s2", 1)) == native::create_outcome::created);
  CHECK(c.record_worker("s2", 1, 4242, 99, "boot", "nonce", "/sys/fs/cgroup/u/s2.g1", "t1"));
  CHECK(c.transition("s2", 1, {scope_state::creating}, scope_state::ready, "", "t2"));
  // A second decider loses: the state is no longer what it expects.
  CHECK_FALSE(c.transition("s2", 1, {scope_state::creating}, scope_state::lost, "", "t3"));
  CHECK_FALSE(c.record_worker("s2", 1, 1, 1, "b", "n", "/x", "t3"));
  auto r = c.find("s2");
  REQUIRE(r);
  CHECK(r->state == scope_state::ready);
  CHECK(r->worker_pid == 4242);
  CHECK(r->worker_starttime == 99);
  CHECK(r->cgroup_path == "/sys/fs/cgroup/u/s2.g1");
  CHECK(r->updated_at == "t2");
  // quarantined -> destroying: a retried DELETE.
  CHECK(c.transition("s2", 1, {scope_state::ready}, scope_state::destroying, "", "t4"));
  CHECK(c.transition("s2", 1, {scope_state::destroying}, scope_state::quarantined,
                     "cleanup_failed", "t5"));
  CHECK(c.transition("s2", 1, {scope_state::quarantined}, scope_state::destroying, "", "t6"));
  CHECK(c.find("s2")->state == scope_state::destroying);
  CHECK(c.retained().size() == 1);
}

TEST_CASE("everything survives a reopen; the fingerprint is kept once") {
  temp_db t;
  {
    native::catalog c(t.path);
    CHECK_FALSE(c.fingerprint());
    c.set_fingerprint("fp-1");
    c.set_fingerprint("fp-2");  // kept once: S7
    REQUIRE(c.begin_create(request("a", 1)) == native::create_outcome::created);
    REQUIRE(c.begin_create(request("b", 5)) == native::create_outcome::created);
  }
  native::catalog c(t.path);
  CHECK(c.synchronous_full());  // FULL is per connection: set again on every open
  CHECK(c.fingerprint() == std::string("fp-1"));
  auto all = c.retained();
  REQUIRE(all.size() == 2);
  CHECK(all[0].scope_id == "a");
  CHECK(all[1].generation == 5);
  CHECK(native::parse_state("quarantined") == scope_state::quarantined);
  CHECK_FALSE(native::parse_state("gone"));
}
