#include "io/json/json.hpp"

#include <simdjson.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cmath>
#include <cstring>
#include <limits>
#include <system_error>

#include "io/text/utf8_unit.hpp"

// Request decoding mimics Go's json.Decoder + json.Unmarshal into a struct (docs/api.md
// "Conventions"); response encoding mimics Go 1.26's encoding/json with HTML escaping on.
//
// Decoding pipeline:
//   1. scan_first_value finds where the first JSON value ends (json.Decoder reads one value
//      and leaves the rest of the stream alone, so trailing bytes never matter);
//   2. simdjson (DOM) parses and validates exactly that prefix;
//   3. only if simdjson refuses it, go_compat_rewrite maps the inputs Go accepts but simdjson
//      3.0.1 does not onto equivalent ones, and we parse once more:
//        * integers beyond int64/uint64 (Go: fine as float64, error as int)  -> "<digits>.0";
//        * numbers beyond float64's range (Go: error for any typed field, but ignored in an
//          unknown field)                                                    -> a sentinel;
//        * invalid UTF-8 inside strings (Go: each bad byte becomes U+FFFD)   -> U+FFFD;
//        * lone UTF-16 surrogate escapes (Go: U+FFFD)                        -> \ufffd.
//      Everything else simdjson rejects is invalid for Go too.
// Known remaining differences: nesting deeper than simdjson's 1024 levels is rejected (Go
// allows 10000); key matching folds ASCII only (Go also folds e.g. U+017F to 's').
namespace shellctl::io::json {
namespace {

namespace dom = simdjson::dom;
namespace utf8 = shellctl::io::text::utf8;

bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

enum class first_kind { none, null, object };

struct first_value {
  first_kind kind = first_kind::none;
  std::string_view text;  // the object's bytes, braces included
};

// Where Go's json.Decoder would stop reading: right after the closing brace of a top-level
// object, or after the 'l' of `null`. Anything else (EOF first, another kind of value) is a
// decode failure for a request body, so it is reported as `none` without looking further.
// Inside the object we only track strings and nesting; simdjson validates the rest, and if
// the object is malformed the prefix we hand it is malformed too.
first_value scan_first_value(std::string_view raw) {
  std::size_t i = 0;
  while (i < raw.size() && is_ws(raw[i])) ++i;
  if (raw.substr(i, 4) == "null") return {first_kind::null, {}};
  if (i >= raw.size() || raw[i] != '{') return {};
  const std::size_t begin = i;
  std::size_t depth = 0;
  bool in_string = false;
  for (; i < raw.size(); ++i) {
    const char c = raw[i];
    if (in_string) {
      if (c == '\\')
        ++i;  // the escaped byte can be neither a quote nor a backslash that ends anything
      else if (c == '"')
        in_string = false;
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      ++depth;
    } else if (c == '}' || c == ']') {
      if (--depth == 0) return {first_kind::object, raw.substr(begin, i + 1 - begin)};
    }
  }
  return {};  // EOF inside the value
}

bool is_num_char(char c) {
  return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E';
}
bool is_digit(char c) { return c >= '0' && c <= '9'; }

// JSON number grammar: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
bool valid_number(std::string_view t, bool& integer) {
  std::size_t i = 0;
  integer = true;
  if (i < t.size() && t[i] == '-') ++i;
  if (i >= t.size() || !is_digit(t[i])) return false;
  if (t[i] == '0') {
    ++i;
  } else {
    while (i < t.size() && is_digit(t[i])) ++i;
  }
  if (i < t.size() && t[i] == '.') {
    integer = false;
    ++i;
    if (i >= t.size() || !is_digit(t[i])) return false;
    while (i < t.size() && is_digit(t[i])) ++i;
  }
  if (i < t.size() && (t[i] == 'e' || t[i] == 'E')) {
    integer = false;
    ++i;
    if (i < t.size() && (t[i] == '+' || t[i] == '-')) ++i;
    if (i >= t.size() || !is_digit(t[i])) return false;
    while (i < t.size() && is_digit(t[i])) ++i;
  }
  return i == t.size();
}

// Decimal magnitude of a valid JSON number (the exponent of its leading digit), saturated;
// only its sign matters: it tells overflow from underflow when from_chars says out_of_range.
long long decimal_magnitude(std::string_view t) {
  std::size_t i = t[0] == '-' ? 1 : 0;
  long long mag = 0;
  std::size_t int_end = i;
  while (int_end < t.size() && is_digit(t[int_end])) ++int_end;
  if (!(int_end - i == 1 && t[i] == '0')) {
    mag = static_cast<long long>(int_end - i) - 1;
  } else {
    mag = -1;
    std::size_t j = int_end + 1;  // after '.'
    while (j < t.size() && t[j] == '0') {
      --mag;
      ++j;
    }
  }
  const std::size_t e = t.find_first_of("eE");
  if (e != std::string_view::npos) {
    std::size_t j = e + 1;
    bool neg = false;
    if (t[j] == '+' || t[j] == '-') neg = t[j++] == '-';
    long long ex = 0;
    for (; j < t.size(); ++j) {
      if (ex < 1'000'000'000) ex = ex * 10 + (t[j] - '0');
    }
    mag += neg ? -ex : ex;
  }
  return mag;
}

// An integer literal that fits int64 or uint64 (what simdjson parses as an integer).
bool fits_machine_int(std::string_view t, bool& is_uint64_max) {
  const bool neg = t[0] == '-';
  std::string_view digits = t.substr(neg ? 1 : 0);
  is_uint64_max = false;
  if (neg) {
    std::uint64_t v = 0;
    auto r = std::from_chars(digits.data(), digits.data() + digits.size(), v);
    return r.ec == std::errc() && v <= (std::uint64_t{1} << 63);
  }
  std::uint64_t v = 0;
  auto r = std::from_chars(digits.data(), digits.data() + digits.size(), v);
  if (r.ec != std::errc()) return false;
  is_uint64_max = v == std::numeric_limits<std::uint64_t>::max();
  return true;
}

// The sentinel that replaces a number beyond float64's range. It is an integer simdjson
// stores as uint64; any genuine occurrence of the same literal is rewritten to a float with
// the same value, so after a rewrite this uint64 can only be the sentinel.
constexpr std::string_view k_overflow_sentinel = "18446744073709551615";

int hex4(std::string_view s, std::size_t at) {
  if (at + 4 > s.size()) return -1;
  int v = 0;
  for (std::size_t k = 0; k < 4; ++k) {
    const char c = s[at + k];
    int d;
    if (c >= '0' && c <= '9')
      d = c - '0';
    else if (c >= 'a' && c <= 'f')
      d = c - 'a' + 10;
    else if (c >= 'A' && c <= 'F')
      d = c - 'A' + 10;
    else
      return -1;
    v = v * 16 + d;
  }
  return v;
}

// See the pipeline comment at the top. Returns false when nothing needed rewriting (then
// the simdjson error stands). Malformed input is copied through unchanged so it stays
// malformed.
bool go_compat_rewrite(std::string_view in, std::string& out, bool& used_sentinel) {
  out.clear();
  out.reserve(in.size() + in.size() / 8 + 32);
  used_sentinel = false;
  bool changed = false;
  std::size_t i = 0;
  while (i < in.size()) {
    const char c = in[i];
    if (c == '"') {
      out += c;
      ++i;
      while (i < in.size() && in[i] != '"') {
        const auto b = static_cast<unsigned char>(in[i]);
        if (b == '\\') {
          if (i + 1 < in.size() && in[i + 1] == 'u') {
            const int cp = hex4(in, i + 2);
            if (cp >= 0xD800 && cp <= 0xDFFF) {
              const bool pair = cp <= 0xDBFF && i + 12 <= in.size() && in[i + 6] == '\\' &&
                                in[i + 7] == 'u' && hex4(in, i + 8) >= 0xDC00 &&
                                hex4(in, i + 8) <= 0xDFFF;
              if (pair) {
                out.append(in.substr(i, 12));
                i += 12;
              } else {  // Go: an unpaired surrogate decodes as U+FFFD
                out += "\\ufffd";
                i += 6;
                changed = true;
              }
              continue;
            }
          }
          out.append(in.substr(i, 2));  // any other escape: copied; simdjson judges it
          i += 2;
          continue;
        }
        if (b < 0x80) {
          out += static_cast<char>(b);
          ++i;
          continue;
        }
        const utf8::unit u =
            utf8::classify(reinterpret_cast<const unsigned char*>(in.data()) + i, in.size() - i);
        if (u.valid) {
          out.append(in.substr(i, static_cast<std::size_t>(u.len)));
          i += static_cast<std::size_t>(u.len);
        } else {  // Go: each byte that is not part of valid UTF-8 decodes as U+FFFD
          out.append(utf8::replacement, 3);
          ++i;
          changed = true;
        }
      }
      if (i < in.size()) out += in[i++];  // closing quote
      continue;
    }
    if (c == '-' || is_digit(c)) {
      std::size_t j = i;
      while (j < in.size() && is_num_char(in[j])) ++j;
      const std::string_view tok = in.substr(i, j - i);
      i = j;
      bool integer = false;
      if (!valid_number(tok, integer)) {
        out.append(tok);
        continue;
      }
      bool is_max = false;
      if (integer && fits_machine_int(tok, is_max)) {
        out.append(tok);
        if (is_max) out += ".0";  // keeps the sentinel unambiguous
        continue;
      }
      double d;
      const auto r = std::from_chars(tok.data(), tok.data() + tok.size(), d);
      if (r.ec == std::errc::result_out_of_range && decimal_magnitude(tok) > 0) {
        out.append(k_overflow_sentinel);
        used_sentinel = true;
        changed = true;
      } else if (integer) {
        out.append(tok);  // beyond int64/uint64 but a fine float64: make simdjson see a float
        out += ".0";
        changed = true;
      } else {
        out.append(tok);
      }
      continue;
    }
    out += c;
    ++i;
  }
  return changed;
}

bool key_matches(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

[[noreturn]] void wrong_type(std::string_view key, const char* want) {
  throw type_error("json: field \"" + std::string(key) + "\": expected " + want);
}

}  // namespace

struct object::impl {
  // Owns the document; every dom element (also those of nested objects) points into it.
  std::shared_ptr<dom::parser> parser;
  dom::object obj;
  bool is_null = false;       // the body was `null`: no fields at all
  bool has_sentinel = false;  // see k_overflow_sentinel

  // Go applies every key that matches the field (exact or case-insensitive) in document
  // order, so the last non-null one wins; a null changes nothing for our field types; a
  // wrong type in ANY matching key fails the decode. `check` throws on a wrong type.
  template <class Check>
  std::optional<dom::element> find(std::string_view key, Check check) const {
    std::optional<dom::element> found;
    if (is_null) return found;
    for (dom::key_value_pair field : obj) {
      if (!key_matches(field.key, key)) continue;
      if (field.value.is_null()) continue;
      check(field.value);
      found = field.value;
    }
    return found;
  }

  bool is_overflow_sentinel(dom::element e) const {
    return has_sentinel && e.type() == dom::element_type::UINT64 &&
           std::uint64_t(e.get_uint64().value_unsafe()) ==
               std::numeric_limits<std::uint64_t>::max();
  }
};

object::object(std::unique_ptr<impl> p) : impl_(std::move(p)) {}
object::object(object&&) noexcept = default;
object& object::operator=(object&&) noexcept = default;
object::~object() = default;

std::optional<object> object::parse(std::string_view raw) {
  const first_value fv = scan_first_value(raw);
  if (fv.kind == first_kind::none) return std::nullopt;
  auto p = std::make_unique<impl>();
  if (fv.kind == first_kind::null) {
    p->is_null = true;
    return object(std::move(p));
  }
  p->parser = std::make_shared<dom::parser>();
  dom::element root;
  // parse(const char*, len, realloc_if_needed = true) copies into a padded buffer.
  auto err = p->parser->parse(fv.text.data(), fv.text.size()).get(root);
  if (err) {
    std::string fixed;
    bool sentinel = false;
    if (!go_compat_rewrite(fv.text, fixed, sentinel)) return std::nullopt;
    err = p->parser->parse(fixed).get(root);
    if (err) return std::nullopt;
    p->has_sentinel = sentinel;
  }
  if (root.get_object().get(p->obj)) return std::nullopt;  // cannot happen: starts with '{'
  return object(std::move(p));
}

std::optional<std::string> object::get_string(std::string_view key) const {
  auto e = impl_->find(key, [&](dom::element v) {
    if (!v.is_string()) wrong_type(key, "string");
  });
  if (!e) return std::nullopt;
  return std::string(std::string_view(e->get_string().value_unsafe()));
}

std::optional<std::int64_t> object::get_int(std::string_view key) const {
  // Go decodes an int field with strconv.ParseInt on the literal: fractions, exponents
  // (even 1.0 or 1e3) and values outside int64 are errors. simdjson stores exactly the
  // literals ParseInt accepts as INT64 (`-0` included); big ones are UINT64 or DOUBLE.
  auto e = impl_->find(key, [&](dom::element v) {
    if (v.type() != dom::element_type::INT64) wrong_type(key, "integer");
  });
  if (!e) return std::nullopt;
  return std::int64_t(e->get_int64().value_unsafe());
}

std::optional<double> object::get_number(std::string_view key) const {
  auto e = impl_->find(key, [&](dom::element v) {
    const auto t = v.type();
    if (t != dom::element_type::INT64 && t != dom::element_type::UINT64 &&
        t != dom::element_type::DOUBLE)
      wrong_type(key, "number");
    if (impl_->is_overflow_sentinel(v)) wrong_type(key, "number within float64 range");
  });
  if (!e) return std::nullopt;
  switch (e->type()) {
    case dom::element_type::INT64:
      return static_cast<double>(std::int64_t(e->get_int64().value_unsafe()));
    case dom::element_type::UINT64:
      return static_cast<double>(std::uint64_t(e->get_uint64().value_unsafe()));
    default:
      return double(e->get_double().value_unsafe());
  }
}

std::optional<bool> object::get_bool(std::string_view key) const {
  auto e = impl_->find(key, [&](dom::element v) {
    if (!v.is_bool()) wrong_type(key, "boolean");
  });
  if (!e) return std::nullopt;
  return bool(e->get_bool().value_unsafe());
}

std::optional<std::vector<std::pair<std::string, std::string>>> object::get_string_map(
    std::string_view key) const {
  // A Go map[string]string: keys are exact; a null value stores "" (Go decodes null into a
  // fresh zero string and still sets the key); a repeated key keeps its first position.
  auto check = [&](dom::element v) {
    dom::object o;
    if (v.get_object().get(o)) wrong_type(key, "object of strings");
    for (dom::key_value_pair kv : o)
      if (!kv.value.is_string() && !kv.value.is_null()) wrong_type(key, "object of strings");
  };
  auto e = impl_->find(key, check);
  if (!e) return std::nullopt;
  std::vector<std::pair<std::string, std::string>> out;
  // Named, not iterated off the temporary result (that would dangle).
  const dom::object map = e->get_object().value_unsafe();
  for (dom::key_value_pair kv : map) {
    std::string value;
    if (kv.value.is_string())
      value = std::string(std::string_view(kv.value.get_string().value_unsafe()));
    bool replaced = false;
    for (auto& existing : out) {
      if (existing.first == kv.key) {
        existing.second = value;
        replaced = true;
        break;
      }
    }
    if (!replaced) out.emplace_back(std::string(kv.key), std::move(value));
  }
  return out;
}

std::optional<std::vector<object>> object::get_object_array(std::string_view key) const {
  auto check = [&](dom::element v) {
    dom::array a;
    if (v.get_array().get(a)) wrong_type(key, "array of objects");
    for (dom::element x : a)
      if (!x.is_object()) wrong_type(key, "array of objects");
  };
  auto e = impl_->find(key, check);
  if (!e) return std::nullopt;
  std::vector<object> out;
  const dom::array arr = e->get_array().value_unsafe();
  for (dom::element x : arr) {
    auto p = std::make_unique<impl>();
    p->parser = impl_->parser;  // the elements point into the shared document
    p->obj = x.get_object().value_unsafe();
    p->has_sentinel = impl_->has_sentinel;
    out.push_back(object(std::move(p)));
  }
  return out;
}

std::vector<std::string> object::keys() const {
  std::vector<std::string> out;
  if (impl_->is_null) return out;
  for (dom::key_value_pair field : impl_->obj) out.emplace_back(field.key);
  return out;
}

bool object::is_null(std::string_view key) const {
  if (impl_->is_null) return false;
  for (dom::key_value_pair field : impl_->obj)
    if (field.key == key && field.value.is_null()) return true;
  return false;
}

std::optional<std::vector<std::string>> object::get_string_array(std::string_view key) const {
  // A Go []string: a null element becomes "".
  auto check = [&](dom::element v) {
    dom::array a;
    if (v.get_array().get(a)) wrong_type(key, "array of strings");
    for (dom::element x : a)
      if (!x.is_string() && !x.is_null()) wrong_type(key, "array of strings");
  };
  auto e = impl_->find(key, check);
  if (!e) return std::nullopt;
  std::vector<std::string> out;
  const dom::array arr = e->get_array().value_unsafe();
  for (dom::element x : arr)
    out.emplace_back(x.is_string() ? std::string_view(x.get_string().value_unsafe())
                                   : std::string_view());
  return out;
}

std::optional<object> object::get_object(std::string_view key) const {
  auto e = impl_->find(key, [&](dom::element v) {
    if (!v.is_object()) wrong_type(key, "object");
  });
  if (!e) return std::nullopt;
  auto p = std::make_unique<impl>();
  p->parser = impl_->parser;
  p->obj = e->get_object().value_unsafe();
  p->has_sentinel = impl_->has_sentinel;
  return object(std::move(p));
}

// ---------------------------------------------------------------------------------------
// Output

namespace {

// 0: copy as is; 1: ASCII that needs an escape; 2: first byte of a non-ASCII sequence.
struct escape_table {
  unsigned char cls[256];
  constexpr escape_table() : cls() {
    for (int c = 0; c < 256; ++c) cls[c] = c < 0x20 ? 1 : c >= 0x80 ? 2 : 0;
    cls[static_cast<unsigned char>('"')] = 1;
    cls[static_cast<unsigned char>('\\')] = 1;
    cls[static_cast<unsigned char>('<')] = 1;
    cls[static_cast<unsigned char>('>')] = 1;
    cls[static_cast<unsigned char>('&')] = 1;
  }
};
constexpr escape_table k_escape{};

void append_escape(std::string& out, unsigned char c) {
  static constexpr char hex[] = "0123456789abcdef";
  switch (c) {
    case '"':
      out.append("\\\"", 2);
      return;
    case '\\':
      out.append("\\\\", 2);
      return;
    // Go >= 1.22 writes \b and \f in short form; other control bytes as \u00XX.
    case '\b':
      out.append("\\b", 2);
      return;
    case '\f':
      out.append("\\f", 2);
      return;
    case '\n':
      out.append("\\n", 2);
      return;
    case '\r':
      out.append("\\r", 2);
      return;
    case '\t':
      out.append("\\t", 2);
      return;
    default: {
      const char esc[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 0xF]};
      out.append(esc, 6);
    }
  }
}

// Grows geometrically: reserving the exact size on every call would reallocate on every
// small append of a writer.
void ensure_room(std::string& out, std::size_t extra) {
  const std::size_t need = out.size() + extra;
  if (need > out.capacity()) out.reserve(std::max(need, out.capacity() * 2));
}

// True when none of the 8 bytes needs attention (all ASCII, >= 0x20, none of " \\ < > &).
// Checked word-wise (SWAR) because output windows are mostly plain ASCII; each test below is
// the classic exact "some byte is zero / less than n" bit trick.
bool plain8(const unsigned char* p) {
  constexpr std::uint64_t ones = 0x0101010101010101ull, high = 0x8080808080808080ull;
  std::uint64_t x;
  std::memcpy(&x, p, 8);
  auto has_byte = [&](unsigned char b) {
    const std::uint64_t y = x ^ (ones * b);
    return (y - ones) & ~y & high;
  };
  const std::uint64_t bad = (x & high) | ((x - ones * 0x20) & ~x & high) | has_byte('"') |
                            has_byte('\\') | has_byte('<') | has_byte('>') | has_byte('&');
  return bad == 0;
}

// Index of the first byte at or after i that is not copied verbatim as ASCII: word-wise
// while whole words are plain, then byte-wise to the exact stop.
std::size_t skip_plain(const unsigned char* p, std::size_t i, std::size_t n) {
  while (i + 8 <= n && plain8(p + i)) i += 8;
  while (i < n && k_escape.cls[p[i]] == 0) ++i;
  return i;
}

}  // namespace

void append_string(std::string& out, std::string_view s) {
  ensure_room(out, s.size() + 2);
  out += '"';
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const std::size_t n = s.size();
  std::size_t i = 0, run = 0;  // [run, i) is copied verbatim in one append
  while (i < n) {
    i = skip_plain(p, i, n);
    if (i >= n) break;
    const unsigned char cls = k_escape.cls[p[i]];
    if (cls == 1) {
      out.append(s.data() + run, i - run);
      append_escape(out, p[i]);
      run = ++i;
      continue;
    }
    const utf8::unit u = utf8::classify(p + i, n - i);
    if (!u.valid) {  // one \ufffd per byte that is not part of valid UTF-8 (incomplete too)
      out.append(s.data() + run, i - run);
      out.append("\\ufffd", 6);
      run = ++i;
      continue;
    }
    // U+2028/U+2029 (E2 80 A8/A9) break JavaScript string literals; Go escapes them.
    if (u.len == 3 && p[i] == 0xE2 && p[i + 1] == 0x80 && (p[i + 2] & 0xFE) == 0xA8) {
      out.append(s.data() + run, i - run);
      out.append(p[i + 2] == 0xA8 ? "\\u2028" : "\\u2029", 6);
      i += 3;
      run = i;
      continue;
    }
    i += static_cast<std::size_t>(u.len);
  }
  out.append(s.data() + run, n - run);
  out += '"';
}

void writer::separator() {
  if (after_key_) {  // a value right after its key: the ':' is already written
    after_key_ = false;
    return;
  }
  if (!first_.empty()) {
    if (!first_.back()) out_ += ',';
    first_.back() = false;
  }
}

writer& writer::begin_object() {
  separator();
  out_ += '{';
  first_.push_back(true);
  return *this;
}

writer& writer::end_object() {
  out_ += '}';
  if (!first_.empty()) first_.pop_back();
  return *this;
}

writer& writer::begin_array() {
  separator();
  out_ += '[';
  first_.push_back(true);
  return *this;
}

writer& writer::end_array() {
  out_ += ']';
  if (!first_.empty()) first_.pop_back();
  return *this;
}

writer& writer::key(std::string_view k) {
  separator();
  append_string(out_, k);
  out_ += ':';
  after_key_ = true;
  return *this;
}

writer& writer::value(std::string_view s) {
  separator();
  append_string(out_, s);
  return *this;
}

writer& writer::value(std::int64_t n) {
  separator();
  char buf[24];
  const auto r = std::to_chars(buf, buf + sizeof buf, n);
  out_.append(buf, static_cast<std::size_t>(r.ptr - buf));
  return *this;
}

writer& writer::value(std::uint64_t n) {
  separator();
  char buf[24];
  const auto r = std::to_chars(buf, buf + sizeof buf, n);
  out_.append(buf, static_cast<std::size_t>(r.ptr - buf));
  return *this;
}

writer& writer::decimal(double x, int decimals) {
  separator();
  if (!std::isfinite(x)) x = 0;  // JSON has no NaN or infinity
  char buf[64];
  const int n = std::snprintf(buf, sizeof buf, "%.*f", decimals, x);
  out_.append(buf, n > 0 ? static_cast<std::size_t>(n) : 0);
  return *this;
}

writer& writer::value(bool b) {
  separator();
  out_.append(b ? "true" : "false");
  return *this;
}

writer& writer::null() {
  separator();
  out_.append("null", 4);
  return *this;
}

std::string writer::finish() {
  out_ += '\n';
  first_.clear();
  after_key_ = false;
  return std::move(out_);
}

}  // namespace shellctl::io::json
