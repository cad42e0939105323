#pragma once
// Streaming terminal-output sanitizer (docs/jobs.md "The output pipe", decision D6): strips CSI/OSC
// and two-byte escapes whole, folds CR overwrites, keeps lines, and carries a UTF-8
// character split across chunks over to the next chunk.
#include <string>
#include <string_view>

namespace shellctl::io::pty {

class sanitizer {
 public:
  // Feeds one chunk; returns the bytes this chunk made final (may be empty).
  std::string feed(std::string_view chunk);
  // Same, appending to `out` instead (lets a caller reuse one buffer).
  void feed(std::string_view chunk, std::string& out);
  // End of stream: returns the pending line (without adding a newline) and resets.
  std::string finish();
  // The unfinished last line as it shows now (a prompt that waits for its answer).
  const std::string& pending_line() const { return line_; }

 private:
  enum class state { normal, esc, csi, osc, osc_esc, esc_intermediate };
  state state_ = state::normal;
  std::string line_;
  std::string carry_;  // incomplete UTF-8 sequence from the previous chunk (at most 3 bytes)
  bool pending_cr_ = false;
  void visible(std::string_view utf8_char, std::string& out);
  void step(char32_t cp, std::string_view utf8_char, std::string& out);
  // Runs the state machine over `data`; returns how many trailing bytes form an
  // incomplete (but so far valid) UTF-8 sequence that was not consumed.
  std::size_t run(std::string_view data, std::string& out);
};

// UTF-8 decoding with Go's rules: returns the sequence length (1..4) and sets `cp`, 0 when
// `n` bytes are a valid but incomplete prefix, or -1 when the first byte starts no valid
// sequence (the caller consumes one byte as U+FFFD).
int decode_utf8(const unsigned char* p, std::size_t n, char32_t& cp);

}  // namespace shellctl::io::pty
