#include "actors/native/native_edge.hpp"

#include <ctime>

#include "actors/edge/views.hpp"
#include "actors/native/worker_caller.hpp"
#include "io/json/json.hpp"
#include "io/native/scope/scope_request.hpp"

namespace shellctl::actors {

namespace native = io::native;

io::http::response native_error_response(const caf::error& e, native_errc otherwise) {
  const auto v = read_native_error(e, otherwise);
  return error_response(native_status(v.code), native_code_text(v.code), v.message);
}

std::variant<io::http::response, native_match> check_at_native_front(
    const io::http::request& req, const std::string& token, const std::string& capabilities) {
  // The documented order of checks: the bearer first (only /healthz needs none), then the route.
  auto m = match_native(req.method, req.path);
  if (m.result == route_match::kind::found && m.id == native_route::healthz)
    return json_response(200, "{\"status\":\"ok\"}\n");
  if (!bearer_matches(req.find_header("authorization"), token))
    return error_response(401, "unauthorized", "Missing or invalid bearer token");
  if (m.result == route_match::kind::not_found) return error_response(404, "not_found", "404 page not found");
  if (m.result == route_match::kind::method_not_allowed) {
    auto r = error_response(405, "method_not_allowed", "Method Not Allowed");
    r.headers.push_back({"Allow", m.allow});
    return r;
  }
  if (m.id == native_route::capabilities) return json_response(200, capabilities);
  return m;
}

std::string scope_view_json(const scope_view& v) {
  const auto& r = v.record;
  io::json::writer w;
  w.begin_object();
  w.key("scope_id").value(r.scope_id);
  w.key("generation").value(r.generation);
  w.key("binding_ref").value(r.binding_ref);
  w.key("base_snapshot_ref").value(r.base_snapshot_ref);
  w.key("input_file_refs").begin_array();
  for (const auto& ref : native::refs_from_json(r.input_file_refs).value_or(std::vector<std::string>{}))
    w.value(ref);
  w.end_array();
  w.key("capability_digest").value(r.capability_digest);
  w.key("deadline").value(r.deadline);
  w.key("network_targets").begin_array();
  for (const auto& t : v.targets) {
    w.begin_object();
    w.key("host").value(t.host);
    w.key("port").value(static_cast<int>(t.port));
    w.key("addresses").begin_array();
    for (const auto& a : t.addresses) w.value(a);
    w.end_array();
    w.end_object();
  }
  w.end_array();
  w.key("limits");
  native::write_limits(w, native::limits_from_json(r.limits).value_or(native::scope_limits{}));
  w.key("state").value(native::state_text(r.state));
  w.key("state_reason");
  if (r.state_reason.empty())
    w.null();
  else
    w.value(r.state_reason);
  w.key("created_at").value(r.created_at);
  w.key("usage").begin_object();
  w.key("input_bytes").value(v.usage.input_bytes);
  w.key("output_bytes").value(v.usage.output_bytes);
  w.key("jobs_admitted").value(v.usage.jobs_admitted);
  w.key("network_bytes").value(v.usage.network_bytes);
  w.key("network_connections").value(v.usage.network_connections);
  w.end_object();
  w.key("transport");
  if (v.transport) {
    w.begin_object();
    w.key("base_path").value(v.transport->base_path);
    w.key("scope_token").value(v.transport->scope_token);
    w.key("expires_at").value(v.transport->expires_at);
    w.end_object();
  } else {
    w.null();
  }
  w.end_object();
  return w.finish();
}

namespace {

std::optional<std::string> header(const io::http::request& req, const char* name) {
  if (const auto* h = req.find_header(name)) return *h;
  return std::nullopt;
}

std::string gone_json(const scope_gone& g) {
  io::json::writer w;
  w.begin_object();
  w.key("scope_id").value(g.scope_id);
  w.key("generation").value(g.generation);
  w.key("destroyed").value(true);
  w.key("reason").value(g.reason);
  w.end_object();
  return w.finish();
}

}  // namespace

native_edge_actor::behavior_type native_edge(native_edge_actor::pointer self,
                                             std::shared_ptr<const supervisor_settings> cfg,
                                             scope_registry_actor registry) {
  return {
      [=](native_call& call) {
        const auto* m = std::any_cast<native_match>(&call.req.accepted);
        if (!m) {
          call.resp.send(error_response(500, "internal_error", "the request reached the edge unchecked"));
          return;
        }
        auto resp = call.resp;
        switch (m->id) {
          case native_route::create: {
            auto parsed = native::parse_create_request(call.req.body, static_cast<std::int64_t>(std::time(nullptr)),
                                                       cfg->max_deadline_s);
            if (auto* bad = std::get_if<native::request_problem>(&parsed)) {
              resp.send(error_response(bad->status, bad->code, bad->message));
              return;
            }
            self->request(registry, caf::infinite, create_scope{std::get<native::create_request>(std::move(parsed))})
                .then([resp](scope_answer& a) { resp.send(json_response(201, scope_view_json(a.view))); },
                      [resp](caf::error& e) { resp.send(native_error_response(e, native_errc::scope_setup_failed)); });
            return;
          }
          case native_route::inspect:
            self->request(registry, caf::infinite,
                          inspect_scope{m->scope_id, header(call.req, "X-Scope-Generation")})
                .then([resp](scope_answer& a) { resp.send(json_response(200, scope_view_json(a.view))); },
                      [resp](caf::error& e) { resp.send(native_error_response(e, native_errc::storage_unavailable)); });
            return;
          case native_route::destroy:
            self->request(registry, caf::infinite,
                          destroy_scope{m->scope_id, header(call.req, "X-Scope-Generation")})
                .then([resp](scope_gone& g) { resp.send(json_response(200, gone_json(g))); },
                      [resp](caf::error& e) { resp.send(native_error_response(e, native_errc::storage_unavailable)); });
            return;
          case native_route::scoped_job: {
            std::string target = m->job_path + (call.req.query.empty() ? "" : "?" + call.req.query);
            self->request(registry, caf::infinite,
                          scoped_job{m->scope_id, header(call.req, "X-Scope-Generation"),
                                     header(call.req, "X-Scope-Token")})
                .then(
                    [=, call = std::move(call)](worker_route& r) mutable {
                      auto caller = self->system().spawn<caf::detached>(worker_caller);
                      self->send(caller, forward_job{std::move(call), target, std::move(r)});
                    },
                    [resp](caf::error& e) { resp.send(native_error_response(e, native_errc::storage_unavailable)); });
            return;
          }
          default:
            resp.send(error_response(404, "not_found", "404 page not found"));
        }
      },
      [self](native_shutdown&) { self->quit(); },
  };
}

}  // namespace shellctl::actors
