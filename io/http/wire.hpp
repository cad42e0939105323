#pragma once
// Small pieces of the HTTP/1.1 wire format shared by the server, the tests and the fuzzer.
#include <cstddef>
#include <ctime>
#include <string>
#include <string_view>

namespace shellctl::io::http::wire {

// "OK", "Not Found", ...; "Unknown" for codes we never produce.
std::string_view reason_phrase(int status);

// IMF-fixdate ("Sun, 06 Nov 1994 08:49:37 GMT") of `t`, as required for the Date header.
std::string http_date(std::time_t t);

// ASCII case-insensitive equality (header names, tokens).
bool iequals(std::string_view a, std::string_view b);

// Lower-case hex of n, as used for chunk sizes.
void append_hex(std::string& out, std::size_t n);

}  // namespace shellctl::io::http::wire
