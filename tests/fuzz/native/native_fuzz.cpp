// bytes -> the native scope's field rules and tokens, a create body, a supervisor path.
// Properties, not just "no crash": base64url round-trips both ways; a token verifies only for
// the identity it was minted for; a generation that parses prints back as the same text; no
// scope id or ref that passes holds a byte outside its alphabet or a "." / ".." segment; a
// create body that is accepted holds only valid fields and its limits survive the catalog's
// text; a path routed to a scope names one id segment and an ordinary job path. The network
// path's input too (docs/native-scopes.md "The network broker"): what a job sends the proxy (a
// request head: an accepted one names a host without CR, LF or space and a port in range, and
// an http request goes on in origin form with the rest of its head unchanged), the broker's
// DIAL line (accepted only in its one spelling), and IP:port text and the address classifier
// (an endpoint re-reads as itself; the mediator is always allowed, a denied address never
// without it).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "actors/native/routes.hpp"
#include "io/native/net/net_address.hpp"
#include "io/native/net/proxy_request.hpp"
#include "io/native/scope/scope_fields.hpp"
#include "io/native/scope/scope_request.hpp"
#include "io/native/scope/scope_token.hpp"
#include "io/text/base64url.hpp"

namespace native = shellctl::io::native;
namespace text = shellctl::io::text;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);

  if (auto g = native::parse_generation(in)) {
    if (std::to_string(*g) != in || *g == 0 || *g > native::kMaxGeneration) std::abort();
  }
  if (native::valid_scope_id(in))
    for (char c : in)
      if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) std::abort();
  if (native::valid_ref(in)) {
    const std::string s = "/" + std::string(in) + "/";
    if (s.find("/../") != std::string::npos || s.find("/./") != std::string::npos ||
        s.find("//") != std::string::npos)
      std::abort();
  }
  native::valid_binding_ref(in);

  // The proxy's request head.
  {
    native::proxy_refusal why;
    const auto head_len = native::proxy_head_length(in);
    if (auto r = native::parse_proxy_head(in.substr(0, head_len ? head_len : in.size()), why)) {
      if (r->host.empty() || r->port == 0 || r->host.find_first_of("\r\n \t/@") != std::string::npos) std::abort();
      if (r->what == native::proxy_request::kind::http) {
        const auto sp = r->forward_head.find(' ');
        if (sp == std::string::npos || r->forward_head.compare(sp, 2, " /") != 0) std::abort();
      }
      const std::vector<native::proxy_target> targets = {{r->host, r->port}};
      if (native::match_target(targets, r->host, r->port) != std::size_t{0}) std::abort();
    } else if (why.status != 400 && why.status != 403 && why.status != 431) {
      std::abort();
    }
    if (auto idx = native::parse_dial_line(in))
      if (*idx >= 16 || in != "DIAL " + std::to_string(*idx) + "\n") std::abort();
    if (auto e = native::parse_ip_port(std::string(in))) {
      const auto again = native::parse_endpoint(e->ip_text(), e->port());
      if (!again || again->ip_text() != e->ip_text() || again->port() != e->port()) std::abort();
      if (!native::allowed_address(*e, e)) std::abort();
      if (native::denied_address(*e) && native::allowed_address(*e, std::nullopt)) std::abort();
    }
  }

  // base64url both ways.
  if (text::unbase64url(text::base64url(in)) != std::string(in)) std::abort();
  if (auto raw = text::unbase64url(in))
    if (text::base64url(*raw) != in) std::abort();

  // Whatever a client sends as X-Scope-Token.
  native::worker_identity id{"scope-a", 7, 4242, 123456, "boot-1"};
  if (native::verify_scope_token("control-token", id, in)) {
    // Only a token minted with this T for this identity verifies: then with any other
    // identity it must not.
    id.generation = 8;
    if (native::verify_scope_token("control-token", id, in)) std::abort();
  }
  // A token minted over these bytes as the nonce (16 of them) verifies for its identity.
  if (size >= 16) {
    const auto t = native::mint_scope_token("control-token", id, in.substr(0, 16));
    if (!native::verify_scope_token("control-token", id, t)) std::abort();
  }
  // Whatever a client sends as POST /v1/test-scopes.
  auto parsed = native::parse_create_request(in, 1796342400, 86400);
  if (auto* c = std::get_if<native::create_request>(&parsed)) {
    if (!native::valid_scope_id(c->scope_id) || c->generation == 0 || c->generation > native::kMaxGeneration ||
        !native::valid_binding_ref(c->binding_ref) || !native::valid_ref(c->base_snapshot_ref) ||
        c->input_file_refs.size() > 64 || c->network_targets.size() > 16 ||
        !native::limits_problem(c->limits, !c->network_targets.empty()).empty())
      std::abort();
    const auto back = native::limits_from_json(native::limits_json(c->limits));
    if (!back || native::limits_json(*back) != native::limits_json(c->limits)) std::abort();
    if (native::refs_from_json(native::refs_json(c->input_file_refs)) != c->input_file_refs) std::abort();
  } else {
    const auto& p = std::get<native::request_problem>(parsed);
    if (!((p.status == 400 && p.code == "invalid_request") || (p.status == 422 && p.code == "validation_error")))
      std::abort();
  }

  // Whatever a client sends as a path.
  for (const char* method : {"GET", "POST", "DELETE"}) {
    const auto m = shellctl::actors::match_native(method, in);
    if (m.result != shellctl::actors::route_match::kind::found) continue;
    if (m.id == shellctl::actors::native_route::scoped_job &&
        (m.scope_id.empty() || m.scope_id.find('/') != std::string::npos || m.job_path.rfind("/v1/jobs", 0) != 0 ||
         in != "/v1/test-scopes/" + m.scope_id + m.job_path.substr(3)))
      std::abort();
  }
  return 0;
}
