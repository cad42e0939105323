#pragma once
// Streaming terminal-output sanitizer (runtime.md §11 with decision D6): strips CSI/OSC
// and two-byte escapes whole, folds CR overwrites, keeps lines, and carries a UTF-8
// character split across chunks over to the next chunk.
#include <string>
#include <string_view>

namespace shellctl::io::pty {

class sanitizer {
 public:
  // Feeds one chunk; returns the bytes this chunk made final (may be empty).
  std::string feed(std::string_view chunk);
  // End of stream: returns the pending line (without adding a newline) and resets.
  std::string finish();

 private:
  enum class state { normal, esc, csi, osc, osc_esc, esc_intermediate };
  state state_ = state::normal;
  std::string line_;
  std::string carry_;  // incomplete UTF-8 sequence from the previous chunk
  bool pending_cr_ = false;
  void visible(std::string_view utf8_char, std::string& out);
  void step(char32_t cp, std::string_view utf8_char, std::string& out);
};

}  // namespace shellctl::io::pty
