#pragma once
// Base64 with the URL-safe alphabet (RFC 4648, section 5), for the native supervisor's tokens
// and dify-agent's refs: one alphabet table, one decoder.
#include <optional>
#include <string>
#include <string_view>

namespace shellctl::io::text {

// Without padding.
std::string base64url(std::string_view raw);
// Unpadded text; nullopt on a character outside the alphabet or a length no byte string
// has. `canonical`: also refuse nonzero leftover bits, so that each byte string has exactly
// one text (tokens must not be malleable); off, they are ignored, as Go's decoder does.
std::optional<std::string> unbase64url(std::string_view text, bool canonical = true);

}  // namespace shellctl::io::text
