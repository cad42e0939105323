// Output paging: the original's examples (docs/api.md "Long-polls") and decision D6 (never
// split a character, invalid bytes as U+FFFD, paging always advances).
#include "io/text/output_window.hpp"

#include <doctest/doctest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <random>
#include <string>

using shellctl::io::text::file_size_or_zero;
using shellctl::io::text::offset_beyond_end;
using shellctl::io::text::output_window;
using shellctl::io::text::read_output_tail;
using shellctl::io::text::read_output_window;

namespace {

const std::string FFFD = "\xEF\xBF\xBD";

// A temporary file removed at scope exit.
struct temp_file {
  std::string path;
  temp_file() {
    char tmpl[] = "/tmp/shellctl_text_unit_XXXXXX";
    const int fd = ::mkstemp(tmpl);
    REQUIRE(fd >= 0);
    ::close(fd);
    path = tmpl;
  }
  explicit temp_file(const std::string& content) : temp_file() { write(content); }
  ~temp_file() { ::unlink(path.c_str()); }
  void write(const std::string& content) const {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << content;
  }
};

// Independent oracle: decodes like Go's utf8.DecodeRune loop, written from the code point
// arithmetic rather than with the byte-range table the implementation uses.
std::string decode_with_fffd(const std::string& s) {
  std::string out;
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    std::size_t len = c < 0x80         ? 1
                      : (c >> 5) == 6  ? 2
                      : (c >> 4) == 14 ? 3
                      : (c >> 3) == 30 ? 4
                                       : 0;
    bool ok = len != 0 && i + len <= s.size();
    std::uint32_t cp = 0;
    if (ok) {
      cp = len == 1 ? c : len == 2 ? (c & 0x1F) : len == 3 ? (c & 0x0F) : (c & 0x07);
      for (std::size_t k = 1; k < len && ok; ++k) {
        const auto b = static_cast<unsigned char>(s[i + k]);
        if ((b & 0xC0) != 0x80) ok = false;
        cp = (cp << 6) | (b & 0x3F);
      }
    }
    if (ok) {
      static const std::uint32_t min_for_len[] = {0, 0, 0x80, 0x800, 0x10000};
      ok = cp >= min_for_len[len] && cp <= 0x10FFFF && !(cp >= 0xD800 && cp <= 0xDFFF);
    }
    if (ok) {
      out.append(s, i, len);
      i += len;
    } else {
      out += FFFD;
      i += 1;
    }
  }
  return out;
}

void check_window(const output_window& w, const std::string& text, std::uint64_t offset,
                  bool truncated) {
  CHECK(w.text == text);
  CHECK(w.offset == offset);
  CHECK(w.truncated == truncated);
}

}  // namespace

TEST_CASE("window: the paging examples (docs/api.md \"Long-polls\")") {
  temp_file f("A世界B");
  check_window(read_output_window(f.path, 0, 4, true), "A世", 4, true);
  check_window(read_output_window(f.path, 2, 4, true), "界", 7, true);  // skip 2, one unit anyway
  check_window(read_output_window(f.path, 4, 4, true), "界B", 8, false);
  check_window(read_output_window(f.path, 8, 4, true), "", 8, false);  // offset == size
  check_window(read_output_window(f.path, 0, 100, false), "A世界B", 8, false);
  check_window(read_output_window(f.path, 0, 1, true), "A", 1, true);
  check_window(read_output_window(f.path, 1, 1, true), "世", 4, true);  // one unit anyway, limit 1
  check_window(read_output_window(f.path, 3, 1, true), "界", 7, true);  // skip 1, one unit anyway
  check_window(read_output_window(f.path, 0, 0, true), "A", 1, true);   // limit 0: one char

  temp_file g("世界");
  check_window(read_output_window(g.path, 0, 4, true), "世", 3, true);

  temp_file d("0123456789");
  check_window(read_output_window(d.path, 0, 5, true), "01234", 5, true);
  check_window(read_output_window(d.path, 5, 5, true), "56789", 10, false);
}

TEST_CASE("window: offsets past the end and missing files") {
  temp_file f("abc");
  CHECK_THROWS_AS(read_output_window(f.path, 4, 10, true), offset_beyond_end);
  try {
    read_output_window(f.path, 9, 10, false);
    FAIL("expected offset_beyond_end");
  } catch (const offset_beyond_end& e) {
    CHECK(e.offset == 9);
    CHECK(e.size == 3);
    CHECK(std::string(e.what()) == "offset 9 exceeds current file size 3");
  }
  const std::string missing = f.path + ".missing";
  CHECK(file_size_or_zero(missing) == 0);
  CHECK(file_size_or_zero(f.path) == 3);
  check_window(read_output_window(missing, 0, 10, false), "", 0, false);
  CHECK_THROWS_AS(read_output_window(missing, 1, 10, false), offset_beyond_end);
  check_window(read_output_tail(missing, 10), "", 0, false);
  temp_file empty("");
  check_window(read_output_window(empty.path, 0, 10, true), "", 0, false);
  check_window(read_output_tail(empty.path, 10), "", 0, false);
}

TEST_CASE("window: invalid bytes are U+FFFD and always consumed (D6)") {
  temp_file f(
      "a\xff"
      "b\x80\x80"
      "c");
  check_window(read_output_window(f.path, 0, 100, true), "a" + FFFD + "b" + FFFD + FFFD + "c", 6,
               false);
  check_window(read_output_window(f.path, 1, 1, true), FFFD, 2, true);
  // A stray continuation byte at the cursor is not inside a character: shown, not skipped.
  check_window(read_output_window(f.path, 3, 1, true), FFFD, 4, true);
  check_window(read_output_window(f.path, 4, 1, true), FFFD, 5, true);
  // Truncated sequence in the middle: each byte on its own.
  temp_file t(
      "\xe4\xb8"
      "A");
  check_window(read_output_window(t.path, 0, 10, false), FFFD + FFFD + "A", 3, false);
  // Cursor on the 2nd byte of a broken 3-byte sequence: not inside a valid character.
  check_window(read_output_window(t.path, 1, 10, false), FFFD + "A", 3, false);
  // Cursor on a continuation of a valid 4-byte character: skipped to its end.
  temp_file e("x\xf0\x9f\x98\x80y");
  check_window(read_output_window(e.path, 2, 10, true), "y", 6, false);
  check_window(read_output_window(e.path, 4, 10, true), "y", 6, false);
  check_window(read_output_window(e.path, 1, 3, true), "\xf0\x9f\x98\x80", 5, true);  // one unit
}

TEST_CASE("window: incomplete character at the end of the file") {
  temp_file f("ab\xe4\xb8");  // "ab" + first two bytes of 世
  // The job may still write the third byte: hold it back, and do not claim more is ready.
  check_window(read_output_window(f.path, 0, 100, false), "ab", 2, false);
  check_window(read_output_window(f.path, 2, 100, false), "", 2, false);
  check_window(read_output_window(f.path, 3, 100, false), "", 3, false);  // inside it
  check_window(read_output_window(f.path, 0, 2, false), "ab", 2, false);
  check_window(read_output_window(f.path, 0, 1, false), "a", 1, true);
  // Once the job is done those bytes can never become a character.
  check_window(read_output_window(f.path, 0, 100, true), "ab" + FFFD + FFFD, 4, false);
  check_window(read_output_window(f.path, 2, 1, true), FFFD, 3, true);
  check_window(read_output_window(f.path, 3, 100, true), FFFD, 4, false);
  // The job completes the character: it comes out whole.
  f.write("ab\xe4\xb8\x96");
  check_window(read_output_window(f.path, 2, 100, false), "世", 5, false);
  check_window(read_output_window(f.path, 3, 100, false), "", 5, false);  // skip 2
  // A prefix that is already invalid is not held back.
  f.write("ab\xe0\x80");
  check_window(read_output_window(f.path, 0, 100, false), "ab" + FFFD + FFFD, 4, false);
  f.write("ab\xf4\x90");
  check_window(read_output_window(f.path, 0, 100, false), "ab" + FFFD + FFFD, 4, false);
}

TEST_CASE("tail: the last bytes, never a split character") {
  temp_file d("0123456789");
  check_window(read_output_tail(d.path, 5), "56789", 10, false);
  check_window(read_output_tail(d.path, 100), "0123456789", 10, false);
  check_window(read_output_tail(d.path, 10), "0123456789", 10, false);
  temp_file f("A世界B");
  check_window(read_output_tail(f.path, 5), "界B", 8, false);  // start 3: skip 1
  check_window(read_output_tail(f.path, 6), "界B", 8, false);  // start 2: skip 2
  check_window(read_output_tail(f.path, 7), "世界B", 8, false);
  temp_file inc("abc\xe4\xb8");
  check_window(read_output_tail(inc.path, 100), "abc", 3, false);  // incomplete end dropped
  check_window(read_output_tail(inc.path, 1), "", 4, false);       // start 4: inside it
  temp_file bad("\x80\x80z\xff");
  check_window(read_output_tail(bad.path, 100), FFFD + FFFD + "z" + FFFD, 4, false);
  check_window(read_output_tail(bad.path, 3), FFFD + "z" + FFFD, 4, false);
}

TEST_CASE("window: property - paging reproduces the decoded file and never stalls") {
  std::mt19937 rng(12345);
  const std::string pieces[] = {"a",       "Z",        "\n",           "é",
                                "世",      "😀",        "\xff",         "\x80",
                                "\xc3",    "\xe4\xb8", "\xf0\x9f\x98", "\xed\xa0\x80",
                                "\xc0\xaf"};
  const std::size_t n_pieces = sizeof pieces / sizeof pieces[0];
  temp_file f;
  for (int round = 0; round < 300; ++round) {
    std::string content;
    const int n = static_cast<int>(rng() % 60);
    for (int i = 0; i < n; ++i) content += pieces[rng() % n_pieces];
    f.write(content);
    const std::string expected = decode_with_fffd(content);
    CAPTURE(round);

    std::string got;
    std::uint64_t offset = 0;
    int calls = 0;
    for (;;) {
      const std::uint64_t limit = 1 + rng() % 20;
      const output_window w = read_output_window(f.path, offset, limit, true);
      REQUIRE(++calls <= static_cast<int>(content.size()) + 1);
      got += w.text;
      if (!w.truncated) {
        CHECK(w.offset == content.size());
        break;
      }
      REQUIRE(w.offset > offset);  // strictly increasing: paging never stalls
      CHECK(w.offset - offset <= std::max<std::uint64_t>(limit, 4));
      offset = w.offset;
    }
    CHECK(got == expected);

    // Tail of a finished file ends at a unit boundary and decodes like the file's end.
    const std::uint64_t tl = rng() % (content.size() + 2);
    const output_window t = read_output_tail(f.path, tl);
    CHECK_FALSE(t.truncated);
    CHECK(t.offset <= content.size());
  }
}

TEST_CASE("window: property - job still running holds back only a trailing partial char") {
  std::mt19937 rng(777);
  const std::string whole[] = {"a", "é", "世", "😀"};
  temp_file f;
  for (int round = 0; round < 200; ++round) {
    std::string content;
    const int n = 1 + static_cast<int>(rng() % 20);
    for (int i = 0; i < n; ++i) content += whole[rng() % 4];
    // Cut the last character short (if it is multi-byte) as if the job was mid-write.
    const std::string last = whole[1 + rng() % 3];
    const std::size_t cut = 1 + rng() % (last.size() - 1);
    const std::string file = content + last.substr(0, cut);
    f.write(file);
    std::string got;
    std::uint64_t offset = 0;
    for (int calls = 0;; ++calls) {
      REQUIRE(calls <= static_cast<int>(file.size()) + 1);
      const output_window w = read_output_window(f.path, offset, 1 + rng() % 20, false);
      got += w.text;
      if (!w.truncated) {
        offset = w.offset;
        break;
      }
      REQUIRE(w.offset > offset);
      offset = w.offset;
    }
    CHECK(got == content);
    CHECK(offset == content.size());
  }
}
