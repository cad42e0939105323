#pragma once
// Paging of a job's output.log (docs/api.md "Long-polls" and decision D6).
//
// Windows are cut on UTF-8 character boundaries; concatenating the windows a client
// receives reproduces the file byte-for-byte, except that bytes which are not valid
// UTF-8 are shown as U+FFFD (one per invalid byte) while `offset` counts raw bytes.
// Paging never stalls: an invalid byte is consumed like a character. An incomplete
// character at the end of the file is held back while the job can still complete it
// (`job_done == false`), and handed out as U+FFFD once the job is done.
#include <cstdint>
#include <stdexcept>
#include <string>

namespace shellctl::io::text {

struct output_window {
  std::string text;      // valid UTF-8
  std::uint64_t offset;  // byte offset just past the window
  bool truncated;        // more bytes are available after `offset`
};

// Thrown when offset > current file size (400 invalid_offset).
struct offset_beyond_end : std::runtime_error {
  std::uint64_t offset;
  std::uint64_t size;
  offset_beyond_end(std::uint64_t o, std::uint64_t s);
};

// Size of the file in bytes, 0 when it does not exist.
std::uint64_t file_size_or_zero(const std::string& path);
// Seconds since the file was last modified (its last write), 0 when it does not exist.
double seconds_since_modified(const std::string& path);

// Window of at most `limit` bytes starting at `offset`. A missing file is empty.
output_window read_output_window(const std::string& path, std::uint64_t offset,
                                 std::uint64_t limit, bool job_done);

// Last `limit` bytes (GET /v1/jobs/{id}/log/tail); `truncated` is always false.
output_window read_output_tail(const std::string& path, std::uint64_t limit);

}  // namespace shellctl::io::text
