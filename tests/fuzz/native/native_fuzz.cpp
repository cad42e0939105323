// bytes -> the native scope's field rules and tokens. Properties, not just "no crash":
// base64url round-trips both ways; a token verifies only for the identity it was minted
// for; a generation that parses prints back as the same text; no scope id or ref that
// passes holds a byte outside its alphabet or a "." / ".." segment.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "io/native/scope_fields.hpp"
#include "io/native/scope_token.hpp"
#include "io/text/base64url.hpp"

namespace native = shellctl::io::native;
namespace text = shellctl::io::text;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);

  if (auto g = native::parse_generation(in)) {
    if (std::to_string(*g) != in || *g == 0 || *g > native::kMaxGeneration) std::abort();
  }
  if (native::valid_scope_id(in))
    for (char c : in)
      if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) std::abort();
  if (native::valid_ref(in)) {
    const std::string s = "/" + std::string(in) + "/";
    if (s.find("/../") != std::string::npos || s.find("/./") != std::string::npos ||
        s.find("//") != std::string::npos)
      std::abort();
  }
  native::valid_binding_ref(in);

  // base64url both ways.
  if (text::unbase64url(text::base64url(in)) != std::string(in)) std::abort();
  if (auto raw = text::unbase64url(in))
    if (text::base64url(*raw) != in) std::abort();

  // Whatever a client sends as X-Scope-Token.
  native::worker_identity id{"scope-a", 7, 4242, 123456, "boot-1"};
  if (native::verify_scope_token("control-token", id, in)) {
    // Only a token minted with this T for this identity verifies: then with any other
    // identity it must not.
    id.generation = 8;
    if (native::verify_scope_token("control-token", id, in)) std::abort();
  }
  // A token minted over these bytes as the nonce (16 of them) verifies for its identity.
  if (size >= 16) {
    const auto t = native::mint_scope_token("control-token", id, in.substr(0, 16));
    if (!native::verify_scope_token("control-token", id, t)) std::abort();
  }
  return 0;
}
