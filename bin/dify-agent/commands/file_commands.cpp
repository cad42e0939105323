// connect and file upload | public-url | download (docs/dify-agent.md).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "bin/dify-agent/cli.hpp"
#include "bin/dify-agent/environment.hpp"
#include "bin/dify-agent/client/json_read.hpp"
#include "bin/dify-agent/local/local_paths.hpp"
#include "bin/dify-agent/local/mime_types.hpp"
#include "bin/dify-agent/client/stub_client.hpp"
#include "io/json/json.hpp"

namespace shellctl::dify_agent {

namespace {

std::string shell_quote_argument(const std::string& v) {
  std::string out = "'";
  for (char c : v) {
    if (c == '\'')
      out += "'\"'\"'";
    else
      out += c;
  }
  return out + "'";
}

// `dify-file-ref:` + padded URL-safe base64 of a JSON object with a non-empty record_id.
bool canonical_reference(const std::string& ref) {
  const std::string prefix = "dify-file-ref:";
  if (ref.rfind(prefix, 0) != 0 || ref.size() == prefix.size()) return false;
  std::string decoded;
  if (!decode_base64_url(ref.substr(prefix.size()), decoded)) return false;
  simdjson::dom::parser p;
  simdjson::dom::element doc;
  if (p.parse(decoded).get(doc) != simdjson::SUCCESS || !doc.is_object()) return false;
  auto id = field(doc, "record_id");
  return id && id->is_string() && !std::string_view(*id).empty();
}

// The original marshals map[string]any: keys in sorted order.
std::string download_request_body(const std::string& method, const std::string* reference,
                                  const std::string* url, bool for_frontend) {
  std::string file = "{";
  if (reference) file += "\"reference\":" + json_string(*reference) + ",";
  file += "\"transfer_method\":" + json_string(method);
  if (url) file += ",\"url\":" + json_string(*url);
  file += "}";
  return "{\"file\":" + file + ",\"for_frontend\":" + (for_frontend ? "true" : "false") + "}";
}

struct download_answer {
  std::string filename, download_url;
};

download_answer request_download(const stub_client& c, const std::string& body) {
  const std::string text = c.ok("POST", "/files/download-request", body, "file download request");
  json_doc doc(text, "parse download response");
  return {string_field(doc.root(), "filename", "parse download response"),
          string_field(doc.root(), "download_url", "parse download response")};
}

std::string upload_output(const std::string& ref, const std::string* public_url) {
  std::string out = "{\"transfer_method\":\"tool_file\",\"reference\":" + json_string(ref);
  if (public_url && !public_url->empty()) out += ",\"public_download_url\":" + json_string(*public_url);
  return out + "}";
}

void file_upload(const std::string& path, bool no_download_link) {
  const environment env = read_environment();
  const std::string abs = absolute_path(path);
  struct stat st {};
  if (::stat(abs.c_str(), &st) != 0 || S_ISDIR(st.st_mode))
    throw cli_error{"local file not found: " + abs};
  const std::string filename = base_name(abs);
  const std::string mimetype = guess_mime_type(filename);
  stub_client c(env);
  std::string upload_url;
  try {
    upload_url = c.upload_url(filename, mimetype);
  } catch (const cli_error& e) {
    throw cli_error{"request file upload URL: " + e.message};
  }
  std::string result;
  try {
    result = c.upload_file(upload_url, abs, filename, mimetype);
  } catch (const cli_error& e) {
    throw cli_error{"upload file data: " + e.message};
  }
  json_doc doc(result, "parse upload result");
  const std::string reference = string_or_empty(doc.root(), "reference");
  if (reference.empty()) throw cli_error{"signed file upload response is missing reference"};
  if (!canonical_reference(reference)) throw cli_error{"signed file upload response has invalid reference"};
  if (no_download_link) {
    print_line(upload_output(reference, nullptr));
    return;
  }
  download_answer d;
  try {
    d = request_download(c, download_request_body("tool_file", &reference, nullptr, true));
  } catch (const cli_error& e) {
    print_line(upload_output(reference, nullptr));
    throw cli_error{"request public download URL: " + e.message +
                    "; retry without uploading again: dify-agent file public-url " +
                    shell_quote_argument(reference)};
  }
  if (d.download_url.empty()) {
    print_line(upload_output(reference, nullptr));
    throw cli_error{"public file download response is missing download_url; retry without "
                    "uploading again: dify-agent file public-url " + shell_quote_argument(reference)};
  }
  print_line(upload_output(reference, &d.download_url));
}

void file_public_url(const std::string& reference) {
  const environment env = read_environment();
  if (reference.empty()) throw cli_error{"file reference must not be empty"};
  stub_client c(env);
  download_answer d;
  try {
    d = request_download(c, download_request_body("tool_file", &reference, nullptr, true));
  } catch (const cli_error& e) {
    throw cli_error{"request public download URL: " + e.message};
  }
  if (d.download_url.empty()) throw cli_error{"public file download response is missing download_url"};
  print_line(upload_output(reference, &d.download_url));
}

void file_download(const std::string& method, const std::string& ref_or_url, const std::string& to) {
  const environment env = read_environment();
  stub_client c(env);
  const bool remote = method == "remote_url";
  download_answer d;
  try {
    d = request_download(c, download_request_body(method, remote ? nullptr : &ref_or_url,
                                                  remote ? &ref_or_url : nullptr, false));
  } catch (const cli_error& e) {
    throw cli_error{"request file download URL: " + e.message};
  }
  if (d.download_url.empty()) throw cli_error{"signed file download response is missing download_url"};
  if (d.filename.empty()) throw cli_error{"signed file download response is missing filename"};
  const std::string dir = to.empty() ? current_dir() : to;
  // The original downloads into memory and then writes; here the bytes stream into a
  // hidden file in the target directory that takes its name only once complete.
  if (!make_dirs(dir, 0755)) throw cli_error{"create target directory: mkdir " + dir + ": " + std::strerror(errno)};
  std::string name = base_name(d.filename);
  if (name.empty() || name == "." || name == ".." || name == "/") name = "downloaded";
  staged_file staged(dir, name);
  try {
    c.download(d.download_url, [&](const char* p, std::size_t n) { return staged.write(p, n); });
  } catch (const cli_error& e) {
    throw cli_error{"download file data: " + e.message};
  }
  print_line(staged.commit_unique(join_path(dir, name)));
}

}  // namespace

void run_connect(const std::vector<std::string>& argv, bool json_output) {
  const environment env = read_environment();
  stub_client c(env);
  io::json::writer w;
  w.begin_object().key("argv").begin_array();
  for (const auto& a : argv) w.value(a);
  w.end_array().key("metadata").begin_object().end_object().end_object();
  std::string body = w.finish();
  body.pop_back();  // the writer's trailing newline
  const std::string text = c.ok("POST", "/connections", body, "connect");
  json_doc doc(text, "parse connect response");
  const std::string id = string_field(doc.root(), "connection_id", "parse connect response");
  const std::string status = string_field(doc.root(), "status", "parse connect response");
  if (json_output)
    print_line("{\"connection_id\":" + json_string(id) + ",\"status\":" + json_string(status) + "}");
  else
    print_line("connected " + id);
}

std::unique_ptr<command> make_connect_command() {
  auto c = std::make_unique<command>("connect [ARGV]...",
                                     "Establish one Agent Stub connection using the current environment.");
  c->flag({"json", 0, flag_kind::boolean, "Emit the connection response as JSON.", "", false});
  c->run([](const invocation& in) { run_connect(in.args, in.flags.boolean("json")); });
  return c;
}

std::unique_ptr<command> make_file_command() {
  auto file = std::make_unique<command>("file", "Upload or download workflow files through the Agent Stub.");
  auto& up = file->add(std::make_unique<command>(
      "upload PATH", "Upload one sandbox-local file as a ToolFile output reference."));
  up.args(arg_rule::exactly, 1)
      .flag({"no-download-link", 0, flag_kind::boolean,
             "Skip creating a public download link after upload.", "", false})
      .run([](const invocation& in) { file_upload(in.args[0], in.flags.boolean("no-download-link")); });
  auto& pub = file->add(std::make_unique<command>(
      "public-url REFERENCE",
      "Create a browser-visible download URL for an existing ToolFile reference."));
  pub.args(arg_rule::exactly, 1).run([](const invocation& in) { file_public_url(in.args[0]); });
  auto& down = file->add(std::make_unique<command>(
      "download TRANSFER_METHOD REFERENCE_OR_URL",
      "Download one workflow file mapping into the local sandbox directory."));
  down.args(arg_rule::exactly, 2)
      .flag({"to", 0, flag_kind::string, "Local directory for the downloaded file.", "", false})
      .run([](const invocation& in) { file_download(in.args[0], in.args[1], in.flags.text("to")); });
  return file;
}

}  // namespace shellctl::dify_agent
