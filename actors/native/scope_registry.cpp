#include "actors/native/scope_registry.hpp"

namespace shellctl::actors {
namespace {

using self_ptr = scope_registry_actor::stateful_pointer<scope_registry_state>;
using cfg_ptr = std::shared_ptr<const supervisor_settings>;
namespace native = io::native;

caf::error err(native_errc code, std::string message) { return make_native_error(code, std::move(message)); }

// A scope actor that is gone (or any error of CAF's) as `otherwise`; the scope service's own
// refusals as they are.
caf::error native_or(const caf::error& e, native_errc otherwise, self_ptr self) {
  return e.category() == native_error_category ? e : err(otherwise, self->system().render(e));
}

scope_actor_type spawn_scope(self_ptr self, const cfg_ptr& cfg, const native_catalog_actor& catalog) {
  return self->system().spawn<caf::detached>(scope_actor, cfg, catalog,
                                             caf::actor_cast<scope_registry_actor>(self));
}

// The scope a request names, checked in the documented order: the scope, then the generation.
// Calls `found(actor)` or `refused(error)`; a missing scope asks the catalog whether the
// sent generation was destroyed (410) or never was (404).
template <class Found, class Refused>
void with_scope(self_ptr self, const native_catalog_actor& catalog, const std::string& scope_id,
                const std::optional<std::string>& generation, Found found, Refused refused) {
  auto it = self->state.scopes.find(scope_id);
  const auto sent = generation ? native::parse_generation(*generation) : std::nullopt;
  if (it == self->state.scopes.end()) {
    if (!native::valid_scope_id(scope_id)) {
      refused(err(native_errc::scope_not_found, "no scope " + scope_id));
      return;
    }
    self->request(catalog, caf::infinite, catalog_find{scope_id})
        .then(
            [=](catalog_found& f) mutable {
              if (f.tomb && sent && f.tomb->generation == *sent)
                refused(err(native_errc::scope_destroyed, "generation " + std::to_string(*sent) + " of scope " +
                                                   scope_id + " was destroyed (" + f.tomb->reason + ")"));
              else
                refused(err(native_errc::scope_not_found, "no scope " + scope_id));
            },
            [=](caf::error& e) mutable {
              refused(err(native_errc::storage_unavailable, "the catalog cannot be read: " + error_text(e)));
            });
    return;
  }
  if (!sent) {
    refused(err(native_errc::scope_generation_required, "X-Scope-Generation must be a decimal 1 to 2^53-1"));
    return;
  }
  if (*sent != it->second.generation) {
    refused(err(native_errc::scope_generation_mismatch, "scope " + scope_id + " is at generation " +
                                                 std::to_string(it->second.generation)));
    return;
  }
  if (!it->second.actor) {
    refused(err(native_errc::scope_not_ready, "scope " + scope_id + " is being created"));
    return;
  }
  found(it->second.actor);
}

void forget(self_ptr self, const std::string& scope_id, std::uint64_t generation) {
  auto it = self->state.scopes.find(scope_id);
  if (it != self->state.scopes.end() && it->second.generation == generation)
    self->state.scopes.erase(it);
}

}  // namespace

scope_registry_actor::behavior_type scope_registry(self_ptr self, cfg_ptr cfg,
                                                   native_catalog_actor catalog) {
  return {
      [=](create_scope& m) -> caf::result<scope_answer> {
        const auto req = m.req;
        if (self->state.scopes.count(req.scope_id))
          return err(native_errc::scope_exists, "scope " + req.scope_id + " exists");
        // Held from here on: a second creation of the id meets it above.
        self->state.scopes[req.scope_id] = {req.generation, scope_actor_type{}, req.limits};
        auto rp = self->make_response_promise<scope_answer>();
        auto fail = [=](caf::error e) mutable {
          forget(self, req.scope_id, req.generation);
          rp.deliver(std::move(e));
        };
        self->request(catalog, caf::infinite, catalog_find{req.scope_id})
            .then(
                [=](catalog_found& f) mutable {
                  if (f.record) return fail(err(native_errc::scope_exists, "scope " + req.scope_id + " exists"));
                  if (f.tomb && f.tomb->generation >= req.generation)
                    return fail(err(native_errc::scope_generation_stale,
                                    "generation " + std::to_string(req.generation) + " of scope " + req.scope_id +
                                        " is not newer than its destroyed generation " +
                                        std::to_string(f.tomb->generation)));
                  if (req.capability_digest != cfg->capability_digest)
                    return fail(err(native_errc::capability_digest_mismatch,
                                    "capability_digest is not the current " + cfg->capability_digest));
                  // Refs and targets in the scope's own actor (resolving names blocks), then
                  // the capacity check here, then the commit and the worker there.
                  auto actor = spawn_scope(self, cfg, catalog);
                  self->state.scopes[req.scope_id].actor = actor;
                  self->request(actor, caf::infinite, scope_prepare{req})
                      .then(
                          [=](scope_prepared&) mutable {
                            // Live and quarantined scopes hold capacity.
                            std::vector<native::scope_limits> held;
                            for (const auto& [id, e] : self->state.scopes)
                              if (id != req.scope_id) held.push_back(e.limits);
                            caf::error full;
                            if (held.size() >= cfg->max_scopes)
                              full = err(native_errc::scope_capacity_unavailable, "the supervisor holds its maximum of " +
                                                                           std::to_string(cfg->max_scopes) + " scopes");
                            else if (auto why = cfg->cgroups->fits(held, req.limits); !why.empty())
                              full = err(native_errc::scope_capacity_unavailable, "the scope does not fit the unit's " + why);
                            if (full) {
                              caf::anon_send_exit(actor, caf::exit_reason::user_shutdown);
                              return fail(std::move(full));
                            }
                            self->request(actor, caf::infinite, scope_begin{req})
                                .then(
                                    [=](scope_answer& a) mutable { rp.deliver(std::move(a)); },
                                    [=](caf::error& e) mutable {
                                      // A setup that failed ended the scope itself: buried (its
                                      // scope_buried, sent before this answer, frees the id) or
                                      // quarantined (the id and its capacity stay held). Refused
                                      // before its catalog row: the id is free again.
                                      if (is_native_error(e, native_errc::scope_setup_failed)) {
                                        rp.deliver(std::move(e));
                                        return;
                                      }
                                      fail(native_or(e, native_errc::scope_setup_failed, self));
                                    });
                          },
                          [=](caf::error& e) mutable { fail(native_or(e, native_errc::scope_setup_failed, self)); });
                },
                [=](caf::error& e) mutable { fail(native_or(e, native_errc::storage_unavailable, self)); });
        return rp;
      },
      [=](inspect_scope& m) -> caf::result<scope_answer> {
        auto rp = self->make_response_promise<scope_answer>();
        with_scope(
            self, catalog, m.scope_id, m.generation,
            [=](scope_actor_type a) mutable { rp.delegate(a, scope_inspect{}); },
            [=](caf::error e) mutable { rp.deliver(std::move(e)); });
        return rp;
      },
      [=](destroy_scope& m) -> caf::result<scope_gone> {
        auto rp = self->make_response_promise<scope_gone>();
        with_scope(
            self, catalog, m.scope_id, m.generation,
            [=](scope_actor_type a) mutable { rp.delegate(a, scope_destroy{"deleted"}); },
            [=](caf::error e) mutable { rp.deliver(std::move(e)); });
        return rp;
      },
      [=](scoped_job& m) -> caf::result<worker_route> {
        auto rp = self->make_response_promise<worker_route>();
        with_scope(
            self, catalog, m.scope_id, m.generation,
            [=](scope_actor_type a) mutable { rp.delegate(a, scope_job_access{m.token}); },
            [=](caf::error e) mutable { rp.deliver(std::move(e)); });
        return rp;
      },
      [=](adopt_retained&) -> caf::result<adopted> {
        auto rp = self->make_response_promise<adopted>();
        self->request(catalog, caf::infinite, catalog_retained{})
            .then(
                [=](catalog_rows& rows) mutable {
                  auto left = std::make_shared<std::size_t>(rows.rows.size());
                  const std::size_t total = rows.rows.size();
                  if (total == 0) {
                    rp.deliver(adopted{0});
                    return;
                  }
                  for (auto& row : rows.rows) {
                    auto actor = spawn_scope(self, cfg, catalog);
                    native::scope_limits limits;
                    if (auto l = native::limits_from_json(row.limits)) limits = *l;
                    self->state.scopes[row.scope_id] = {row.generation, actor, limits};
                    self->request(actor, caf::infinite, scope_adopt{row})
                        .then([=](scope_answer&) mutable {
                                if (--*left == 0) rp.deliver(adopted{total});
                              },
                              [=](caf::error&) mutable {
                                if (--*left == 0) rp.deliver(adopted{total});
                              });
                  }
                },
                [=](caf::error& e) mutable { rp.deliver(native_or(e, native_errc::storage_unavailable, self)); });
        return rp;
      },
      [=](scope_buried& m) { forget(self, m.scope_id, m.generation); },
      [=](native_shutdown&) {
        for (auto& [id, e] : self->state.scopes)
          if (e.actor) self->send(e.actor, native_shutdown{});
        self->quit();
      },
  };
}

}  // namespace shellctl::actors
