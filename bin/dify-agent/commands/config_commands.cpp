// config manifest | skills | files | env | note | prompt (docs/dify-agent.md; `config prompt`
// is `config note` under its newer name).
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <mutex>
#include <thread>

#include "bin/dify-agent/cli.hpp"
#include "bin/dify-agent/environment.hpp"
#include "bin/dify-agent/client/json_read.hpp"
#include "bin/dify-agent/local/local_paths.hpp"
#include "bin/dify-agent/local/mime_types.hpp"
#include "bin/dify-agent/client/stub_client.hpp"
#include "bin/dify-agent/formats/skill_zip.hpp"

namespace shellctl::dify_agent {

namespace {

constexpr const char* config_base = ".dify_conf";
constexpr std::size_t pull_concurrency = 4;

std::string manifest(const stub_client& c) { return c.ok("GET", "/config/manifest", "", "config manifest"); }

// Up to four tasks at a time; every error kept, joined by newlines in task order.
void run_pulls(std::size_t count, const std::function<void(std::size_t)>& task) {
  std::vector<std::string> errors(count);
  std::size_t next = 0;
  std::mutex m;
  auto worker = [&] {
    for (;;) {
      std::size_t i;
      {
        std::lock_guard<std::mutex> g(m);
        if (next == count) return;
        i = next++;
      }
      try {
        task(i);
      } catch (const cli_error& e) {
        errors[i] = e.message;
      }
    }
  };
  std::vector<std::thread> pool;
  for (std::size_t k = 0; k < std::min(count, pull_concurrency); ++k) pool.emplace_back(worker);
  for (auto& t : pool) t.join();
  std::string joined;
  for (const auto& e : errors) {
    if (e.empty()) continue;
    if (!joined.empty()) joined += "\n";
    joined += e;
  }
  if (!joined.empty()) throw cli_error{joined};
}

std::vector<std::string> manifest_names(const stub_client& c, const char* section) {
  const std::string body = manifest(c);
  json_doc doc(body, "parse manifest");
  std::vector<std::string> names;
  auto s = field(doc.root(), section);
  if (!s) return names;
  if (!s->is_object()) throw cli_error{"parse manifest: json: cannot unmarshal into field " + std::string(section)};
  auto items = field(*s, "items");
  if (!items) return names;
  if (!items->is_array()) throw cli_error{"parse manifest: json: cannot unmarshal into field items"};
  for (auto it : simdjson::dom::array(*items)) names.push_back(string_field(it, "name", "parse manifest"));
  return names;
}

std::string config_download_url(const stub_client& c, const std::string& kind, const std::string& name) {
  const std::string body = c.ok("POST", "/files/download-request",
                                "{\"config\":{\"kind\":" + json_string(kind) +
                                    ",\"name\":" + json_string(name) + "},\"for_frontend\":false}",
                                "config download request");
  json_doc doc(body, "parse config download response");
  std::string url = string_field(doc.root(), "download_url", "parse config download response");
  if (url.empty()) throw cli_error{"signed config download response is missing download_url"};
  return url;
}

// A name from the manifest (or the command line) names an entry inside the target folder,
// whatever the Agent Stub sends: plain components only (a file may name a subfolder,
// "sub/b.json"; a skill is one folder). Empty, NUL, absolute, and "." or ".." or empty
// components are refused, naming the entry; the other entries go on.
void check_entry_name(const char* kind, const std::string& name, bool nested) {
  auto refuse = [&](const char* why) {
    throw cli_error{std::string("config ") + kind + " name " + go_quote(name) + " refused: " + why};
  };
  if (name.empty()) refuse("it is empty");
  if (name.find('\0') != std::string::npos) refuse("it holds a NUL byte");
  if (name[0] == '/') refuse("it is absolute");
  if (!nested && name.find('/') != std::string::npos) refuse("it is not one path component");
  std::size_t i = 0;
  while (i <= name.size()) {
    std::size_t j = name.find('/', i);
    if (j == std::string::npos) j = name.size();
    const std::string part = name.substr(i, j - i);
    if (part.empty() || part == "." || part == "..")
      refuse("a component is empty, \".\" or \"..\" (it would leave its folder)");
    i = j + 1;
  }
}

void download_to(const stub_client& c, const std::string& url, const std::string& path) {
  staged_file f(dir_name(path), base_name(path));
  c.download(url, [&](const char* p, std::size_t n) { return f.write(p, n); });
  f.commit_replace(path);
}

void skills_pull(std::vector<std::string> names, const std::string& to, bool json_output) {
  const stub_client c(read_environment());
  if (names.empty()) names = manifest_names(c, "skills");
  const std::string dir = to.empty() ? join_path(config_base, "skills") : to;
  if (!make_dirs(dir, 0755)) throw cli_error{"create target directory: mkdir " + dir + ": " + go_errno_text(errno)};
  struct item {
    std::string archive, directory, skill_md;
  };
  std::vector<item> items(names.size());
  run_pulls(names.size(), [&](std::size_t i) {
    const std::string& name = names[i];
    check_entry_name("skill", name, false);
    std::string url;
    try {
      url = config_download_url(c, "skill", name);
    } catch (const cli_error& e) {
      throw cli_error{"request config skill " + go_quote(name) + " download URL: " + e.message};
    }
    const std::string archive = join_path(dir, name + ".zip");
    const std::string skill_dir = join_path(dir, name);
    try {
      download_to(c, url, archive);
    } catch (const cli_error& e) {
      throw cli_error{"download config skill " + go_quote(name) + ": " + e.message};
    }
    if (!make_dirs(skill_dir, 0755))
      throw cli_error{"create skill directory: mkdir " + skill_dir + ": " + go_errno_text(errno)};
    if (auto err = dify_agent::extract_zip(archive, skill_dir); !err.empty())
      throw cli_error{"extract skill archive: " + err};
    std::string md;
    try {
      md = read_input(join_path(skill_dir, "SKILL.md"));
    } catch (const cli_error&) {
      md.clear();  // a skill without SKILL.md shows as empty
    }
    items[i] = {archive, skill_dir, md};
  });
  if (json_output) {
    std::string out = "{\"items\":";
    if (names.empty()) {
      out += "null";
    } else {
      out += "[";
      for (std::size_t i = 0; i < names.size(); ++i) {
        if (i) out += ",";
        out += "{\"name\":" + json_string(names[i]) + ",\"archive_path\":" + json_string(items[i].archive) +
               ",\"directory_path\":" + json_string(items[i].directory) +
               ",\"skill_md\":" + json_string(items[i].skill_md) + "}";
      }
      out += "]";
    }
    print_line(out + "}");
    return;
  }
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i) out += "\n";
    out += items[i].directory + "\n" + items[i].skill_md;
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
}

void files_pull(std::vector<std::string> names, const std::string& to, bool json_output) {
  const stub_client c(read_environment());
  if (names.empty()) names = manifest_names(c, "files");
  const std::string dir = to.empty() ? join_path(config_base, "files") : to;
  if (!make_dirs(dir, 0755)) throw cli_error{"create target directory: mkdir " + dir + ": " + go_errno_text(errno)};
  std::vector<std::string> paths(names.size());
  run_pulls(names.size(), [&](std::size_t i) {
    const std::string& name = names[i];
    check_entry_name("file", name, true);
    std::string url;
    try {
      url = config_download_url(c, "file", name);
    } catch (const cli_error& e) {
      throw cli_error{"request config file " + go_quote(name) + " download URL: " + e.message};
    }
    const std::string target = join_path(dir, name);
    if (!make_dirs(dir_name(target), 0755))
      throw cli_error{"create parent directory: mkdir " + dir_name(target) + ": " + go_errno_text(errno)};
    try {
      download_to(c, url, target);
    } catch (const cli_error& e) {
      throw cli_error{"download config file " + go_quote(name) + ": " + e.message};
    }
    paths[i] = target;
  });
  if (json_output) {
    std::string out = "{\"items\":";
    if (names.empty()) {
      out += "null";
    } else {
      out += "[";
      for (std::size_t i = 0; i < names.size(); ++i) {
        if (i) out += ",";
        out += "{\"name\":" + json_string(names[i]) + ",\"path\":" + json_string(paths[i]) + "}";
      }
      out += "]";
    }
    print_line(out + "}");
    return;
  }
  for (const auto& p : paths) print_line(p);
}

// Upload for a config push: returns the tool file id.
std::string upload_config_file(const stub_client& c, const std::string& path) {
  const std::string filename = base_name(path);
  const std::string mimetype = guess_mime_type(filename);
  std::string url;
  try {
    url = c.upload_url(filename, mimetype);
  } catch (const cli_error& e) {
    throw cli_error{"request upload URL: " + e.message};
  }
  std::string result;
  try {
    result = c.upload_file(url, path, filename, mimetype);
  } catch (const cli_error& e) {
    throw cli_error{"upload data: " + e.message};
  }
  json_doc doc(result, "parse upload result");
  const std::string id = string_field(doc.root(), "id", "parse upload result");
  if (id.empty()) throw cli_error{"upload response is missing id"};
  return id;
}

std::string push_body(const std::string& section, const std::string& items) {
  // The original marshals a map: "files" sorts before "skills".
  return section == "files" ? "{\"files\":[" + items + "],\"skills\":[]}"
                            : "{\"files\":[],\"skills\":[" + items + "]}";
}

// One upload per path, then one /config/push naming them all. `upload_of` checks a path
// (absolute) and gives the file to upload for it, made in `scratch` when it must be built.
void push_config(const char* section, const char* kind, const std::vector<std::string>& paths,
                 const std::function<std::string(const std::string& abs, const temp_dir& scratch)>& upload_of) {
  const stub_client c(read_environment());
  const temp_dir scratch("dify-config");
  std::string items;
  for (const auto& p : paths) {
    const std::string abs = absolute_path(p);
    const std::string file = upload_of(abs, scratch);
    const std::string name = base_name(abs);
    std::string id;
    try {
      id = upload_config_file(c, file);
    } catch (const cli_error& e) {
      throw cli_error{std::string("upload config ") + kind + " " + go_quote(name) + ": " + e.message};
    }
    if (!items.empty()) items += ",";
    items += "{\"name\":" + json_string(name) + ",\"file_ref\":{\"kind\":\"tool_file\",\"id\":" + json_string(id) + "}}";
  }
  std::string body;
  try {
    body = c.ok("POST", "/config/push", push_body(section, items), "config push");
  } catch (const cli_error& e) {
    throw cli_error{std::string("push config ") + section + ": " + e.message};
  }
  print_line(body);
}

void skills_push(const std::vector<std::string>& paths) {
  push_config("skills", "skill", paths, [](const std::string& abs, const temp_dir& scratch) {
    struct stat st {};
    if (::stat(abs.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
      throw cli_error{"config skill path must be a directory: " + abs};
    if (::access(join_path(abs, "SKILL.md").c_str(), F_OK) != 0 && errno == ENOENT)
      throw cli_error{"config skill directory must contain SKILL.md: " + abs};
    // Named after the skill, as the original's upload shows it: <name>.zip.
    const std::string zip = scratch.path + "/" + base_name(abs) + ".zip";
    if (auto err = dify_agent::zip_directory(abs, zip); !err.empty()) throw cli_error{err};
    return zip;
  });
}

void files_push(const std::vector<std::string>& paths) {
  push_config("files", "file", paths, [](const std::string& abs, const temp_dir&) {
    struct stat st {};
    if (::stat(abs.c_str(), &st) != 0 || S_ISDIR(st.st_mode))
      throw cli_error{"config file path must be a regular file: " + abs};
    return abs;
  });
}

void delete_names(const std::string& section, const std::vector<std::string>& names) {
  const stub_client c(read_environment());
  std::string items;
  for (const auto& n : names) {
    if (!items.empty()) items += ",";
    items += "{\"name\":" + json_string(n) + ",\"file_ref\":null}";
  }
  print_line(c.ok("POST", "/config/push", push_body(section, items), "config push"));
}

// A file, or stdin for "-" (the original reads /dev/stdin and says "read stdin").
std::string read_text(const std::string& path) {
  if (path != "-") return read_input(path);
  try {
    return read_input("-");
  } catch (const cli_error& e) {
    throw cli_error{"read stdin: " + e.message.substr(std::string("read file: ").size())};
  }
}

void env_push(const std::string& path) {
  const environment env = read_environment();
  const std::string text = read_text(path);
  const stub_client c(env);
  print_line(c.ok("PATCH", "/config/env", "{\"env_text\":" + json_string(text) + "}", "config env update"));
}

// note and prompt: the same shape, a manifest string field and its own PUT route.
struct text_asset {
  const char* word;     // "note" / "prompt"
  const char* file;     // default file under ./.dify_conf
};

void asset_pull(const text_asset& a, const std::string& to) {
  const stub_client c(read_environment());
  const std::string body = manifest(c);
  json_doc doc(body, "parse manifest");
  const std::string text = string_field(doc.root(), a.word, "parse manifest");
  const std::string abs = absolute_path(to.empty() ? join_path(config_base, a.file) : to);
  if (!make_dirs(dir_name(abs), 0755))
    throw cli_error{"create directory: mkdir " + dir_name(abs) + ": " + go_errno_text(errno)};
  write_file(abs, text, 0644, std::string("write ") + a.word);
  print_line(abs);
}

void asset_push(const text_asset& a, const std::string& path) {
  const environment env = read_environment();
  const std::string text = read_text(path.empty() ? join_path(config_base, a.file) : path);
  const stub_client c(env);
  print_line(c.ok("PUT", std::string("/config/") + a.word,
                  std::string("{\"") + a.word + "\":" + json_string(text) + "}",
                  std::string("config ") + a.word + " update"));
}

std::unique_ptr<command> make_asset_command(const text_asset& a) {
  const std::string w = a.word;
  auto cmd = std::make_unique<command>(w, "Pull or update the current config " + w + ".");
  cmd->add(std::make_unique<command>(
                "pull", "Export the current config " + w + " into ./.dify_conf/" + a.file + " by default."))
      .args(arg_rule::none)
      .flag({"to", 0, flag_kind::string, "Local markdown file path.", "", false})
      .run([a](const invocation& in) { asset_pull(a, in.flags.text("to")); });
  cmd->add(std::make_unique<command>(
                "push [PATH|-]", "Replace the current config " + w + " from one local text file or stdin."))
      .args(arg_rule::at_most, 1)
      .run([a](const invocation& in) { asset_push(a, in.args.empty() ? "" : in.args[0]); });
  return cmd;
}

std::unique_ptr<command> make_pull(const std::string& kind) {
  const bool skills = kind == "skills";
  auto pull = std::make_unique<command>(
      "pull [NAME]...", "Pull one or all visible config " + kind + " into ./.dify_conf/" + kind + " by default.");
  pull->flag({"to", 0, flag_kind::string, "Local directory for pulled config " + kind + ".", "", false});
  pull->flag({"json", 0, flag_kind::boolean, "Emit the pull result as JSON.", "", false});
  pull->run([skills](const invocation& in) {
    if (skills)
      skills_pull(in.args, in.flags.text("to"), in.flags.boolean("json"));
    else
      files_pull(in.args, in.flags.text("to"), in.flags.boolean("json"));
  });
  return pull;
}

}  // namespace

std::unique_ptr<command> make_config_command() {
  auto config = std::make_unique<command>(
      "config", "Inspect or update Agent Soul-backed config assets through the Agent Stub.");
  config->add(std::make_unique<command>("manifest", "Show the current visible Agent config manifest as JSON."))
      .args(arg_rule::none)
      .run([](const invocation&) { print_line(manifest(stub_client(read_environment()))); });

  auto& skills = config->add(std::make_unique<command>("skills", "Pull or update config skills through the Agent Stub."));
  skills.add(make_pull("skills"));
  skills.add(std::make_unique<command>("push PATH...", "Upload one or more local skill directories into the current config manifest."))
      .args(arg_rule::at_least, 1)
      .run([](const invocation& in) { skills_push(in.args); });
  skills.add(std::make_unique<command>("delete NAME...", "Delete one or more config skills by name without touching local directories."))
      .args(arg_rule::at_least, 1)
      .run([](const invocation& in) { delete_names("skills", in.args); });
  // Hidden singular aliases, pull only.
  config->add(std::make_unique<command>("skill", "Pull config skills through the Agent Stub."))
      .hidden()
      .add(make_pull("skills"));

  auto& files = config->add(std::make_unique<command>("files", "Pull or update config files through the Agent Stub."));
  files.add(make_pull("files"));
  files.add(std::make_unique<command>("push PATH...", "Upload one or more local files into the current config manifest."))
      .args(arg_rule::at_least, 1)
      .run([](const invocation& in) { files_push(in.args); });
  files.add(std::make_unique<command>("delete NAME...", "Delete one or more config files by name without touching local files."))
      .args(arg_rule::at_least, 1)
      .run([](const invocation& in) { delete_names("files", in.args); });
  config->add(std::make_unique<command>("file", "Pull config files through the Agent Stub."))
      .hidden()
      .add(make_pull("files"));

  auto& env = config->add(std::make_unique<command>("env", "Update config env variables visible to the current run."));
  env.add(std::make_unique<command>("push PATH|-", "Set or delete config env entries from one local dotenv file or stdin."))
      .args(arg_rule::exactly, 1)
      .run([](const invocation& in) { env_push(in.args[0]); });

  config->add(make_asset_command({"note", "note.md"}));
  config->add(make_asset_command({"prompt", "prompt.md"}));
  return config;
}

}  // namespace shellctl::dify_agent
