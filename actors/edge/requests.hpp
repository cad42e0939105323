#pragma once
// HTTP request → domain request: the JSON body or query of each route, decoded with the
// original's defaults and our clamps (D5) and validated. Pure (no actor, no I/O), so the
// HTTP fuzzer drives it with arbitrary bytes.
#include <string>
#include <string_view>
#include <optional>
#include <utility>
#include <variant>
#include <vector>

#include "actors/protocol/domain.hpp"
#include "actors/protocol/messages.hpp"
#include "actors/protocol/routes.hpp"
#include "io/http/server.hpp"

#include "io/text/go_quote.hpp"

namespace shellctl::actors {

using decoded_request =
    std::variant<job_error_view, run_request, wait_request, tail_request, status_request,
                 input_request, terminate_request, signal_request, resize_request, activity_request,
                 delete_request, list_request>;

// The signals POST /v1/jobs/{id}/signal may send (docs/api.md "Job control"), by name without SIG.
const std::vector<std::pair<std::string_view, int>>& job_signals();
// "INT", "SIGINT", "sigint", "2": the signal's number, if it is one of job_signals().
std::optional<int> parse_job_signal(std::string_view given);

// `route` is the front's match for `req` (a job route, never healthz or a snapshot).
decoded_request decode_request(const io::http::request& req, const route_match& route);

// GET /v1/jobs/{id}/stream (docs/api.md "Live output stream"): where the stream starts.
// Last-Event-ID (an EventSource reconnecting sends its last id, which is the offset after that
// event) wins over ?offset=N; neither means 0. Anything but a non-negative integer is 400.
std::variant<job_error_view, std::uint64_t> decode_stream_offset(const io::http::request& req);

// The body of POST /v1/snapshot/save (docs/snapshots.md "Save"): optional {"excludes": [...]};
// only its first 64 KiB are read, and only the first JSON value; empty means none.
std::variant<job_error_view, std::vector<std::string>> decode_snapshot_excludes(
    const std::string& body);

// Go's %q quoting (io/text/go_quote), used in validation messages the original words that way.
using io::text::go_quote;

}  // namespace shellctl::actors
