// drive list | pull | push (docs/dify-agent.md): the legacy agent drive, hidden from help
// (the newest help snapshot has no drive) but kept working for scripts that still call it.
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>

#include "bin/dify-agent/cli.hpp"
#include "bin/dify-agent/environment.hpp"
#include "bin/dify-agent/client/json_read.hpp"
#include "bin/dify-agent/local/local_paths.hpp"
#include "bin/dify-agent/local/mime_types.hpp"
#include "bin/dify-agent/client/stub_client.hpp"
#include "io/fs/files.hpp"
#include "bin/dify-agent/formats/skill_zip.hpp"

namespace shellctl::dify_agent {

namespace {

// Go's url.QueryEscape.
std::string query_escape(const std::string& s) {
  static const char hex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else if (c == ' ') {
      out += '+';
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

struct drive_item {
  std::string key, mime, hash, url;
  bool has_size = false, has_url = false;
  long long size = 0;
};

std::vector<drive_item> manifest(const stub_client& c, const std::string& prefix, bool urls) {
  const auto r = c.call("GET", std::string("/drive/manifest?include_download_url=") + (urls ? "true" : "false") +
                                   "&prefix=" + query_escape(prefix),
                        "");
  if (r.status >= 400) throw cli_error{legacy_error("drive manifest", r.status, r.body)};
  json_doc doc(r.body, "parse drive manifest");
  std::vector<drive_item> items;
  auto list = field(doc.root(), "items");
  if (!list) return items;
  if (!list->is_array()) throw cli_error{"parse drive manifest: items is not an array"};
  for (auto it : simdjson::dom::array(*list)) {
    drive_item d;
    d.key = string_field(it, "key", "parse drive manifest");
    d.mime = string_field(it, "mime_type", "parse drive manifest");
    d.hash = string_field(it, "hash", "parse drive manifest");
    if (auto s = field(it, "size")) {
      int64_t v = 0;
      if (s->get(v) == simdjson::SUCCESS) {
        d.has_size = true;
        d.size = v;
      }
    }
    if (auto u = field(it, "download_url"); u && u->is_string()) {
      d.has_url = true;
      d.url = std::string(std::string_view(*u));
    }
    items.push_back(d);
  }
  return items;
}

void drive_list(const std::vector<std::string>& args, bool json_output) {
  const stub_client c(read_environment());
  const auto items = manifest(c, args.empty() ? "" : args[0], false);
  if (json_output) {
    std::string out = "{\"items\":[";
    for (std::size_t i = 0; i < items.size(); ++i) {
      const auto& d = items[i];
      if (i) out += ",";
      out += "{\"key\":" + json_string(d.key);
      if (d.has_size) out += ",\"size\":" + std::to_string(d.size);
      out += ",\"mime_type\":" + json_string(d.mime) + ",\"hash\":" + json_string(d.hash);
      if (d.has_url) out += ",\"download_url\":" + json_string(d.url);
      out += "}";
    }
    print_line(out + "]}");
    return;
  }
  for (const auto& d : items)
    print_line((d.has_size ? std::to_string(d.size) : "-") + "\t" + (d.mime.empty() ? "-" : d.mime) + "\t" +
               (d.hash.empty() ? "-" : d.hash) + "\t" + d.key);
}

void drive_pull(std::vector<std::string> targets, const std::string& to, bool json_output) {
  const stub_client c(read_environment());
  std::string base = to;
  if (base.empty()) {
    const char* b = std::getenv("DIFY_AGENT_STUB_DRIVE_BASE");
    base = b && *b ? b : "/mnt/drive";
  }
  base = absolute_path(base);
  if (targets.empty()) targets.push_back("");
  std::vector<std::pair<std::string, std::string>> pulled;
  for (const auto& t : targets) {
    const auto items = manifest(c, t, true);
    if (items.empty()) continue;
    pulled.emplace_back(t, join_path(base, t));
    for (const auto& d : items) {
      if (!d.has_url || d.url.empty()) throw cli_error{"drive manifest item is missing download_url: " + d.key};
      const std::string dest = join_path(base, d.key);
      if (dest != base && dest.rfind(base + "/", 0) != 0)
        throw cli_error{"drive manifest item escapes the local base: " + d.key};
      if (!make_dirs(dir_name(dest), 0755))
        throw cli_error{"create directory: mkdir " + dir_name(dest) + ": " + go_errno_text(errno)};
      staged_file f(dir_name(dest), base_name(dest));
      c.download(d.url, [&](const char* p, std::size_t n) { return f.write(p, n); });
      f.commit_replace(dest);
    }
  }
  if (json_output) {
    std::string out = "{\"items\":[";
    for (std::size_t i = 0; i < pulled.size(); ++i)
      out += (i ? "," : "") + std::string("{\"key\":") + json_string(pulled[i].first) +
             ",\"local_path\":" + json_string(pulled[i].second) + "}";
    print_line(out + "]}");
    return;
  }
  for (const auto& p : pulled) print_line(p.second);
}

std::string upload_drive_file(const stub_client& c, const std::string& path) {
  const std::string filename = base_name(path);
  const std::string mimetype = guess_mime_type(filename);
  const auto r = c.call("POST", "/files/upload-request",
                        "{\"filename\":" + json_string(filename) + ",\"mimetype\":" + json_string(mimetype) + "}");
  if (r.status >= 400) throw cli_error{legacy_error("file upload request", r.status, r.body)};
  json_doc doc(r.body, "parse upload response");
  const std::string url = string_field(doc.root(), "upload_url", "parse upload response");
  if (url.empty()) throw cli_error{"signed file upload response is missing upload_url"};
  json_doc res(c.upload_file(url, path, filename, mimetype), "parse upload result");
  const std::string id = string_field(res.root(), "id", "parse upload result");
  if (id.empty()) throw cli_error{"upload response is missing id"};
  return id;
}

bool skipped_dir(const std::string& n) {
  return n == ".git" || n == "__pycache__" || n == ".pytest_cache" || n == ".mypy_cache" ||
         n == ".ruff_cache" || n == ".venv" || n == "node_modules";
}

void collect(const std::string& root, const std::string& rel, std::vector<std::string>& out) {
  const std::string dir = rel.empty() ? root : root + "/" + rel;
  std::vector<std::string> names;
  if (!io::fs::sorted_entry_names(dir, names)) throw cli_error{"open " + dir + ": " + go_errno_text(errno)};
  for (const auto& n : names) {
    const std::string r = rel.empty() ? n : rel + "/" + n;
    struct stat st {};
    if (::lstat((root + "/" + r).c_str(), &st) != 0) continue;
    if (S_ISLNK(st.st_mode)) throw cli_error{"drive push does not support symlinked files: " + root + "/" + r};
    if (S_ISDIR(st.st_mode)) {
      if (!skipped_dir(n)) collect(root, r, out);
    } else if (S_ISREG(st.st_mode)) {
      out.push_back(r);
    }
  }
}

void drive_push(const std::string& local, const std::string& remote, const std::string& kind) {
  const stub_client c(read_environment());
  const std::string abs = absolute_path(local);
  struct stat st {};
  if (::stat(abs.c_str(), &st) != 0) throw cli_error{"local path not found: " + abs};
  const bool is_dir = S_ISDIR(st.st_mode);
  std::vector<std::pair<std::string, std::string>> uploads;  // key, local file
  const temp_dir scratch("dify-drive");
  if (!is_dir) {
    if (kind == "skill") throw cli_error{"--kind skill requires a directory containing SKILL.md"};
    if (kind == "dir") throw cli_error{"--kind dir requires a directory"};
    uploads.emplace_back(remote, abs);
  } else if (kind.empty()) {
    throw cli_error{"directory drive push requires --kind skill or --kind dir"};
  } else if (kind == "file") {
    throw cli_error{"--kind file requires a file"};
  } else if (kind == "dir") {
    std::vector<std::string> files;
    collect(abs, "", files);
    if (files.empty()) throw cli_error{"directory has no regular files: " + abs};
    for (const auto& f : files) uploads.emplace_back(remote + "/" + f, abs + "/" + f);
  } else if (kind == "skill") {
    if (::access((abs + "/SKILL.md").c_str(), F_OK) != 0)
      throw cli_error{"--kind skill requires a directory containing SKILL.md"};
    const std::string zip = scratch.path + "/.DIFY-SKILL-FULL.zip";
    if (auto err = dify_agent::zip_directory(abs, zip); !err.empty()) throw cli_error{err};
    uploads.emplace_back(remote + "/SKILL.md", abs + "/SKILL.md");
    uploads.emplace_back(remote + "/.DIFY-SKILL-FULL.zip", zip);
  } else {
    throw cli_error{"unknown --kind " + go_quote(kind) + ": use skill or dir"};
  }
  std::string items;
  for (const auto& [key, file] : uploads) {
    const std::string id = upload_drive_file(c, file);
    items += (items.empty() ? "" : ",") + std::string("{\"key\":") + json_string(key) +
             ",\"file_ref\":{\"kind\":\"tool_file\",\"id\":" + json_string(id) + "}}";
  }
  const auto r = c.call("POST", "/drive/commit", "{\"items\":[" + items + "]}");
  if (r.status >= 400) throw cli_error{legacy_error("drive commit", r.status, r.body)};
  print_line(r.body);
}

}  // namespace

std::unique_ptr<command> make_drive_command() {
  auto drive = std::make_unique<command>("drive", "List, pull, or push agent drive files through the Agent Stub.");
  drive->hidden();
  drive->add(std::make_unique<command>("list [REMOTE_PREFIX]", "List drive files visible to the current sandbox execution."))
      .args(arg_rule::at_most, 1)
      .flag({"json", 0, flag_kind::boolean, "Emit the drive manifest as JSON.", "", false})
      .run([](const invocation& in) { drive_list(in.args, in.flags.boolean("json")); });
  drive->add(std::make_unique<command>("pull [REMOTE]...", "Pull one or more drive keys/prefixes into one local directory tree."))
      .flag({"to", 0, flag_kind::string, "Local base directory for pulled drive files.", "", false})
      .flag({"json", 0, flag_kind::boolean, "Emit the pull result as JSON.", "", false})
      .run([](const invocation& in) { drive_pull(in.args, in.flags.text("to"), in.flags.boolean("json")); });
  drive->add(std::make_unique<command>("push LOCAL_PATH REMOTE_PATH", "Upload one local file or directory into the agent drive."))
      .args(arg_rule::exactly, 2)
      .flag({"kind", 0, flag_kind::string, "Directory upload kind: skill or dir.", "", false})
      .flag({"json", 0, flag_kind::boolean, "Accepted for consistency; drive push output is already emitted as JSON.", "", false})
      .run([](const invocation& in) { drive_push(in.args[0], in.args[1], in.flags.text("kind")); });
  return drive;
}

}  // namespace shellctl::dify_agent
