#include "bin/dify-agent/client/json_read.hpp"

#include <strings.h>

#include "bin/dify-agent/command_tree.hpp"

namespace shellctl::dify_agent {

namespace {

const char* go_type(simdjson::dom::element e) {
  switch (e.type()) {
    case simdjson::dom::element_type::ARRAY: return "array";
    case simdjson::dom::element_type::OBJECT: return "object";
    case simdjson::dom::element_type::BOOL: return "bool";
    case simdjson::dom::element_type::STRING: return "string";
    case simdjson::dom::element_type::NULL_VALUE: return "null";
    default: return "number";
  }
}

}  // namespace

json_doc::json_doc(const std::string& text, const std::string& context) {
  const auto err = parser_.parse(text).get(root_);
  if (err != simdjson::SUCCESS) {
    if (text.find_first_not_of(" \t\r\n") == std::string::npos)
      throw cli_error{context + ": unexpected end of JSON input"};
    throw cli_error{context + ": invalid JSON (" + simdjson::error_message(err) + ")"};
  }
}

std::optional<simdjson::dom::element> field(simdjson::dom::element e, const std::string& key) {
  if (!e.is_object()) return std::nullopt;
  std::optional<simdjson::dom::element> folded;
  for (auto f : simdjson::dom::object(e)) {
    if (f.key == key) {
      if (f.value.is_null()) return std::nullopt;
      return f.value;
    }
    if (!folded && f.key.size() == key.size() &&
        ::strncasecmp(f.key.data(), key.data(), key.size()) == 0)
      folded = f.value;
  }
  if (folded && folded->is_null()) return std::nullopt;
  return folded;
}

std::string string_field(simdjson::dom::element e, const std::string& key, const std::string& context) {
  auto v = field(e, key);
  if (!v) return "";
  if (!v->is_string())
    throw cli_error{context + ": json: cannot unmarshal " + go_type(*v) +
                    " into Go struct field ." + key + " of type string"};
  return std::string(std::string_view(*v));
}

std::string string_or_empty(simdjson::dom::element e, const std::string& key) {
  auto v = field(e, key);
  if (!v || !v->is_string()) return "";
  return std::string(std::string_view(*v));
}

}  // namespace shellctl::dify_agent
