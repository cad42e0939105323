#include "actors/edge/api_edge.hpp"

#include "actors/protocol/job_requests.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "actors/edge/file_requests.hpp"
#include "actors/metrics/prometheus_text.hpp"
#include "actors/edge/requests.hpp"
#include "actors/edge/views.hpp"
#include "actors/services/port_scan.hpp"

namespace shellctl::actors {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

milliseconds seconds_bound(double s) {
  // Clamped: a grace of 1e300 seconds must not overflow the clock (a day is plenty).
  double clamped = std::isnan(s) ? 0 : std::min(std::max(s, 0.0), 86400.0);
  return milliseconds(static_cast<std::int64_t>(clamped * 1000));
}

// How long the edge waits for an answer before it answers 503 unavailable itself: the
// longest the request may legitimately take (its long-poll timeout, or its grace plus the
// deadlines of the steps after it) with a margin. Actors answer well before this (their
// own guards answer 503 tmux_unavailable/storage_unavailable first); it is the bound that
// keeps an answer lost anywhere from hanging a client.
constexpr milliseconds margin = seconds(30);
milliseconds answer_bound(const run_request& r) {
  return seconds(15) + seconds_bound(r.spec.wait.timeout_s) + margin;
}
milliseconds answer_bound(const wait_request& r) { return seconds_bound(r.p.timeout_s) + margin; }
milliseconds answer_bound(const input_request& r) {
  return seconds(10) + seconds_bound(r.p.timeout_s) + margin;
}
milliseconds answer_bound(const terminate_request& r) {
  return seconds_bound(r.grace_s) + seconds(20) + margin;
}
milliseconds answer_bound(const delete_request& r) {
  return seconds_bound(r.grace_s) + seconds(20) + margin;
}
template <class Request>
milliseconds answer_bound(const Request&) {
  return margin;
}

io::http::response encode(const job_result& r) {
  auto resp = json_response(200, job_result_json(r));
  resp.log_job_id = r.row.job_id;  // a run's new job is named in the request log
  return resp;
}
io::http::response encode(const job_status_view& v) { return json_response(200, job_status_json(v)); }
io::http::response encode(const job_list& l) { return json_response(200, job_list_json(l)); }
io::http::response encode(const job_deleted& d) { return json_response(200, job_deleted_json(d)); }
io::http::response encode(const job_activity& a) { return json_response(200, job_activity_json(a)); }


using self_ptr = api_edge_actor::stateful_pointer<api_edge_state>;
constexpr auto sweep_interval = std::chrono::seconds(1);

// The answer to open request `id`, unless its bound already answered it.
void give(self_ptr self, std::uint64_t id, io::http::response r) {
  auto it = self->state.open.find(id);
  if (it == self->state.open.end()) return;
  it->second.resp.send(std::move(r));
  self->state.open.erase(it);
}

void arm_sweep(self_ptr self) {
  if (self->state.sweep_armed) return;
  self->state.sweep_armed = true;
  self->delayed_send(self, sweep_interval, edge_sweep{});
}

// Every bound that passed is answered 503 (within a second of it); a late answer from the
// actors then finds nothing open and is dropped.
void sweep(self_ptr self) {
  auto& st = self->state;
  st.sweep_armed = false;
  const auto now = self->clock().now();
  for (auto it = st.open.begin(); it != st.open.end();) {
    if (it->second.deadline <= now) {
      it->second.resp.send(error_response(
          job_error_view{job_errc::unavailable, "the server did not answer in time"}));
      it = st.open.erase(it);
    } else {
      ++it;
    }
  }
  if (!st.open.empty()) arm_sweep(self);
}

void ask(self_ptr self, const job_registry_actor& registry, decoded_request req,
         io::http::responder resp) {
  std::visit(
      [&](auto& r) {
        using T = std::decay_t<decltype(r)>;
        if constexpr (std::is_same_v<T, job_error_view>) {
          resp.send(error_response(r));
        } else {
          auto& st = self->state;
          const auto id = st.next_id++;
          st.open.emplace(id, api_edge_state::open_answer{
                                  self->clock().now() + answer_bound(r), std::move(resp)});
          arm_sweep(self);
          // The bound is kept by the sweep above, not by a CAF request timeout: each of
          // those wakes CAF's timer thread, one context switch per request.
          self->request(registry, caf::infinite, std::move(r))
              .then([self, id](job_reply_t<T>& answer) { give(self, id, encode(answer)); },
                    [self, id](caf::error& e) { give(self, id, error_response(read_job_error(e))); });
        }
      },
      req);
}

// A snapshot answers within its timeout (the op's own deadline); this is its margin.
milliseconds snapshot_bound(std::chrono::nanoseconds timeout) {
  return std::chrono::duration_cast<milliseconds>(timeout) + margin;
}

void ask_snapshot(self_ptr self, const snapshot_gate_actor& gate, std::chrono::nanoseconds timeout,
                  http_call& call) {
  const io::http::responder resp = call.resp;
  if (call.route.id == route::snapshot_save) {
    // The order of the save's checks (docs/snapshots.md "Save"): a bad body is 400 even
    // while another snapshot runs.
    auto decoded = decode_snapshot_excludes(call.req.body);
    if (auto* err = std::get_if<job_error_view>(&decoded)) {
      resp.send(error_response(*err));
      return;
    }
    auto excludes = std::get<std::vector<std::string>>(std::move(decoded));
    self->request(gate, snapshot_bound(timeout), snapshot_save_request{std::move(excludes), resp})
        .then(
            [resp](snapshot_saved& s) { resp.end_stream(snapshot_trailers(s)); },
            [resp](caf::error& e) {
              // Before the first byte: the error itself; once streaming, only a cut.
              resp.send(error_response(read_job_error(e)));
              resp.abort();
            });
    return;
  }
  snapshot_restore_request req{resp, call.req.stream_body, std::move(call.req.body)};
  self->request(gate, snapshot_bound(timeout), std::move(req))
      .then([resp](snapshot_restored& r) { resp.send(json_response(200, snapshot_restored_json(r))); },
            [resp](caf::error& e) { resp.send(error_response(read_job_error(e))); });
}

// The stream's own actor answers once it is open; the edge answers only a refusal (unknown
// job, offset beyond the log) that comes before it.
void ask_stream(self_ptr self, const job_registry_actor& registry, http_call& call) {
  const io::http::responder resp = call.resp;
  auto offset = decode_stream_offset(call.req);
  if (auto* err = std::get_if<job_error_view>(&offset)) {
    resp.send(error_response(*err));
    return;
  }
  self->request(registry, margin, stream_request{call.route.job_id, std::get<std::uint64_t>(offset), resp})
      .then([](stream_opened&) {},
            [resp](caf::error& e) { resp.send(error_response(read_job_error(e))); });
}

void ask_metrics(self_ptr self, const metrics_registry_actor& metrics, const io::http::responder& resp) {
  self->request(metrics, margin, metrics_scrape{})
      .then(
          [resp](metrics_sample& s) {
            io::http::response r;
            r.headers.push_back({"Content-Type", "text/plain; version=0.0.4; charset=utf-8"});
            r.body = prometheus_text(s);
            resp.send(std::move(r));
          },
          [resp](caf::error&) {
            resp.send(error_response(
                job_error_view{job_errc::unavailable, "the metrics did not answer in time"}));
          });
}

// A scope worker's counters (docs/native-scopes.md "The scope worker"): what its supervisor
// shows as `usage`.
void ask_usage(self_ptr self, const job_registry_actor& registry, const io::http::responder& resp) {
  self->request(registry, margin, store_usage{})
      .then(
          [resp](store_usage_reply& r) { resp.send(json_response(200, worker_usage_json(r.usage))); },
          [resp](caf::error& e) {
            // The counters cannot be read (or there are none here): the store's trouble.
            resp.send(error_response(job_error_view{job_errc::storage_unavailable, error_text(e)}));
          });
}

void ask_ports(self_ptr self, const std::string& job_root, const io::http::responder& resp) {
  auto scan = self->spawn<caf::detached>(port_scan, job_root);
  self->request(scan, margin, ports_request{})
      .then([resp](job_ports& p) { resp.send(json_response(200, job_ports_json(p))); },
            [resp](caf::error& e) { resp.send(error_response(read_job_error(e))); });
}

bool is_file_route(route r) {
  switch (r) {
    case route::file_read: case route::file_write: case route::file_stat: case route::file_list:
    case route::file_mkdir: case route::file_delete: case route::file_move:
      return true;
    default:
      return false;
  }
}

// Asks the op and sends what `encode` makes of its answer (or the error).
template <class Reply, class Request, class Encode>
void ask_op(self_ptr self, const caf::actor& op, caf::duration bound, Request req,
            const io::http::responder& resp, Encode encode) {
  self->request(op, bound, std::move(req))
      .then([resp, encode](Reply& r) { resp.send(json_response(200, encode(r))); },
            [resp](caf::error& e) { resp.send(error_response(read_job_error(e))); });
}

// A download: the op opens the file; the head (200, 206 or 416) is decided here from what
// it opened, then the op sends the bytes as the connection drains.
void ask_read(self_ptr self, const caf::actor& op, file_read_request req, http_call& call) {
  const io::http::responder resp = call.resp;
  std::optional<std::string> range;
  if (const std::string* h = call.req.find_header("range")) range = *h;
  self->request(op, margin, std::move(req))
      .then(
          [resp, op, range](file_opened& f) {
            const auto span = pick_range(range ? &*range : nullptr, f.meta.size);
            if (span.k == byte_span::kind::unsatisfiable) {
              resp.send(range_refused(f));
              caf::anon_send(op, file_send{resp, false});
              return;
            }
            // The body goes from the file into the socket (sendfile) on the op's thread.
            resp.lend_socket(file_content_head(f, span), [op](int fd) {
              caf::anon_send(op, socket_lent{std::make_shared<io::fs::unique_fd>(fd)});
            });
            caf::anon_send(op, file_send{resp, true, span.offset, span.length});
          },
          [resp](caf::error& e) { resp.send(error_response(read_job_error(e))); });
}

void ask_files(self_ptr self, const file_settings& files, http_call& call) {
  auto decoded = decode_file_request(call.req, call.route.id);
  if (auto* err = std::get_if<job_error_view>(&decoded)) {
    call.resp.send(error_response(*err));
    return;
  }
  const io::http::responder& resp = call.resp;
  auto op = self->spawn<caf::detached>(file_op, files);
  const caf::duration bound{margin};
  std::visit(
      [&](auto& r) {
        using T = std::decay_t<decltype(r)>;
        if constexpr (std::is_same_v<T, file_stat_request>) {
          ask_op<file_stat>(self, op, bound, std::move(r), resp, file_stat_json);
        } else if constexpr (std::is_same_v<T, file_list_request>) {
          ask_op<file_listing>(self, op, bound, std::move(r), resp, file_listing_json);
        } else if constexpr (std::is_same_v<T, file_mkdir_request> || std::is_same_v<T, file_delete_request> ||
                             std::is_same_v<T, file_move_request>) {
          ask_op<file_done>(self, op, bound, std::move(r), resp, file_done_json);
        } else if constexpr (std::is_same_v<T, file_read_request>) {
          ask_read(self, op, std::move(r), call);
        } else if constexpr (std::is_same_v<T, file_write_request>) {
          r.in = resp;
          r.streamed = call.req.stream_body;
          r.body = std::move(call.req.body);
          // No bound on the whole upload (no size limit): the op ends one that stalls.
          ask_op<file_written>(self, op, caf::infinite, std::move(r), resp, file_written_json);
        }
      },
      decoded);
}

}  // namespace

api_edge_actor::behavior_type api_edge(api_edge_actor::stateful_pointer<api_edge_state> self,
                                       job_registry_actor registry, snapshot_gate_actor gate,
                                       metrics_registry_actor metrics,
                                       std::chrono::nanoseconds snapshot_timeout,
                                       file_settings files, std::string job_root) {
  return {
      [self, registry, gate, metrics, snapshot_timeout, files, job_root](http_call& call) {
        // Decoding is pure and answers its own errors; nothing here may end the actor,
        // or every request behind this one would go unanswered.
        try {
          if (call.route.id == route::snapshot_save || call.route.id == route::snapshot_restore) {
            ask_snapshot(self, gate, snapshot_timeout, call);
            return;
          }
          if (call.route.id == route::stream) {
            ask_stream(self, registry, call);
            return;
          }
          if (is_file_route(call.route.id)) {
            ask_files(self, files, call);
            return;
          }
          if (call.route.id == route::metrics) {
            ask_metrics(self, metrics, call.resp);
            return;
          }
          if (call.route.id == route::ports) {
            ask_ports(self, job_root, call.resp);
            return;
          }
          if (call.route.id == route::worker_usage) {
            ask_usage(self, registry, call.resp);
            return;
          }
          ask(self, registry, decode_request(call.req, call.route), call.resp);
        } catch (const std::exception& e) {
          call.resp.send(error_response(500, "internal_error", e.what()));
        }
      },
      [self](edge_sweep&) { sweep(self); },
      [self](shutdown_jobs&) {
        // What is still open is answered by its responder (500) when the state goes.
        self->quit();
      },
  };
}

}  // namespace shellctl::actors
