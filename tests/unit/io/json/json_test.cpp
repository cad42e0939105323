// io/json: request decoding (Go json.Decoder + Unmarshal rules) and response encoding (Go
// encoding/json escaping), docs/api.md "Conventions".
#include <doctest/doctest.h>

#include <string>

#include "io/json/json.hpp"

using shellctl::io::json::append_string;
using shellctl::io::json::object;
using shellctl::io::json::type_error;
using shellctl::io::json::writer;

namespace {

std::string enc(std::string_view s) {
  std::string out;
  append_string(out, s);
  return out;
}

object must_parse(std::string_view body) {
  auto o = object::parse(body);
  REQUIRE(o.has_value());
  return std::move(*o);
}

}  // namespace

TEST_CASE("json out: Go escaping") {
  CHECK(enc("") == R"("")");
  CHECK(enc("plain text 123") == R"("plain text 123")");
  CHECK(enc("a\"b\\c") == R"("a\"b\\c")");
  CHECK(enc("\n\r\t") == R"("\n\r\t")");
  CHECK(enc("\b\f") == R"("\b\f")");  // Go >= 1.22
  CHECK(enc(std::string("\x00\x01\x1f\x7f", 4)) == "\"\\u0000\\u0001\\u001f\x7f\"");
  CHECK(enc("\x1b[0m") == R"("\u001b[0m")");
  CHECK(enc("<a href='x'>&</a>") == R"("\u003ca href='x'\u003e\u0026\u003c/a\u003e")");
  CHECK(enc("x\u2028y\u2029z") == R"("x\u2028y\u2029z")");
  CHECK(enc("é世😀") == "\"é世😀\"");       // valid UTF-8 is written raw
  CHECK(enc("/") == R"("/")");                 // Go does not escape '/'
}

TEST_CASE("json out: invalid UTF-8 becomes one \\ufffd per bad byte") {
  CHECK(enc("\xff") == R"("\ufffd")");
  CHECK(enc("a\xc3") == R"("a\ufffd")");                  // truncated 2-byte char
  CHECK(enc("\xe4\xb8") == R"("\ufffd\ufffd")");          // truncated 3-byte char
  CHECK(enc("\xc0\xaf") == R"("\ufffd\ufffd")");          // overlong '/'
  CHECK(enc("\xed\xa0\x80") == R"("\ufffd\ufffd\ufffd")");  // UTF-16 surrogate
  CHECK(enc("\xf4\x90\x80\x80") == R"("\ufffd\ufffd\ufffd\ufffd")");  // > U+10FFFF
  CHECK(enc("\x80世") == "\"\\ufffd世\"");
}

TEST_CASE("json writer: structure and finish") {
  writer w;
  w.begin_object()
      .key("job_id").value("j1")
      .key("exit_code").null()
      .key("n").value(-5)
      .key("u").value(std::uint64_t{18446744073709551615ull})
      .key("done").value(true)
      .key("list").begin_array().value("a").begin_object().end_object().value(false).end_array()
      .key("empty").begin_array().end_array()
      .key("o").begin_object().key("k").value(std::int64_t{-9223372036854775807LL - 1}).end_object()
      .end_object();
  CHECK(w.finish() ==
        "{\"job_id\":\"j1\",\"exit_code\":null,\"n\":-5,\"u\":18446744073709551615,\"done\":true,"
        "\"list\":[\"a\",{},false],\"empty\":[],\"o\":{\"k\":-9223372036854775808}}\n");

  writer e;
  e.begin_object().key("error").begin_object().key("code").value("x").key("message")
      .value("<\xff>").end_object().end_object();
  CHECK(e.finish() == "{\"error\":{\"code\":\"x\",\"message\":\"\\u003c\\ufffd\\u003e\"}}\n");
}

TEST_CASE("json writer: large output window") {
  std::string big;
  for (int i = 0; i < 100000; ++i) big += "line ✓ <ok>\n";
  writer w;
  w.begin_object().key("output").value(big).end_object();
  const std::string out = w.finish();
  CHECK(out.size() > big.size());
  CHECK(out.rfind("{\"output\":\"line ✓ \\u003cok\\u003e\\nline ", 0) == 0);
  CHECK(out.back() == '\n');
}

TEST_CASE("json in: body shapes") {
  CHECK_FALSE(object::parse(""));
  CHECK_FALSE(object::parse("   \n\t "));
  CHECK_FALSE(object::parse("{"));
  CHECK_FALSE(object::parse("{\"a\":1"));
  CHECK_FALSE(object::parse("[]"));
  CHECK_FALSE(object::parse("[{\"a\":1}]"));
  CHECK_FALSE(object::parse("\"str\""));
  CHECK_FALSE(object::parse("123"));
  CHECK_FALSE(object::parse("true"));
  CHECK_FALSE(object::parse("nul"));
  CHECK_FALSE(object::parse("{\"a\":}"));
  CHECK_FALSE(object::parse("{'a':1}"));
  CHECK_FALSE(object::parse("{\"a\":1,}"));
  CHECK_FALSE(object::parse("\xef\xbb\xbf{}"));  // Go rejects a BOM too

  auto n = must_parse("null");
  CHECK_FALSE(n.get_string("script"));
  CHECK_FALSE(n.get_int("offset"));
  CHECK_FALSE(n.get_object("terminal"));
  CHECK(object::parse("  null  "));

  auto e = must_parse("{}");
  CHECK_FALSE(e.get_string("script"));
  CHECK(object::parse(" \r\n{ } "));
}

TEST_CASE("json in: only the first value is read") {
  auto o = must_parse("{\"script\":\"ls\"} garbage");
  CHECK(o.get_string("script") == "ls");
  CHECK(must_parse("{\"a\":\"}\"}{\"a\":2}").get_string("a") == "}");
  CHECK(must_parse("{\"a\":\"\\\"}\"}]]]").get_string("a") == "\"}");
  CHECK(must_parse("{\"a\":{\"b\":[1,{}]}}xyz").get_object("a"));
  CHECK(object::parse("nullgarbage"));
  CHECK(object::parse("{}\xff\xfe"));  // bytes after the value are never looked at
  CHECK_FALSE(object::parse("{\"a\":[1}]"));
}

TEST_CASE("json in: strings and escapes") {
  auto o = must_parse(R"({"s":"a\"b\\c\/d\n\t\u00e9\u4e16\ud83d\ude00\u003c"})");
  CHECK(o.get_string("s") == "a\"b\\c/d\n\té世😀<");
  auto nul = must_parse(R"({"s":"x\u0000y"})");
  CHECK(nul.get_string("s") == std::string("x\0y", 3));
  // Go turns unpaired surrogates into U+FFFD instead of failing.
  CHECK(must_parse(R"({"s":"\ud800"})").get_string("s") == "\xEF\xBF\xBD");
  CHECK(must_parse(R"({"s":"\udc00x"})").get_string("s") == "\xEF\xBF\xBDx");
  CHECK(must_parse(R"({"s":"\ud800\u0041"})").get_string("s") == "\xEF\xBF\xBD" "A");
  // Go also coerces raw invalid UTF-8 inside strings to U+FFFD (one per byte).
  CHECK(must_parse("{\"s\":\"a\xff\xe4\xb8z\"}").get_string("s") ==
        "a\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBDz");
  // ...but not outside strings, and not raw control characters inside them.
  CHECK_FALSE(object::parse("{\"s\":\"a\"\xff}"));
  CHECK_FALSE(object::parse("{\"s\":\"a\nb\"}"));
  CHECK_FALSE(object::parse(R"({"s":"\x41"})"));
}

TEST_CASE("json in: wrong types") {
  auto o = must_parse(
      R"({"s":1,"i":"1","n":"1.5","b":1,"m":{"A":1},"arr":["a",2],"obj":[],"ok":"x"})");
  CHECK_THROWS_AS(o.get_string("s"), type_error);
  CHECK_THROWS_AS(o.get_int("i"), type_error);
  CHECK_THROWS_AS(o.get_number("n"), type_error);
  CHECK_THROWS_AS(o.get_bool("b"), type_error);
  CHECK_THROWS_AS(o.get_string_map("m"), type_error);
  CHECK_THROWS_AS(o.get_string_array("arr"), type_error);
  CHECK_THROWS_AS(o.get_object("obj"), type_error);
  CHECK_THROWS_AS(o.get_string_map("ok"), type_error);
  CHECK_THROWS_AS(o.get_bool("ok"), type_error);
  CHECK(o.get_string("ok") == "x");
  CHECK_FALSE(o.get_string("missing"));
}

TEST_CASE("json in: integers and numbers") {
  auto o = must_parse(
      R"({"i":42,"neg":-7,"zero":-0,"min":-9223372036854775808,"max":9223372036854775807,
          "frac":1.5,"one":1.0,"exp":1e3,"u63":9223372036854775808,
          "u64max":18446744073709551615,"big":18446744073709551617,
          "bigneg":-9223372036854775809,"tiny":1e-400,"d":2.5e-3})");
  CHECK(o.get_int("i") == 42);
  CHECK(o.get_int("neg") == -7);
  CHECK(o.get_int("zero") == 0);
  CHECK(o.get_int("min") == INT64_MIN);
  CHECK(o.get_int("max") == INT64_MAX);
  for (const char* k : {"frac", "one", "exp", "u63", "u64max", "big", "bigneg", "tiny", "d"})
    CHECK_THROWS_AS(o.get_int(k), type_error);
  CHECK(o.get_number("i") == 42.0);
  CHECK(o.get_number("frac") == 1.5);
  CHECK(o.get_number("exp") == 1000.0);
  CHECK(o.get_number("min") == -9223372036854775808.0);
  CHECK(o.get_number("u63") == 9223372036854775808.0);
  CHECK(o.get_number("u64max") == 18446744073709551615.0);
  CHECK(o.get_number("big") == 18446744073709551617.0);
  CHECK(o.get_number("bigneg") == -9223372036854775809.0);
  CHECK(o.get_number("tiny") == 0.0);
  CHECK(o.get_number("d") == 0.0025);
}

TEST_CASE("json in: numbers beyond float64") {
  // Go: an error for a typed field, ignored in an unknown one.
  auto o = must_parse(R"({"t":1e400,"u":-1e400,"script":"x","unknown":[1e999,2]})");
  CHECK_THROWS_AS(o.get_number("t"), type_error);
  CHECK_THROWS_AS(o.get_number("u"), type_error);
  CHECK_THROWS_AS(o.get_int("t"), type_error);
  CHECK_THROWS_AS(o.get_string("t"), type_error);
  CHECK(o.get_string("script") == "x");
  // With an overflow present, a genuine 2^64-1 still reads as a number.
  auto m = must_parse(R"({"a":18446744073709551615,"b":1e400})");
  CHECK(m.get_number("a") == 18446744073709551615.0);
  CHECK_THROWS_AS(m.get_number("b"), type_error);
  std::string huge = "{\"t\":1" + std::string(400, '0') + "}";
  CHECK_THROWS_AS(must_parse(huge).get_number("t"), type_error);
  CHECK_FALSE(object::parse(R"({"t":01})"));
  CHECK_FALSE(object::parse(R"({"t":1.})"));
  CHECK_FALSE(object::parse(R"({"t":-})"));
  CHECK_FALSE(object::parse(R"({"t":+1})"));
  CHECK_FALSE(object::parse(R"({"t":1e400x})"));
}

TEST_CASE("json in: case-insensitive keys, duplicates, null") {
  auto o = must_parse(R"({"Script":"a","OUTPUT_LIMIT":5,"Timeout":null})");
  CHECK(o.get_string("script") == "a");
  CHECK(o.get_int("output_limit") == 5);
  CHECK_FALSE(o.get_number("timeout"));
  // Go applies each matching key in document order: the last non-null one wins, whatever
  // its case, and null leaves the field alone.
  CHECK(must_parse(R"({"script":"a","script":"b"})").get_string("script") == "b");
  CHECK(must_parse(R"({"script":"a","SCRIPT":"b"})").get_string("script") == "b");
  CHECK(must_parse(R"({"SCRIPT":"b","script":"a"})").get_string("script") == "a");
  CHECK(must_parse(R"({"script":"a","Script":null})").get_string("script") == "a");
  CHECK_FALSE(must_parse(R"({"script":null})").get_string("script"));
  // A wrong type under any matching key fails the decode, as in Go.
  CHECK_THROWS_AS(must_parse(R"({"offset":"x","offset":3})").get_int("offset"), type_error);
  CHECK_THROWS_AS(must_parse(R"({"offset":3,"Offset":1.5})").get_int("offset"), type_error);
  // Only ASCII letters fold; other bytes must match exactly.
  CHECK_FALSE(must_parse(R"({"scrip_t":"a","script ":"b"})").get_string("script"));
}

TEST_CASE("json in: env maps and string arrays") {
  auto o = must_parse(
      R"({"env":{"A":"1","B":"x\u0000y","a":"lower","A":"again","E":"","N":null},
          "args":["x",null,"z"]})");
  auto env = o.get_string_map("ENV");
  REQUIRE(env);
  REQUIRE(env->size() == 5);
  CHECK((*env)[0] == std::pair<std::string, std::string>{"A", "again"});  // last wins, first slot
  CHECK((*env)[1].second == std::string("x\0y", 3));                      // NUL preserved
  CHECK((*env)[2] == std::pair<std::string, std::string>{"a", "lower"});  // map keys are exact
  CHECK((*env)[3] == std::pair<std::string, std::string>{"E", ""});
  CHECK((*env)[4] == std::pair<std::string, std::string>{"N", ""});  // Go: null -> ""
  auto args = o.get_string_array("args");
  REQUIRE(args);
  CHECK(*args == std::vector<std::string>{"x", "", "z"});

  CHECK_THROWS_AS(must_parse(R"({"env":{"A":1}})").get_string_map("env"), type_error);
  CHECK_THROWS_AS(must_parse(R"({"env":{"A":true}})").get_string_map("env"), type_error);
  CHECK_THROWS_AS(must_parse(R"({"env":{"A":{}}})").get_string_map("env"), type_error);
  CHECK_THROWS_AS(must_parse(R"({"env":["A=1"]})").get_string_map("env"), type_error);
  CHECK_FALSE(must_parse(R"({"env":null})").get_string_map("env"));
  CHECK(must_parse(R"({"env":{}})").get_string_map("env")->empty());
}

TEST_CASE("json in: nested objects") {
  auto o = must_parse(R"({"terminal":{"Cols":120,"rows":40,"x":{"deep":true}},"other":1})");
  auto t = o.get_object("terminal");
  REQUIRE(t);
  CHECK(t->get_int("cols") == 120);
  CHECK(t->get_int("rows") == 40);
  CHECK(t->get_object("x")->get_bool("deep") == true);
  CHECK_THROWS_AS(t->get_int("x"), type_error);
  CHECK_FALSE(must_parse(R"({"terminal":null})").get_object("terminal"));
  // A nested object outlives the object it came from.
  std::optional<object> inner;
  {
    auto outer = must_parse(R"({"terminal":{"cols":7}})");
    inner = outer.get_object("terminal");
  }
  CHECK(inner->get_int("cols") == 7);
  // Moving keeps the document alive too.
  object moved = must_parse(R"({"a":"b"})");
  object target = std::move(moved);
  CHECK(target.get_string("a") == "b");
}

TEST_CASE("json: round trip of decoded strings") {
  auto o = must_parse("{\"s\":\"<\\u2028>\\u0001\xff\"}");
  // The decoder already turned the 0xFF into a (valid) U+FFFD, which is written raw.
  CHECK(enc(*o.get_string("s")) == "\"\\u003c\\u2028\\u003e\\u0001\xEF\xBF\xBD\"");
}
