// knowledge … (docs/dify-agent.md): bounded, read-only Agentic Knowledge commands. One POST
// per command with a fresh or given command id, answered by complete JSON or an error.
#include <cctype>
#include <fstream>
#include <map>
#include <random>

#include "bin/dify-agent/cli.hpp"
#include "bin/dify-agent/environment.hpp"
#include "bin/dify-agent/client/json_read.hpp"
#include "bin/dify-agent/local/local_paths.hpp"
#include "bin/dify-agent/client/stub_client.hpp"

namespace shellctl::dify_agent {

namespace {

constexpr std::size_t max_payload = 24 * 1024;
constexpr std::size_t max_response = 64 * 1024;

bool is_uuid(const std::string& s) {
  if (s.size() != 36) return false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (i == 8 || i == 13 || i == 18 || i == 23) {
      if (s[i] != '-') return false;
    } else if (!std::isxdigit(static_cast<unsigned char>(s[i]))) {
      return false;
    }
  }
  return true;
}

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// An upload UUID, or a canonical dify-file-ref whose record_id is one; lower-cased.
std::string image_id(const std::string& value) {
  if (value.size() > 4096) throw cli_error{"knowledge query image reference exceeds the input limit"};
  std::string v = value;
  const std::string prefix = "dify-file-ref:";
  if (v.rfind(prefix, 0) == 0) {
    std::string decoded;
    if (!decode_base64_url(v.substr(prefix.size()), decoded))
      throw cli_error{"invalid knowledge query image reference"};
    simdjson::dom::parser p;
    simdjson::dom::element doc;
    if (p.parse(decoded).get(doc) != simdjson::SUCCESS || !(doc.is_object() || doc.is_null()))
      throw cli_error{"invalid knowledge query image reference"};
    auto id = field(doc, "record_id");
    if (id && !id->is_string()) throw cli_error{"invalid knowledge query image reference"};
    v = id ? std::string(std::string_view(*id)) : "";
  }
  if (!is_uuid(v))
    throw cli_error{"knowledge query images require a local_file upload UUID or canonical reference, not a URL"};
  return lower(v);
}

std::string new_command_id() {
  unsigned char id[16];
  std::ifstream urandom("/dev/urandom", std::ios::binary);
  if (!urandom.read(reinterpret_cast<char*>(id), sizeof id)) throw cli_error{"generate command id: no randomness"};
  id[6] = static_cast<unsigned char>((id[6] & 0x0f) | 0x40);
  id[8] = static_cast<unsigned char>((id[8] & 0x3f) | 0x80);
  char out[40];
  std::snprintf(out, sizeof out,
                "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", id[0], id[1],
                id[2], id[3], id[4], id[5], id[6], id[7], id[8], id[9], id[10], id[11], id[12], id[13],
                id[14], id[15]);
  return out;
}

// encoding/json's Compact: whitespace outside strings removed, everything else kept.
std::string compact(const std::string& s) {
  std::string out;
  bool in_string = false, escaped = false;
  for (char c : s) {
    if (in_string) {
      out += c;
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') continue;
    if (c == '"') in_string = true;
    out += c;
  }
  return out;
}

struct sub_spec {
  const char* name;
  const char* short_text;
  std::vector<const char*> flags;  // in the help's order does not matter: help sorts
};

const std::map<std::string, std::string>& payload_keys() {
  static const std::map<std::string, std::string> k = {
      {"space", "space"},       {"query", "query"},       {"path", "path"},
      {"cursor", "cursor"},     {"old-path", "old_path"}, {"new-path", "new_path"},
      {"node-id", "node_id"},   {"receipt", "receipt_id"}, {"item-id", "item_id"}};
  return k;
}

flag_spec knowledge_flag(const std::string& n) {
  if (n == "path") return {n, 0, flag_kind::string, "Canonical read-only /knowledge path.", "/knowledge", false};
  if (n == "limit")
    return {n, 0, flag_kind::integer,
            "Maximum returned items/segments (1–50); retrieval depth still belongs to the space profile.",
            "10", false};
  if (n == "depth") return {n, 0, flag_kind::integer, "Maximum tree depth (1–4).", "2", false};
  if (n == "image-file-id")
    return {n, 0, flag_kind::string_array,
            "Authorized upload UUID or local_file dify-file-ref from inputs; repeat at most four times, never a URL.",
            "", false};
  return {n, 0, flag_kind::string, "Knowledge command " + n + ".", "", false};
}

void run_knowledge(const std::string& sub, const invocation& in) {
  const environment env = read_environment();
  std::string id = in.flags.text("command-id");
  if (id.empty()) id = new_command_id();
  // The original marshals a map: keys in sorted order.
  std::map<std::string, std::string> payload;  // key -> encoded JSON value
  payload["version"] = "1";
  payload["command"] = json_string(sub);
  payload["command_id"] = json_string(id);
  for (const auto& [flag, key] : payload_keys()) {
    const std::string& v = in.flags.text(flag);
    if (!v.empty()) payload[key] = json_string(v);
  }
  for (const char* n : {"limit", "depth"})
    if (in.flags.has(n)) payload[n] = std::to_string(in.flags.integer(n));
  const auto& images = in.flags.list("image-file-id");
  if (!images.empty()) {
    if (images.size() > 4) throw cli_error{"knowledge search accepts at most four query images"};
    std::string arr = "[";
    for (std::size_t i = 0; i < images.size(); ++i) arr += (i ? "," : "") + json_string(image_id(images[i]));
    payload["image_file_ids"] = arr + "]";
  }
  std::string body = "{";
  for (const auto& [k, v] : payload) body += (body.size() > 1 ? "," : "") + json_string(k) + ":" + v;
  body += "}";
  if (body.size() > max_payload) throw cli_error{"knowledge command exceeds the input limit"};
  const stub_client c(env);
  stub_client::reply r;
  try {
    r = c.call("POST", "/knowledge/commands", body, 65000, max_response);
  } catch (const cli_error& e) {
    if (e.message.find("response too large") != std::string::npos)
      throw cli_error{"knowledge response exceeds the output limit or is incomplete"};
    throw cli_error{"knowledge command transport unavailable or cancelled"};
  }
  if (r.status >= 400) throw cli_error{structured_error(r.status, r.body)};
  const std::string incompatible =
      "incompatible knowledge CLI protocol; deploy matching Agent Stub and sandbox versions";
  simdjson::dom::parser p;
  simdjson::dom::element doc;
  if (p.parse(r.body).get(doc) != simdjson::SUCCESS || !doc.is_object()) throw cli_error{incompatible};
  auto version = field(doc, "version");
  int64_t v = 0;
  if (!version || version->get(v) != simdjson::SUCCESS || v != 1) throw cli_error{incompatible};
  auto str = [&](const char* k) {
    auto f = field(doc, k);
    if (f && !f->is_string()) throw cli_error{incompatible};
    return f ? std::string(std::string_view(*f)) : std::string();
  };
  if (str("command_id") != id || str("command") != sub || str("status") != "ok") throw cli_error{incompatible};
  print_line(compact(r.body));
}

}  // namespace

std::unique_ptr<command> make_knowledge_command() {
  auto k = std::make_unique<command>(
      "knowledge", "Autonomously inspect read-only Agentic Knowledge evidence. All results are JSON.");
  k->flag({"protocol-version", 0, flag_kind::boolean, "Print the locally supported knowledge protocol version.", "", false});
  k->run([](const invocation& in) {
    if (in.flags.boolean("protocol-version")) {
      print_line("1");
      return;
    }
    const std::string h = in.cmd.help();
    std::fwrite(h.data(), 1, h.size(), stdout);
  });
  const std::vector<sub_spec> subs = {
      {"spaces", "List only spaces bound to this Agent and their current availability.", {}},
      {"capabilities", "Inspect this space's current capabilities (no model credentials).", {"space"}},
      {"search", "Retrieve evidence using the space profile; no nested planner or generated answer.",
       {"space", "query", "image-file-id", "limit"}},
      {"ls", "List a bounded page of /knowledge entries.", {"space", "path", "cursor", "limit"}},
      {"tree", "Browse a bounded /knowledge subtree.", {"space", "path", "cursor", "limit", "depth"}},
      {"find", "Find /knowledge entries whose names contain the query.", {"space", "path", "query", "cursor", "limit"}},
      {"grep", "Search text inside /knowledge with a bounded server timeout.", {"space", "path", "query", "cursor", "limit"}},
      {"cat", "Read a page of text. Raw manifests and binary artifacts are not exposed.", {"space", "path", "cursor", "limit"}},
      {"stat", "Inspect safe metadata for one /knowledge path.", {"space", "path"}},
      {"diff", "Compare two readable paths without an LLM semantic-diff call.", {"space", "old-path", "new-path"}},
      {"open", "Open a node ID or validate/reopen a trusted evidence receipt.", {"space", "node-id", "receipt"}},
      {"images", "List image items and captions from a receipt's immutable document artifact.",
       {"space", "receipt", "cursor", "limit"}},
      {"image", "Deliver one bounded image to a vision-capable Agent via the trusted runtime channel.",
       {"space", "receipt", "item-id"}},
  };
  for (const auto& s : subs) {
    auto& c = k->add(std::make_unique<command>(s.name, s.short_text));
    c.args(arg_rule::none);
    for (const char* f : s.flags) c.flag(knowledge_flag(f));
    c.flag({"command-id", 0, flag_kind::string,
            "Logical UUID for this command; generated by default. Reusing it will not repeat retrieval.", "", false});
    c.flag({"json", 0, flag_kind::boolean, "Emit complete JSON (always enabled).", "true", false});
    const std::string name = s.name;
    c.run([name](const invocation& in) { run_knowledge(name, in); });
  }
  return k;
}

}  // namespace shellctl::dify_agent
