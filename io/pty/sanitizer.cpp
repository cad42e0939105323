#include "io/pty/sanitizer.hpp"

#include <algorithm>

namespace shellctl::io::pty {

namespace {

constexpr char32_t kEsc = 0x1B;
constexpr char32_t kBel = 0x07;
constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

bool is_continuation(unsigned char b) { return (b & 0xC0) == 0x80; }

}  // namespace

int decode_utf8(const unsigned char* p, std::size_t n, char32_t& cp) {
  const unsigned char b0 = p[0];
  if (b0 < 0x80) {
    cp = b0;
    return 1;
  }
  // Second-byte bounds exclude overlongs, surrogates and code points above U+10FFFF,
  // exactly like Go's utf8.DecodeRune acceptance ranges.
  int len;
  unsigned char lo = 0x80, hi = 0xBF;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    len = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    len = 3;
    if (b0 == 0xE0) lo = 0xA0;
    if (b0 == 0xED) hi = 0x9F;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    len = 4;
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;
  } else {
    return -1;
  }
  for (int i = 1; i < len; ++i) {
    if (static_cast<std::size_t>(i) >= n) return 0;
    const unsigned char b = p[i];
    if (i == 1 ? (b < lo || b > hi) : !is_continuation(b)) return -1;
  }
  char32_t v = b0 & (len == 2 ? 0x1F : len == 3 ? 0x0F : 0x07);
  for (int i = 1; i < len; ++i) v = (v << 6) | (p[i] & 0x3F);
  cp = v;
  return len;
}

std::string sanitizer::feed(std::string_view chunk) {
  std::string out;
  feed(chunk, out);
  return out;
}

void sanitizer::feed(std::string_view chunk, std::string& out) {
  if (!carry_.empty()) {
    // Complete the carried character with at most 3 bytes of this chunk.
    const std::size_t take = std::min<std::size_t>(4 - carry_.size(), chunk.size());
    std::string head = carry_;
    head.append(chunk.substr(0, take));
    char32_t cp = 0;
    const int len =
        decode_utf8(reinterpret_cast<const unsigned char*>(head.data()), head.size(), cp);
    if (len == 0) {  // still incomplete: the whole chunk was part of it
      carry_ = std::move(head);
      return;
    }
    if (len > 0) {
      step(cp, std::string_view(head.data(), static_cast<std::size_t>(len)), out);
      chunk.remove_prefix(static_cast<std::size_t>(len) - carry_.size());
    } else {
      // The carried bytes were a valid prefix (a lead byte plus continuation bytes), so
      // each of them is an invalid byte on its own; the chunk is decoded from its start.
      for (std::size_t i = 0; i < carry_.size(); ++i) step(0xFFFD, kReplacement, out);
    }
    carry_.clear();
  }
  const std::size_t rest = run(chunk, out);
  carry_.assign(chunk.substr(chunk.size() - rest));
}

std::size_t sanitizer::run(std::string_view data, std::string& out) {
  const auto* p = reinterpret_cast<const unsigned char*>(data.data());
  const std::size_t n = data.size();
  std::size_t i = 0;
  while (i < n) {
    if (state_ == state::normal && !pending_cr_) {
      // Fast path: a run of plain ASCII goes to the line buffer in one append.
      std::size_t j = i;
      while (j < n && p[j] < 0x80 && p[j] != kEsc && p[j] != '\r' && p[j] != '\n') ++j;
      if (j > i) {
        line_.append(data.data() + i, j - i);
        i = j;
        continue;
      }
    }
    char32_t cp = 0;
    const int len = decode_utf8(p + i, n - i, cp);
    if (len == 0) return n - i;  // incomplete sequence at the end: carry it over
    if (len < 0) {
      step(0xFFFD, kReplacement, out);
      ++i;
      continue;
    }
    step(cp, data.substr(i, static_cast<std::size_t>(len)), out);
    i += static_cast<std::size_t>(len);
  }
  return 0;
}

void sanitizer::step(char32_t cp, std::string_view utf8_char, std::string& out) {
  const bool control = cp < 0x20 || cp == 0x7F;
  switch (state_) {
    case state::normal:
      if (cp == kEsc) {
        state_ = state::esc;
      } else {
        visible(utf8_char, out);
      }
      return;
    case state::esc:
      if (cp == '[') {
        state_ = state::csi;
        return;
      }
      if (cp == ']') {
        state_ = state::osc;
        return;
      }
      if (cp >= 0x20 && cp <= 0x2F) {  // intermediate byte: the final byte follows
        state_ = state::esc_intermediate;
        return;
      }
      [[fallthrough]];
    case state::esc_intermediate:
      if (cp >= 0x20 && cp <= 0x2F) return;
      state_ = state::normal;
      // A final byte 0x30..0x7E ends the escape and is swallowed with it (D6). ESC ESC and
      // ESC + control character keep the original's rule: both are dropped.
      if ((cp >= 0x30 && cp <= 0x7E) || cp == kEsc || control) return;
      visible(utf8_char, out);
      return;
    case state::csi:
      if (cp >= 0x40 && cp <= 0x7E) state_ = state::normal;
      return;
    case state::osc:
      if (cp == kBel) {
        state_ = state::normal;
      } else if (cp == kEsc) {
        state_ = state::osc_esc;
      }
      return;
    case state::osc_esc:
      state_ = cp == '\\' ? state::normal : state::osc;
      return;
  }
}

void sanitizer::visible(std::string_view utf8_char, std::string& out) {
  const char c = utf8_char.size() == 1 ? utf8_char[0] : '\0';
  const bool is_lf = utf8_char.size() == 1 && c == '\n';
  const bool is_cr = utf8_char.size() == 1 && c == '\r';
  if (pending_cr_) {
    pending_cr_ = false;
    if (is_lf) {
      out.append(line_);
      out.push_back('\n');
      line_.clear();
      return;
    }
    line_.clear();  // a bare CR: the following text overwrites the line
  }
  if (is_cr) {
    pending_cr_ = true;
  } else if (is_lf) {
    out.append(line_);
    out.push_back('\n');
    line_.clear();
  } else {
    line_.append(utf8_char);
  }
}

std::string sanitizer::finish() {
  std::string out;
  // An incomplete sequence at end of stream is invalid: one U+FFFD per byte.
  for (std::size_t i = 0; i < carry_.size(); ++i) step(0xFFFD, kReplacement, out);
  carry_.clear();
  out.append(line_);
  line_.clear();
  state_ = state::normal;
  pending_cr_ = false;
  return out;
}

}  // namespace shellctl::io::pty
