#pragma once
// One step of UTF-8 decoding with Go's utf8.DecodeRune semantics, shared by the JSON codec
// (io/json) and output paging (output_window.cpp) so both agree on what "one invalid byte"
// means: a position that does not start a complete, well-formed character is exactly one
// invalid byte (one U+FFFD), and decoding resumes at the next byte.
//
// Well-formed = RFC 3629 / Unicode Table 3-7: no overlongs, no surrogates, max U+10FFFF.
// Header-only on purpose: io/json and io/text are separate libraries.
#include <cstddef>

namespace shellctl::io::text::utf8 {

struct unit {
  // valid: `len` bytes form one character.
  // incomplete: the bytes present are a well-formed prefix of a `len`-byte character, but the
  //   input ends before it does (the caller decides: wait for more, or treat as invalid).
  // neither: the first byte is invalid; consume 1 byte.
  int len;
  bool valid;
  bool incomplete;
};

inline constexpr char replacement[] = "\xEF\xBF\xBD";  // U+FFFD

inline bool is_continuation(unsigned char c) { return (c & 0xC0) == 0x80; }

// Sequence length announced by a lead byte; 0 when `c` can never start a character
// (continuation bytes, C0/C1 overlong leads, F5..FF).
inline int lead_length(unsigned char c) {
  if (c < 0x80) return 1;
  if (c < 0xC2) return 0;
  if (c < 0xE0) return 2;
  if (c < 0xF0) return 3;
  if (c < 0xF5) return 4;
  return 0;
}

// Classifies the character starting at s[0]; n >= 1 bytes are available.
inline unit classify(const unsigned char* s, std::size_t n) {
  const unsigned char c = s[0];
  if (c < 0x80) return {1, true, false};
  const int len = lead_length(c);
  if (len == 0) return {1, false, false};
  // The second byte has a narrower range for a few leads (overlongs, surrogates, > U+10FFFF).
  unsigned char lo = 0x80, hi = 0xBF;
  if (c == 0xE0)
    lo = 0xA0;
  else if (c == 0xED)
    hi = 0x9F;
  else if (c == 0xF0)
    lo = 0x90;
  else if (c == 0xF4)
    hi = 0x8F;
  for (int i = 1; i < len; ++i) {
    if (static_cast<std::size_t>(i) >= n) return {len, false, true};
    const unsigned char b = s[i];
    if (i == 1 ? (b < lo || b > hi) : !is_continuation(b)) return {1, false, false};
  }
  return {len, true, false};
}

}  // namespace shellctl::io::text::utf8
