#pragma once
// job_stream: one per GET /v1/jobs/{id}/stream (docs/api.md "Live output stream"). It owns the
// answer to that request, a text/event-stream, and the read position in the job's output.log. Its
// job_actor tells it what the output is now (output_progress: the size, and once final
// how the job ended); it reads the log only as fast as the connection drains (at most
// `max_in_flight` bytes written and not yet acknowledged by the socket), so a reader that
// stops reading costs a bounded buffer, never a growing one. Events follow /wait's window
// rules (io/text/output_window.hpp): offsets count raw bytes, a UTF-8 character is never
// split, invalid bytes show as U+FFFD; concatenating the `output` events gives the log from
// the start offset on. It ends with the `exit` event once the output is final and sent.
// A comment line every 15 s keeps idle proxies from closing the connection.
#include <chrono>
#include <cstdint>
#include <string>

#include "actors/protocol/interfaces.hpp"

namespace shellctl::actors {

struct job_stream_settings {
  std::string job_id;
  std::string output_path;  // the job's output.log
  std::uint64_t offset = 0;  // where the stream starts (checked by the job actor)
  io::http::responder out;
  std::uint64_t max_in_flight = 256 * 1024;
  std::uint64_t max_event = 64 * 1024;  // bytes of log per output event
  std::chrono::milliseconds keepalive{15000};
};

struct job_stream_state {
  static inline const char* name = "job_stream";
  job_stream_settings cfg;
  std::uint64_t offset = 0;     // next log byte to send
  std::uint64_t sent = 0;       // bytes handed to the connection
  output_progress known;        // the latest word from the job actor
  bool ended = false;
};

job_stream_actor::behavior_type job_stream(job_stream_actor::stateful_pointer<job_stream_state> self,
                                           job_stream_settings cfg);

}  // namespace shellctl::actors
