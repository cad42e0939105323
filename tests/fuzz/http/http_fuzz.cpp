// libFuzzer: bytes -> request_parser (fed in 1-3 pieces) -> the front's check (route,
// token) -> the API request decoder (JSON bodies, query strings); and the kernel's
// sock_diag answer the front reads about each connection's peer. The first bytes choose
// where the input is split, so the fuzzer explores pipelined requests cut at arbitrary
// points; every complete request is checked for internal consistency, routed and decoded
// as the server would.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "actors/edge/file_requests.hpp"
#include "actors/edge/front.hpp"
#include "actors/edge/requests.hpp"
#include "actors/edge/views.hpp"
#include "actors/protocol/routes.hpp"
#include "io/http/request_parser.hpp"
#include "io/http/server.hpp"
#include "io/http/wire.hpp"
#include "io/json/json.hpp"
#include "io/sandbox/sock_diag.hpp"

using namespace shellctl::io::http;

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

void visit(request&& r) {
  check(!r.method.empty());
  check(r.path.size() <= r.target.size());
  check(r.target.find('?') == std::string::npos || r.query.size() < r.target.size());
  for (const auto& h : r.headers) check(r.find_header(h.name) != nullptr);
  auto m = shellctl::actors::match_route(r.method, r.path);
  if (m.result == shellctl::actors::route_match::kind::method_not_allowed) check(!m.allow.empty());
  // Token "t" (so that some inputs pass it), then the decoder; a decoding error must map
  // to a 4xx answer of the API, never to a 5xx or a crash.
  auto verdict = shellctl::actors::check_at_front(r, "t");
  if (auto* route = std::get_if<shellctl::actors::route_match>(&verdict)) {
    check(route->id != shellctl::actors::route::healthz);
    // As the edge does: the routes it serves without decode_request get their own decoder
    // (or none), every other route the request decoder.
    namespace sa = shellctl::actors;
    using sa::job_error_view;
    switch (route->id) {
      case sa::route::snapshot_save: {
        auto excludes = shellctl::actors::decode_snapshot_excludes(r.body);
        if (auto* err = std::get_if<job_error_view>(&excludes))
          check(shellctl::actors::error_response(*err).status == 400);
        break;
      }
      case sa::route::snapshot_restore:  // the body is an archive: tests/fuzz/archive
      case sa::route::metrics:           // nothing of the request is read
        break;
      case sa::route::stream: {
        auto offset = shellctl::actors::decode_stream_offset(r);
        if (auto* err = std::get_if<job_error_view>(&offset))
          check(shellctl::actors::error_response(*err).status == 400);
        break;
      }
      case sa::route::file_read:
      case sa::route::file_write:
      case sa::route::file_stat:
      case sa::route::file_list:
      case sa::route::file_mkdir:
      case sa::route::file_delete:
      case sa::route::file_move: {
        auto decoded = shellctl::actors::decode_file_request(r, route->id);
        if (auto* err = std::get_if<job_error_view>(&decoded))
          check(shellctl::actors::error_response(*err).status == 400);
        if (route->id == sa::route::file_read) {
          // The Range header against a few sizes: a span always lies inside the file.
          for (std::uint64_t size : {std::uint64_t{0}, std::uint64_t{1}, std::uint64_t{1000}}) {
            const auto span = shellctl::actors::pick_range(r.find_header("range"), size);
            if (span.k != sa::byte_span::kind::unsatisfiable) check(span.offset + span.length <= size);
            if (span.k == sa::byte_span::kind::partial) check(span.length > 0);
          }
        }
        break;
      }
      default: {
        auto decoded = shellctl::actors::decode_request(r, *route);
        if (auto* err = std::get_if<job_error_view>(&decoded)) {
          auto resp = shellctl::actors::error_response(*err);
          check(resp.status == 400 || resp.status == 422);
        }
      }
    }
  } else {
    check(std::get<response>(verdict).status != 0);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  // One input in sixteen is the kernel's answer about a connection's peer (sock_diag),
  // which the front reads at every accept, and a part of a listening-socket dump:
  // parsed within its bytes, never more.
  if (data[0] % 16 == 15) {
    const auto a = shellctl::io::sandbox::parse_inet_diag_answer(
        std::string_view(reinterpret_cast<const char*>(data) + 1, size - 1));
    check(a.result != shellctl::io::sandbox::peer_lookup::found || size - 1 >= 16);
    // And as a part of the listening-socket dump behind GET /v1/ports.
    std::vector<shellctl::io::sandbox::listening_socket> sockets;
    bool done = false;
    std::string err;
    shellctl::io::sandbox::parse_listening_part(std::string_view(reinterpret_cast<const char*>(data) + 1, size - 1),
                                                sockets, done, err);
    check(sockets.size() * 16 <= size);
    return 0;
  }
  // Small limits so that the 413/414/431 paths are reachable with small inputs.
  parser_limits lim;
  lim.max_body_bytes = 512;
  lim.max_header_bytes = 1024;
  lim.max_request_line = 256;
  request_parser p{lim};
  std::size_t pieces = 1 + data[0] % 3;
  std::size_t cut_seed = data[1];
  data += 2;
  size -= 2;
  const char* in = reinterpret_cast<const char*>(data);
  std::size_t off = 0;
  for (std::size_t k = 0; k < pieces && off <= size; ++k) {
    std::size_t end = k + 1 == pieces ? size : std::min(size, off + (cut_seed * (k + 7)) % (size + 1));
    while (off < end) {
      auto r = p.feed(in + off, end - off);
      check(r.consumed <= end - off);
      off += r.consumed;
      if (r.ev == request_parser::event::request) {
        visit(p.take());
      } else if (r.ev == request_parser::event::error) {
        const parse_error& e = p.error();
        check(e.status == 400 || e.status == 413 || e.status == 414 || e.status == 431);
        check(!e.code.empty());
        std::string json;
        shellctl::io::json::append_string(json, e.message);
        check(json.size() >= 2 && json.front() == '"' && json.back() == '"');
        return 0;
      } else if (r.consumed == 0) {
        check(r.ev != request_parser::event::need_more || p.finished());
        break;
      }
    }
    off = end;
  }
  return 0;
}
