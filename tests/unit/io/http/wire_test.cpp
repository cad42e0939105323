// The bytes of response heads and chunk framing (io/http/wire.hpp).
#include <doctest/doctest.h>

#include "io/http/wire.hpp"

using namespace shellctl::io::http;

TEST_CASE("a complete response head: the server's headers replace the caller's") {
  response r;
  r.status = 404;
  r.headers = {{"Content-Type", "application/json"}, {"content-length", "99"},
               {"Connection", "upgrade"}, {"Date", "yesterday"}, {"Transfer-Encoding", "x"}};
  r.body = "{}";
  std::string out;
  wire::append_response_head(out, r, "Sun, 06 Nov 1994 08:49:37 GMT", false, false);
  CHECK(out ==
        "HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\nContent-Length: 2\r\n"
        "Date: Sun, 06 Nov 1994 08:49:37 GMT\r\n\r\n");
  out.clear();
  wire::append_response_head(out, r, "D", true, false);
  CHECK(out.find("Connection: close\r\n") != std::string::npos);
  out.clear();
  wire::append_response_head(out, r, "D", false, true);  // HTTP/1.0 kept alive says so
  CHECK(out.find("Connection: keep-alive\r\n") != std::string::npos);
}

TEST_CASE("bodiless statuses get no Content-Length") {
  for (int status : {100, 101, 204, 304}) {
    response r;
    r.status = status;
    std::string out;
    wire::append_response_head(out, r, "D", false, false);
    CAPTURE(status);
    CHECK(wire::has_no_body(status));
    CHECK(out.find("Content-Length") == std::string::npos);
  }
  CHECK_FALSE(wire::has_no_body(200));
}

TEST_CASE("streamed heads: chunked for HTTP/1.1, close-delimited without trailers for 1.0") {
  response r;
  r.status = 200;
  r.headers = {{"Trailer", "X-Sum"}, {"Content-Type", "application/zstd"}};
  std::string out;
  wire::append_stream_head(out, r, "D", false, false);
  CHECK(out ==
        "HTTP/1.1 200 OK\r\nTrailer: X-Sum\r\nContent-Type: application/zstd\r\n"
        "Transfer-Encoding: chunked\r\nDate: D\r\n\r\n");
  out.clear();
  wire::append_stream_head(out, r, "D", false, true);
  CHECK(out ==
        "HTTP/1.1 200 OK\r\nContent-Type: application/zstd\r\nDate: D\r\nConnection: close\r\n\r\n");
  // Sized (a file download): Content-Length instead of chunked, no trailers announced.
  r.stream_length = 12345678901ull;
  out.clear();
  wire::append_stream_head(out, r, "D", false, false);
  CHECK(out ==
        "HTTP/1.1 200 OK\r\nContent-Type: application/zstd\r\nContent-Length: 12345678901\r\n"
        "Date: D\r\n\r\n");
}

TEST_CASE("chunk framing") {
  CHECK(wire::chunk_size_line(0x1a2b) == "1a2b\r\n");
  CHECK(wire::chunk_size_line(1) == "1\r\n");
  CHECK(wire::last_chunk({}) == "0\r\n\r\n");
  CHECK(wire::last_chunk({{"X-Sum", "abc"}, {"X-N", "2"}}) == "0\r\nX-Sum: abc\r\nX-N: 2\r\n\r\n");
}
