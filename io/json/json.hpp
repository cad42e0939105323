#pragma once
// JSON in and out, matching the Go original's encoder/decoder where clients can tell.
//
// In  (request bodies, docs/api.md "Conventions"): only the first JSON value is read
//     (trailing bytes ignored); the value must be an object or null; unknown keys are
//     ignored; keys match case-insensitively (an exact match wins); null means absent; a
//     wrong type is a decode error (400 invalid_request "Invalid JSON body").
// Out (responses): Go escaping: <, >, & as \u003c \u003e \u0026, U+2028/U+2029 escaped,
//     invalid UTF-8 written as \ufffd, so the output is always valid UTF-8.
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace shellctl::io::json {

// A field has the wrong JSON type (or an integer field got a fraction / out-of-range).
struct type_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// One decoded request body (an object, or `null` which behaves like `{}`).
class object {
 public:
  // nullopt: empty body, invalid JSON, or a first value that is not an object/null.
  static std::optional<object> parse(std::string_view raw);

  object(object&&) noexcept;
  object& operator=(object&&) noexcept;
  ~object();

  // Each getter: nullopt when the key is absent or null; throws type_error on a wrong type.
  std::optional<std::string> get_string(std::string_view key) const;
  std::optional<std::int64_t> get_int(std::string_view key) const;  // whole numbers only
  std::optional<double> get_number(std::string_view key) const;
  std::optional<bool> get_bool(std::string_view key) const;
  // An object of strings, in document order (duplicate keys: last wins, Go-style).
  std::optional<std::vector<std::pair<std::string, std::string>>> get_string_map(
      std::string_view key) const;
  std::optional<std::vector<std::string>> get_string_array(std::string_view key) const;
  std::optional<object> get_object(std::string_view key) const;
  // An array whose every element is an object (a null element is a wrong type).
  std::optional<std::vector<object>> get_object_array(std::string_view key) const;

  // For strict bodies (a scope's create body, where an unknown key is refused): every key
  // exactly as sent, in document order, duplicates included; empty for `null`.
  std::vector<std::string> keys() const;
  // Whether `key` (exactly) is present with the JSON value null.
  bool is_null(std::string_view key) const;

  struct impl;

 private:
  explicit object(std::unique_ptr<impl> p);
  std::unique_ptr<impl> impl_;
};

// Appends `s` as a JSON string literal (with quotes) using Go's escaping rules.
void append_string(std::string& out, std::string_view s);

// Minimal streaming writer for response bodies: keys are written in call order.
class writer {
 public:
  writer& begin_object();
  writer& end_object();
  writer& begin_array();
  writer& end_array();
  writer& key(std::string_view k);
  writer& value(std::string_view s);
  writer& value(const char* s) { return value(std::string_view{s}); }
  writer& value(const std::string& s) { return value(std::string_view{s}); }
  writer& value(std::int64_t n);
  writer& value(int n) { return value(static_cast<std::int64_t>(n)); }
  writer& value(std::uint64_t n);
  writer& value(bool b);
  // A finite number with `decimals` digits after the point (3: milliseconds of seconds).
  writer& decimal(double x, int decimals = 3);
  writer& null();
  // Finishes the document: Go's encoder appends one "\n".
  std::string finish();

 private:
  void separator();
  std::string out_;
  std::vector<bool> first_;  // per open container: no element written yet
  bool after_key_ = false;
};

}  // namespace shellctl::io::json
