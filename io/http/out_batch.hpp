#pragma once
// Write batching of the HTTP front: a response never goes out directly. It is appended to
// the connection's current out_batch (small pieces copied into one buffer, large bodies
// moved in), and all connections touched during one loop callback are flushed at its end
// with one uv_write each, so pipelined requests answered together leave in one write.
// Loop-thread only.
#include <uv.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace shellctl::io::http {

struct connection;
struct slot;

// Bodies up to this size are copied into the batch's buffer; larger ones are moved in.
inline constexpr std::size_t inline_body_limit = 4096;

// One uv_write: a contiguous buffer for small pieces plus moved-in large bodies.
struct out_batch {
  uv_write_t req;
  connection* conn = nullptr;
  std::string inline_buf;
  std::vector<std::string> owned;
  // Segments in order: owned index, or (~0, offset, len) in inline_buf.
  struct segment {
    std::size_t owned_index;
    std::size_t offset;
    std::size_t len;
  };
  std::vector<segment> segments;
  std::vector<uv_buf_t> bufs;
  std::size_t bytes = 0;
  // Chunks of the connection's streamed response in this write, for its acked count.
  std::shared_ptr<slot> stream;
  std::size_t stream_bytes = 0;

  bool empty() const { return bytes == 0; }
  // Registers inline_buf[start, end) (just appended) as the next piece of the write.
  void note_inline(std::size_t start) {
    std::size_t len = inline_buf.size() - start;
    if (len == 0) return;
    if (!segments.empty() && segments.back().owned_index == SIZE_MAX &&
        segments.back().offset + segments.back().len == start) {
      segments.back().len += len;
    } else {
      segments.push_back({SIZE_MAX, start, len});
    }
    bytes += len;
  }
  void append_small(std::string_view s) {
    std::size_t start = inline_buf.size();
    inline_buf.append(s);
    note_inline(start);
  }
  void append_owned(std::string&& s) {
    if (s.size() <= inline_body_limit) {
      append_small(s);
      return;
    }
    bytes += s.size();
    segments.push_back({owned.size(), 0, s.size()});
    owned.push_back(std::move(s));
  }
  void reset() {
    inline_buf.clear();
    owned.clear();
    segments.clear();
    bufs.clear();
    bytes = 0;
    conn = nullptr;
    stream.reset();
    stream_bytes = 0;
  }
};

}  // namespace shellctl::io::http
