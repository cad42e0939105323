#pragma once
// Percent-decoding for URL path segments and query strings (RFC 3986 %XX). Malformed
// escapes stay as they are.
#include <optional>
#include <string>
#include <string_view>

namespace shellctl::io::text {

// `plus_is_space`: application/x-www-form-urlencoded (query strings) turns '+' into ' '.
std::string percent_decode(std::string_view s, bool plus_is_space);

// The value of `name` in a raw query string, as Go's url.Query reads it: pairs split on
// '&' and ';', the first value wins, %XX and '+' decoded; a bare `name` is "". nullopt
// when absent.
std::optional<std::string> query_param(std::string_view query, std::string_view name);

}  // namespace shellctl::io::text
