#pragma once
// Percent-decoding for URL path segments and query strings (RFC 3986 %XX). Malformed
// escapes stay as they are.
#include <string>
#include <string_view>

namespace shellctl::io::text {

// `plus_is_space`: application/x-www-form-urlencoded (query strings) turns '+' into ' '.
std::string percent_decode(std::string_view s, bool plus_is_space);

}  // namespace shellctl::io::text
