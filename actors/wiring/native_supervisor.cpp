#include "actors/wiring/native_supervisor.hpp"

#include <cstdio>
#include <string>

#include "actors/native/native_edge.hpp"
#include "actors/native/catalog.hpp"
#include "actors/native/scope_registry.hpp"
#include "actors/wiring/serve.hpp"
#include "io/fs/files.hpp"
#include "io/http/server.hpp"
#include "io/native/scope/catalog.hpp"

namespace shellctl::actors {

io::native::supervisor_setup supervisor_setup_of(const io::config::serve_config& cfg) {
  io::native::supervisor_setup setup;
  setup.token = cfg.token;
  setup.state_dir = cfg.state_dir;
  setup.base_root = cfg.native.base_root;
  setup.input_root = cfg.native.input_root;
  setup.image_root = cfg.native.image_root;
  setup.unit_cgroup = cfg.native.unit_cgroup;
  setup.mediator = cfg.native.mediator;
  setup.runner = find_helper("shellctl-runner", false);
  return setup;
}

supervisor_settings settings_of(const io::config::serve_config& cfg,
                                const io::native::check_report& report) {
  supervisor_settings s;
  s.token = cfg.token;
  s.state_dir = cfg.state_dir;
  s.base_root = cfg.native.base_root;
  s.input_root = cfg.native.input_root;
  s.image_root = cfg.native.image_root;
  s.capability_digest = io::native::capability_digest(report.found);
  s.max_scopes = cfg.native.max_scopes;
  s.mediator = io::native::parse_ip_port(cfg.native.mediator);  // validated by the config
  s.max_deadline_s = std::chrono::duration_cast<std::chrono::seconds>(cfg.native.max_deadline).count();
  return s;
}

int serve_native(const io::config::serve_config& cfg) {
  const auto report = io::native::run_checks(supervisor_setup_of(cfg));
  if (cfg.native.check_only) {
    std::fputs(report.json().c_str(), stdout);
    return report.ok() ? 0 : 1;
  }
  if (const auto* failed = report.first_failure()) {
    std::fprintf(stderr, "shellctl: native test supervisor: %s: %s\n", failed->id.c_str(),
                 failed->detail.c_str());
    return 1;
  }
  auto s = std::make_shared<supervisor_settings>(settings_of(cfg, report));
  s->exe = "/proc/self/exe";
  s->cgroups = io::native::delegated_cgroups(report.unit_dir);
  return run_supervisor(cfg, std::move(s), io::native::capability_json(report.found));
}

int run_supervisor(const io::config::serve_config& cfg, std::shared_ptr<supervisor_settings> s,
                   const std::string& capabilities) {
  auto say = [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); };
  std::shared_ptr<io::native::catalog> db;
  try {
    io::fs::make_dirs(cfg.state_dir + "/native/scopes", 0700);
    db = std::make_shared<io::native::catalog>(cfg.state_dir + "/native/catalog.db");
    // S7: the key retained scopes' tokens verify with; the startup check compared it.
    if (!db->fingerprint()) db->set_fingerprint(io::native::key_fingerprint(cfg.token));
  } catch (const std::exception& e) {
    say(std::string("shellctl: native test supervisor: catalog: ") + e.what());
    return 1;
  }
  // The capability document as served: the canonical JSON with its digest.
  std::string capabilities_doc = capabilities;
  if (!capabilities_doc.empty() && capabilities_doc.back() == '}')
    capabilities_doc.insert(capabilities_doc.size() - 1, ",\"capability_digest\":\"" + s->capability_digest + "\"");
  capabilities_doc += "\n";

  caf::actor_system_config sys_cfg;
  sys_cfg.set("scheduler.policy", caf::atom("sharing"));
  caf::actor_system sys{sys_cfg};
  std::shared_ptr<const supervisor_settings> settings = s;
  auto catalog = sys.spawn<caf::detached>(native_catalog, db);
  db.reset();  // the catalog actor's thread is its only user from here on
  auto registry = sys.spawn(scope_registry, settings, catalog);
  auto edge = sys.spawn(native_edge, settings, registry);
  auto stop_all = [&] {
    caf::anon_send(edge, native_shutdown{});
    caf::anon_send(registry, native_shutdown{});
    caf::anon_send(catalog, native_shutdown{});
  };

  // Reattach (docs/native-scopes.md "The scope worker"): every retained scope is adopted or
  // found lost before anything is served.
  {
    caf::scoped_actor self{sys};
    std::string failure;
    std::size_t scopes = 0;
    self->request(registry, caf::infinite, adopt_retained{})
        .receive([&](adopted& a) { scopes = a.scopes; },
                 [&](caf::error& e) { failure = sys.render(e); });
    if (!failure.empty()) {
      say("shellctl: native test supervisor: reattach: " + failure);
      stop_all();
      return 1;
    }
    if (scopes) say("shellctl: native test supervisor: " + std::to_string(scopes) + " retained scope(s) reattached or marked lost");
  }

  io::http::server_config http_cfg;
  http_cfg.host = cfg.listen_host;
  http_cfg.port = cfg.listen_port;
  http_cfg.max_connections = cfg.max_connections;
  http_cfg.max_buffered_bytes = cfg.max_buffered_bytes;
  const std::string token = cfg.token;
  // Decided on the loop thread, on the head when a body follows: a peer without the
  // bearer, or asking for no route, is answered before its body is read.
  http_cfg.head_check = [token, capabilities_doc](io::http::request& head) -> std::optional<io::http::response> {
    auto verdict = check_at_native_front(head, token, capabilities_doc);
    if (auto* answer = std::get_if<io::http::response>(&verdict)) {
      if (answer->status >= 400) return std::move(*answer);
      return std::nullopt;
    }
    head.accepted = std::get<native_match>(std::move(verdict));
    return std::nullopt;
  };
  io::http::server front(http_cfg, [edge, token, capabilities_doc](io::http::request&& req, io::http::responder resp) {
    if (!std::any_cast<native_match>(&req.accepted)) {
      auto verdict = check_at_native_front(req, token, capabilities_doc);
      if (auto* answer = std::get_if<io::http::response>(&verdict)) {
        resp.send(std::move(*answer));
        return;
      }
      req.accepted = std::get<native_match>(std::move(verdict));
    }
    caf::anon_send(edge, native_call{std::move(req), std::move(resp)});
  });
  try {
    front.listen();
  } catch (const std::exception& e) {
    say(std::string("shellctl: native test supervisor: ") + e.what());
    stop_all();
    return 1;
  }
  say("shellctl native test supervisor serving on " + cfg.listen_text + " (state dir " + cfg.state_dir +
      ", cgroup " + s->cgroups->unit_dir() + ")");
  front.run();
  stop_all();
  return 0;
}

}  // namespace shellctl::actors
