#pragma once
// The events of GET /v1/jobs/{id}/stream (docs/api.md "Live output stream"): text/event-stream
// frames, "event: <name>\nid: <id>\ndata: <json>\n\n", the JSON on one line (Go's escaping
// keeps every newline inside strings escaped). A wire format, so the stream's writer
// (actors/jobs/job_stream.hpp) and its tests share one definition.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace shellctl::io::http {

// An `output` event: the log bytes [offset, next_offset) as text; its id is next_offset,
// so a client reconnecting with Last-Event-ID resumes after it.
std::string sse_output_event(std::uint64_t offset, std::uint64_t next_offset, std::string_view text);
// The last event: how the job ended, at the log's final size.
std::string sse_exit_event(std::string_view job_id, std::string_view status,
                           const std::optional<std::int64_t>& exit_code, std::uint64_t offset);
// A comment line that keeps idle proxies from closing the connection.
inline constexpr std::string_view sse_keepalive = ": keepalive\n\n";

}  // namespace shellctl::io::http
