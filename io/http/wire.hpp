#pragma once
// Small pieces of the HTTP/1.1 wire format shared by the server, the tests and the fuzzer.
#include <cstddef>
#include <ctime>
#include <string>
#include <string_view>
#include <vector>

#include "io/http/server.hpp"

namespace shellctl::io::http::wire {

// "OK", "Not Found", ...; "Unknown" for codes we never produce.
std::string_view reason_phrase(int status);

// IMF-fixdate ("Sun, 06 Nov 1994 08:49:37 GMT") of `t`, as required for the Date header.
std::string http_date(std::time_t t);

// ASCII case-insensitive equality (header names, tokens).
bool iequals(std::string_view a, std::string_view b);

// Lower-case hex of n, as used for chunk sizes.
void append_hex(std::string& out, std::size_t n);

// Statuses whose responses carry no body (1xx, 204, 304).
bool has_no_body(int status);

// The head of a complete response: status line, the caller's headers minus the ones the
// server owns (Content-Length, Date, Connection, Transfer-Encoding), Content-Length
// (unless the status has no body), Date, and Connection (close; keep-alive for HTTP/1.0).
void append_response_head(std::string& out, const response& r, std::string_view date,
                          bool closes, bool http_1_0);
// The head of a streamed response: chunked, or for HTTP/1.0 close-delimited (which has no
// trailers, so a `Trailer` announcement is dropped); with `r.stream_length`, sized by
// Content-Length (no trailers either).
void append_stream_head(std::string& out, const response& r, std::string_view date,
                        bool closes, bool http_1_0);
// "<hex size>\r\n" before a chunk of `n` bytes.
std::string chunk_size_line(std::size_t n);
// The terminating chunk with its trailers.
std::string last_chunk(const std::vector<header>& trailers);

}  // namespace shellctl::io::http::wire
