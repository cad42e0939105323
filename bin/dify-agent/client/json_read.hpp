#pragma once
// Reading the Agent Stub's JSON answers as the original's encoding/json did where a user can
// tell: a whole document, fields looked up by name (Go matches them case-insensitively), a
// string field of another type is a decoding error.
#include <simdjson.h>

#include <optional>
#include <string>

namespace shellctl::dify_agent {

class json_doc {
 public:
  // Throws cli_error("<context>: <reason>") when `text` is not one JSON value.
  json_doc(const std::string& text, const std::string& context);
  simdjson::dom::element root() const { return root_; }

 private:
  simdjson::dom::parser parser_;
  simdjson::dom::element root_;
};

// The field `key` of an object (exact name first, then case-insensitive); nullopt when
// absent, null, or `e` is not an object.
std::optional<simdjson::dom::element> field(simdjson::dom::element e, const std::string& key);

// A string field: "" when absent or null; throws cli_error("<context>: json: cannot unmarshal
// <type> into Go value of type string") on another type.
std::string string_field(simdjson::dom::element e, const std::string& key, const std::string& context);

// A string field as Go's `x, _ := m[key].(string)` reads it: "" for anything not a string.
std::string string_or_empty(simdjson::dom::element e, const std::string& key);

}  // namespace shellctl::dify_agent
