// The scope service's actors under CAF's deterministic test_coordinator (docs/native-scopes.md
// "The scope service"): the real scope_registry over the real native_catalog on a real
// SQLite file (scheduled here, so that the test decides every step). What is checked is
// what needs no worker process: the documented order of the checks (scope, then
// generation), fencing (an id held from its first check; a tombstoned generation never
// comes back), the catalog's compare-and-swap and network budget, and adoption of an empty
// catalog. A scope that reaches its worker is the component suites' (tests/e2e/native).
#include <doctest/doctest.h>
#include <unistd.h>

#include <caf/all.hpp>
#include <caf/scheduler/test_coordinator.hpp>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>

#include "actors/native/catalog.hpp"
#include "actors/native/scope_registry.hpp"
#include "io/native/scope/catalog.hpp"

using namespace shellctl::actors;
namespace native = shellctl::io::native;

namespace {

struct scope_fixture {
  std::string dir;
  caf::actor_system_config cfg;
  std::optional<caf::actor_system> sys;
  caf::scheduler::test_coordinator* sched = nullptr;
  std::shared_ptr<native::catalog> db;
  native_catalog_actor catalog;
  scope_registry_actor registry;

  scope_fixture() {
    char tmpl[] = "/tmp/shellctl-scopes-XXXXXX";
    dir = ::mkdtemp(tmpl);
    cfg.set("scheduler.policy", caf::atom("testing"));
    db = std::make_shared<native::catalog>(dir + "/catalog.db");
  }
  ~scope_fixture() {
    if (sys) {
      caf::anon_send(registry, native_shutdown{});
      caf::anon_send(catalog, native_shutdown{});
      sched->run();
    }
    sys.reset();
    db.reset();
    std::system(("rm -rf '" + dir + "'").c_str());
  }

  void start() {
    sys.emplace(cfg);
    sched = &dynamic_cast<caf::scheduler::test_coordinator&>(sys->scheduler());
    auto settings = std::make_shared<supervisor_settings>();
    settings->state_dir = dir;
    settings->capability_digest = "sha256:current";
    settings->max_scopes = 2;
    catalog = sys->spawn(native_catalog, db);
    registry = sys->spawn(scope_registry, std::shared_ptr<const supervisor_settings>(settings), catalog);
    sched->run();
  }

  // Sends `req` to `to` from a client actor; the answer or the error lands in the optionals.
  template <class Actor, class Request, class Reply>
  void ask(const Actor& to, Request req, std::optional<Reply>& out, std::optional<native_error_view>& err) {
    sys->spawn([to, req, &out, &err](caf::event_based_actor* client) {
      client->request(to, std::chrono::seconds(60), req)
          .then([&out](Reply& r) { out = std::move(r); },
                [&err](caf::error& e) { err = read_native_error(e, native_errc::storage_unavailable); });
    });
  }

  // A scope row in the catalog, as a create would have begun it.
  native::scope_record row(const std::string& id, std::uint64_t generation) {
    native::scope_record r;
    r.scope_id = id;
    r.generation = generation;
    r.capability_digest = "sha256:current";
    r.deadline = "2099-01-01T00:00:00Z";
    r.limits = "{}";
    r.created_at = r.updated_at = "2026-12-07T00:00:00Z";
    return r;
  }

  // A destroyed generation: begun, moved to destroying, buried.
  void tombstone(const std::string& id, std::uint64_t generation) {
    REQUIRE(db->begin_create(row(id, generation)) == native::create_outcome::created);
    REQUIRE(db->transition(id, generation, {native::scope_state::creating}, native::scope_state::destroying,
                           "deleted", "2026-12-07T00:00:01Z"));
    REQUIRE(db->bury(id, generation, "deleted", "2026-12-07T00:00:02Z"));
  }
};

native::create_request create(const std::string& id, std::uint64_t generation,
                              const std::string& digest = "sha256:current") {
  native::create_request r;
  r.scope_id = id;
  r.generation = generation;
  r.capability_digest = digest;
  r.deadline = "2099-01-01T00:00:00Z";
  return r;
}

}  // namespace

TEST_CASE("a scope that does not exist: 404, or 410 for the generation that was destroyed") {
  scope_fixture f;
  f.tombstone("s-gone", 3);
  f.start();

  std::optional<scope_answer> a1, a2, a3;
  std::optional<native_error_view> e1, e2, e3;
  f.ask(f.registry, inspect_scope{"s-never", std::string("1")}, a1, e1);
  f.ask(f.registry, inspect_scope{"s-gone", std::string("3")}, a2, e2);
  f.ask(f.registry, inspect_scope{"s-gone", std::string("2")}, a3, e3);
  f.sched->run();
  CHECK_FALSE(a1);
  REQUIRE(e1);
  CHECK(e1->code == native_errc::scope_not_found);
  REQUIRE(e2);
  CHECK(e2->code == native_errc::scope_destroyed);
  CHECK(e2->message.find("generation 3") != std::string::npos);
  REQUIRE(e3);
  CHECK(e3->code == native_errc::scope_not_found);  // only the destroyed generation is 410

  // An id that could never be a scope is answered without the catalog.
  std::optional<scope_gone> gone;
  std::optional<native_error_view> e4;
  f.ask(f.registry, destroy_scope{"../etc", std::string("1")}, gone, e4);
  f.sched->run();
  REQUIRE(e4);
  CHECK(e4->code == native_errc::scope_not_found);
}

TEST_CASE("creation is fenced: an existing record, a stale generation, the digest; the id is free after") {
  scope_fixture f;
  REQUIRE(f.db->begin_create(f.row("s-held", 1)) == native::create_outcome::created);
  f.tombstone("s-old", 5);
  f.start();

  std::optional<scope_answer> a;
  std::optional<native_error_view> held, stale, digest;
  f.ask(f.registry, create_scope{create("s-held", 2)}, a, held);
  f.ask(f.registry, create_scope{create("s-old", 5)}, a, stale);
  f.ask(f.registry, create_scope{create("s-new", 1, "sha256:other")}, a, digest);
  f.sched->run();
  CHECK_FALSE(a);
  REQUIRE(held);
  CHECK(held->code == native_errc::scope_exists);  // any record, never replaced
  REQUIRE(stale);
  CHECK(stale->code == native_errc::scope_generation_stale);
  REQUIRE(digest);
  CHECK(digest->code == native_errc::capability_digest_mismatch);

  // The refused creation held the id only while it was checked.
  std::optional<native_error_view> again;
  f.ask(f.registry, create_scope{create("s-new", 1, "sha256:other")}, a, again);
  f.sched->run();
  REQUIRE(again);
  CHECK(again->code == native_errc::capability_digest_mismatch);
}

TEST_CASE("two creations of one id: the second meets the first's hold, in mailbox order") {
  scope_fixture f;
  f.start();
  std::optional<scope_answer> a;
  std::optional<native_error_view> first, second;
  f.ask(f.registry, create_scope{create("s-twice", 1, "sha256:other")}, a, first);
  f.ask(f.registry, create_scope{create("s-twice", 1, "sha256:other")}, a, second);
  f.sched->run();
  REQUIRE(first);
  REQUIRE(second);
  CHECK(first->code == native_errc::capability_digest_mismatch);
  CHECK(second->code == native_errc::scope_exists);  // held from the first's check on
}

TEST_CASE("requests about a scope being created: generation first, then not ready") {
  scope_fixture f;
  f.start();
  // A creation whose catalog read has not been answered yet holds the id (with no actor):
  // everything runs but the catalog, until the requests below are answered.
  auto* catalog_job = dynamic_cast<caf::resumable*>(caf::actor_cast<caf::abstract_actor*>(f.catalog));
  REQUIRE(catalog_job);
  const auto all_but_catalog = [&](caf::resumable* r) { return r != catalog_job; };
  std::optional<scope_answer> a;
  std::optional<native_error_view> create_err;
  f.ask(f.registry, create_scope{create("s-busy", 4, "sha256:other")}, a, create_err);
  f.sched->run_jobs_filtered(all_but_catalog);
  std::optional<worker_route> route;
  std::optional<native_error_view> no_gen, wrong_gen, not_ready;
  f.ask(f.registry, scoped_job{"s-busy", std::nullopt, std::string("t")}, route, no_gen);
  f.ask(f.registry, scoped_job{"s-busy", std::string("3"), std::string("t")}, route, wrong_gen);
  f.ask(f.registry, scoped_job{"s-busy", std::string("4"), std::string("t")}, route, not_ready);
  f.sched->run_jobs_filtered(all_but_catalog);
  CHECK_FALSE(route);
  REQUIRE(no_gen);
  CHECK(no_gen->code == native_errc::scope_generation_required);
  REQUIRE(wrong_gen);
  CHECK(wrong_gen->code == native_errc::scope_generation_mismatch);
  REQUIRE(not_ready);
  CHECK(not_ready->code == native_errc::scope_not_ready);
  CHECK_FALSE(create_err);  // still waiting for the catalog
  f.sched->run();
  REQUIRE(create_err);
  CHECK(create_err->code == native_errc::capability_digest_mismatch);
  // Refused: the id is free again, and a request about it is 404.
  std::optional<native_error_view> after;
  f.ask(f.registry, scoped_job{"s-busy", std::string("4"), std::string("t")}, route, after);
  f.sched->run();
  REQUIRE(after);
  CHECK(after->code == native_errc::scope_not_found);
}

TEST_CASE("an empty catalog is adopted at once") {
  scope_fixture f;
  f.start();
  std::optional<adopted> done;
  std::optional<native_error_view> err;
  f.ask(f.registry, adopt_retained{}, done, err);
  f.sched->run();
  REQUIRE(done);
  CHECK(done->scopes == 0);
  CHECK_FALSE(err);
}

TEST_CASE("the catalog actor: begin once, compare-and-swap, bury, the network budget") {
  scope_fixture f;
  f.start();
  native::scope_network net;  // one target, pinned; its budget
  net.pins.push_back({"10.0.0.7", 8080, {"10.0.0.7"}});
  net.bytes_limit = 100;
  net.conns_limit = 1;
  std::optional<catalog_begun> begun, again;
  std::optional<native_error_view> e1, e2;
  f.ask(f.catalog, catalog_begin{f.row("s-net", 1), net}, begun, e1);
  f.ask(f.catalog, catalog_begin{f.row("s-net", 2), net}, again, e2);
  f.sched->run();
  REQUIRE(begun);
  CHECK(begun->outcome == native::create_outcome::created);
  REQUIRE(again);
  CHECK(again->outcome == native::create_outcome::scope_exists);

  // A CAS from the wrong state changes nothing; from the right one it does.
  std::optional<catalog_done> wrong, right;
  std::optional<native_error_view> e3, e4;
  f.ask(f.catalog,
        catalog_transition{"s-net", 1, {native::scope_state::ready}, native::scope_state::lost, "gone"}, wrong, e3);
  f.ask(f.catalog,
        catalog_transition{"s-net", 1, {native::scope_state::creating}, native::scope_state::ready, ""}, right, e4);
  f.sched->run();
  REQUIRE(wrong);
  CHECK_FALSE(wrong->changed);
  REQUIRE(right);
  CHECK(right->changed);

  // One connection unit, then none; bytes granted up to the limit, then 0.
  std::optional<catalog_net_grant> dial1, dial2, bytes1, bytes2;
  std::optional<native_error_view> e5, e6, e7, e8;
  f.ask(f.catalog, catalog_net_dial{"s-net"}, dial1, e5);
  f.ask(f.catalog, catalog_net_dial{"s-net"}, dial2, e6);
  f.ask(f.catalog, catalog_net_reserve{"s-net", 80}, bytes1, e7);
  f.ask(f.catalog, catalog_net_reserve{"s-net", 80}, bytes2, e8);
  f.sched->run();
  REQUIRE(dial1);
  CHECK(dial1->granted == 1);
  CHECK(dial1->refusal.empty());
  REQUIRE(dial2);
  CHECK(dial2->granted == 0);
  CHECK(dial2->refusal == "network_connections_exhausted");
  REQUIRE(bytes1);
  CHECK(bytes1->granted == 80);
  REQUIRE(bytes2);
  CHECK(bytes2->granted == 20);

  // Bury needs `destroying`; then the row is gone and its generation tombstoned.
  std::optional<catalog_done> early, to_destroying, buried;
  std::optional<native_error_view> e9, e10, e11;
  f.ask(f.catalog, catalog_bury{"s-net", 1, "deleted"}, early, e9);
  f.sched->run();
  f.ask(f.catalog,
        catalog_transition{"s-net", 1, {native::scope_state::ready}, native::scope_state::destroying, "deleted"},
        to_destroying, e10);
  f.sched->run();
  f.ask(f.catalog, catalog_bury{"s-net", 1, "deleted"}, buried, e11);
  f.sched->run();
  REQUIRE(early);
  CHECK_FALSE(early->changed);
  REQUIRE(to_destroying);
  CHECK(to_destroying->changed);
  REQUIRE(buried);
  CHECK(buried->changed);
  std::optional<catalog_found> found;
  std::optional<native_error_view> e12;
  f.ask(f.catalog, catalog_find{"s-net"}, found, e12);
  f.sched->run();
  REQUIRE(found);
  CHECK_FALSE(found->record);
  REQUIRE(found->tomb);
  CHECK(found->tomb->generation == 1);
  CHECK(found->tomb->reason == "deleted");
}
