#pragma once
// Go's %q of a string, for messages the original words that way (validation errors, the
// dify-agent CLI): quotes, backslash escapes, printable UTF-8 kept, other bytes as \xNN.
#include <string>
#include <string_view>

namespace shellctl::io::text {

std::string go_quote(std::string_view s);

// Go's text of an errno value: strerror with a lower-case first letter ("no such file or
// directory"), as in Go's os errors.
std::string go_errno_text(int e);

}  // namespace shellctl::io::text
