// The sanitizer's reference cases (docs/jobs.md "The output pipe") and decision D6 (split
// UTF-8, whole two-byte escapes).
#include "io/pty/sanitizer.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using shellctl::io::pty::sanitizer;

namespace {

const std::string kFFFD = "\xEF\xBF\xBD";

// Feeds the chunks in order and returns the concatenated output including finish().
std::string run(const std::vector<std::string>& chunks) {
  sanitizer s;
  std::string out;
  for (const auto& c : chunks) out += s.feed(c);
  return out + s.finish();
}

std::string run1(const std::string& input) { return run({input}); }

}  // namespace

TEST_CASE("reference table rows") {
  CHECK(run1("hello\nworld\n") == "hello\nworld\n");
  CHECK(run1("\x1b[31mred\x1b[0m\n") == "red\n");
  CHECK(run1("50%\r100%\n") == "100%\n");
  CHECK(run1("line1\r\nline2\r\n") == "line1\nline2\n");
  CHECK(run1("\x1b]0;title\x07visible\n") == "visible\n");
  CHECK(run1("no newline") == "no newline");
  CHECK(run({"\xff", "a\n"}) == kFFFD + "a\n");
}

TEST_CASE("reference table: per-chunk outputs") {
  SUBCASE("CR overwrite across chunks") {
    sanitizer s;
    CHECK(s.feed("50%\r10") == "");
    CHECK(s.feed("0%\n") == "100%\n");
    CHECK(s.finish() == "");
  }
  SUBCASE("CSI split across chunks") {
    sanitizer s;
    CHECK(s.feed("\x1b[") == "");
    CHECK(s.feed("31mred") == "");
    CHECK(s.feed("\n") == "red\n");
  }
  SUBCASE("OSC with ST split across chunks, CR at EOF dropped") {
    sanitizer s;
    CHECK(s.feed("before\x1b]0;title\x1b") == "");
    CHECK(s.feed("\\after\rreplace\r") == "");
    CHECK(s.finish() == "replace");
  }
  SUBCASE("invalid byte alone in a chunk") {
    sanitizer s;
    CHECK(s.feed("\xff") == "");
    CHECK(s.feed("a\n") == kFFFD + "a\n");
  }
}

TEST_CASE("line and CR rules") {
  CHECK(run1("abc\r") == "abc");
  CHECK(run1("abc\r\r\n") == "\n");
  CHECK(run1("a\rb\rc\n") == "c\n");
  CHECK(run1("\n\n") == "\n\n");
  CHECK(run1("x\r\ny") == "x\ny");
  // Control characters other than CR/LF/ESC are kept: no backspace processing.
  CHECK(run1(std::string("a\tb\bc\x07\0d\n", 9)) == std::string("a\tb\bc\x07\0d\n", 9));
  CHECK(run1("a\x7f\n") == "a\x7f\n");
  // Nothing is final until LF (or EOF).
  sanitizer s;
  CHECK(s.feed("partial") == "");
  CHECK(s.finish() == "partial");
  CHECK(s.finish() == "");
}

TEST_CASE("CSI and OSC") {
  CHECK(run1("a\x1b[1;2;3Hb\n") == "ab\n");
  CHECK(run1("a\x1b[?25lb\n") == "ab\n");
  CHECK(run1("a\x1b[12\n34mb\n") == "ab\n");  // newline inside CSI is swallowed
  CHECK(run1("a\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\b\n") == "alinkb\n");
  CHECK(run1("a\x1b]0;t\x1bxy\x07"
             "b\n") == "ab\n");  // ESC not followed by '\' stays in OSC
  CHECK(run1("a\x1b]0;t\xc3\xa9\x07"
             "b\n") == "ab\n");
  CHECK(run1("a\x1b[") == "a");  // EOF inside CSI: state reset, line flushed
}

TEST_CASE("two-byte escapes are removed whole (D6)") {
  for (const char* esc : {"\x1b(B", "\x1b)0", "\x1b=", "\x1b>", "\x1b\x37", "\x1b\x38", "\x1bM",
                          "\x1b\x63", "\x1b#8", "\x1b(0", "\x1b%G", "\x1b\\", "\x1b D"}) {
    CAPTURE(std::string(esc));
    CHECK(run1(std::string("a") + esc + "b\n") == "ab\n");
    // The same escape split at every byte boundary.
    const std::string whole = std::string("a") + esc + "b\n";
    for (std::size_t cut = 1; cut < whole.size(); ++cut) {
      CAPTURE(cut);
      CHECK(run({whole.substr(0, cut), whole.substr(cut)}) == "ab\n");
    }
  }
  CHECK(run1("\x1b(B\x1b)0\x1b=text\x1b>\n") == "text\n");
}

TEST_CASE("ESC followed by ESC, controls or non-ASCII keeps the original's rules") {
  CHECK(run1("a\x1b\x1b[31mb\n") == "a[31mb\n");  // ESC ESC -> NORMAL, "[31m" visible
  CHECK(run1("a\x1b\nb\n") == "ab\n");            // ESC + LF drops the LF
  CHECK(run1("a\x1b\rb\n") == "ab\n");            // ESC + CR drops the CR
  CHECK(run1("a\x1b\xc3\xa9"
             "b\n") ==
        "a\xc3\xa9"
        "b\n");                          // printable non-ASCII is shown
  CHECK(run1("a\x1b(\nb\n") == "ab\n");  // control after an intermediate: dropped
  CHECK(run1("a\x1b(\xc3\xa9"
             "b\n") ==
        "a\xc3\xa9"
        "b\n");
}

TEST_CASE("UTF-8 characters split at every byte position are carried over (D6)") {
  for (const std::string ch : {"\xc3\xa9", "\xe2\x82\xac", "\xed\x9f\xbf", "\xf0\x9f\x98\x80",
                               "\xf4\x8f\xbf\xbf", "\xe0\xa0\x80", "\xf0\x90\x80\x80"}) {
    const std::string whole = "x" + ch + "y\n";
    CHECK(run1(whole) == whole);
    for (std::size_t cut = 1; cut < whole.size(); ++cut) {
      CAPTURE(cut);
      CHECK(run({whole.substr(0, cut), whole.substr(cut)}) == whole);
    }
    // One byte per chunk.
    std::vector<std::string> bytes;
    for (char c : whole) bytes.emplace_back(1, c);
    CHECK(run(bytes) == whole);
  }
  SUBCASE("the carried bytes produce no output of their own") {
    sanitizer s;
    CHECK(s.feed("ab\n\xe2") == "ab\n");
    CHECK(s.feed("\x82") == "");
    CHECK(s.feed("\xac\n") == "\xe2\x82\xac\n");
  }
}

TEST_CASE("truly invalid bytes become U+FFFD, one per byte (Go's decoder)") {
  CHECK(run1("a\xff"
             "b\n") == "a" + kFFFD + "b\n");
  CHECK(run1("a\x80"
             "b\n") == "a" + kFFFD + "b\n");                                  // lone continuation
  CHECK(run1("\xc0\x80\n") == kFFFD + kFFFD + "\n");                          // overlong
  CHECK(run1("\xed\xa0\x80\n") == kFFFD + kFFFD + kFFFD + "\n");              // surrogate
  CHECK(run1("\xf4\x90\x80\x80\n") == kFFFD + kFFFD + kFFFD + kFFFD + "\n");  // > U+10FFFF
  CHECK(run1("\xe2\x82"
             "A\n") == kFFFD + kFFFD + "A\n");  // broken sequence
  CHECK(run1("\xf5\n") == kFFFD + "\n");
  SUBCASE("a carried prefix that turns out invalid") {
    CHECK(run({"\xe2", "A\n"}) == kFFFD + "A\n");
    CHECK(run({"\xf0\x9f", "\x41\n"}) == kFFFD + kFFFD + "A\n");
    CHECK(run({"\xf0\x9f", "\x98", "\xff\n"}) == kFFFD + kFFFD + kFFFD + kFFFD + "\n");
  }
  SUBCASE("an incomplete sequence at end of stream") {
    CHECK(run({"a\xe2\x82"}) == "a" + kFFFD + kFFFD);
    CHECK(run({"a\xf0", "\x9f"}) == "a" + kFFFD + kFFFD);
  }
  SUBCASE("U+FFFD obeys the CR rule like any visible character") {
    CHECK(run1("abc\r\xff\n") == kFFFD + "\n");
  }
}

TEST_CASE("any two-chunk split gives the same output as one chunk") {
  const std::string input =
      "\x1b[1mbold\x1b[0m caf\xc3\xa9 \xf0\x9f\x98\x80\r\nprogress 1%\rprogress 100%\r\n"
      "\x1b]0;title\x07\x1b(Bplain\x1b=\xff\xe2\x82 tail\r\n\x1b]2;x\x1b\\last";
  const std::string expected = run1(input);
  CHECK(expected == "bold caf\xc3\xa9 \xf0\x9f\x98\x80\nprogress 100%\nplain" + kFFFD + kFFFD +
                        kFFFD + " tail\nlast");
  for (std::size_t cut = 0; cut <= input.size(); ++cut) {
    CAPTURE(cut);
    CHECK(run({input.substr(0, cut), input.substr(cut)}) == expected);
  }
  std::vector<std::string> bytes;
  for (char c : input) bytes.emplace_back(1, c);
  CHECK(run(bytes) == expected);
}

TEST_CASE("finish resets the state") {
  sanitizer s;
  CHECK(s.feed("a\x1b]0;unterminated") == "");
  CHECK(s.finish() == "a");
  CHECK(s.feed("next\n") == "next\n");
}
