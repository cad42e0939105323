// libFuzzer: arbitrary bytes -> object::parse -> every getter -> writer -> the output must be
// valid UTF-8 and every decoded string must survive the encoder. Also runs the writer on the
// raw input, which is the path that sees invalid UTF-8 (decoded strings never contain any).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "io/json/json.hpp"
#include "io/text/utf8_unit.hpp"

namespace json = shellctl::io::json;
namespace utf8 = shellctl::io::text::utf8;

namespace {

bool valid_utf8(std::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  for (std::size_t i = 0; i < s.size();) {
    const utf8::unit u = utf8::classify(p + i, s.size() - i);
    if (!u.valid) return false;
    i += static_cast<std::size_t>(u.len);
  }
  return true;
}

void check(bool ok) {
  if (!ok) std::abort();
}

// Strings in the output must be valid UTF-8 without raw control characters.
void check_output(const std::string& out) {
  check(valid_utf8(out));
  for (unsigned char c : out) check(c >= 0x20 || c == '\n');
}

void exercise(const json::object& o, json::writer& w, int depth) {
  static const char* const keys[] = {"script",   "offset", "timeout", "env", "args",
                                     "terminal", "a",      "",        "A",   "output_limit"};
  for (const char* k : keys) {
    w.key(k);
    w.begin_array();
    try {
      if (auto s = o.get_string(k)) w.value(*s);
    } catch (const json::type_error&) {
    }
    try {
      if (auto i = o.get_int(k)) w.value(*i);
    } catch (const json::type_error&) {
    }
    try {
      if (auto d = o.get_number(k)) w.value(static_cast<std::int64_t>(*d == *d ? 1 : 0));
    } catch (const json::type_error&) {
    }
    try {
      if (auto b = o.get_bool(k)) w.value(*b);
    } catch (const json::type_error&) {
    }
    try {
      if (auto m = o.get_string_map(k)) {
        w.begin_object();
        for (const auto& [mk, mv] : *m) w.key(mk).value(mv);
        w.end_object();
      }
    } catch (const json::type_error&) {
    }
    try {
      if (auto a = o.get_string_array(k)) {
        w.begin_array();
        for (const auto& s : *a) w.value(s);
        w.end_array();
      }
    } catch (const json::type_error&) {
    }
    try {
      if (auto sub = o.get_object(k); sub && depth < 3) {
        w.begin_object();
        exercise(*sub, w, depth + 1);
        w.end_object();
      }
    } catch (const json::type_error&) {
    }
    w.end_array();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view raw(reinterpret_cast<const char*>(data), size);

  std::string direct;
  json::append_string(direct, raw);
  check_output(direct);

  auto o = json::object::parse(raw);
  if (!o) return 0;
  json::writer w;
  w.begin_object();
  exercise(*o, w, 0);
  w.end_object();
  const std::string out = w.finish();
  check_output(out);
  // The encoder's output is itself a JSON object that must decode again.
  check(json::object::parse(out).has_value());
  return 0;
}
