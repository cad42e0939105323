#include "bin/dify-agent/local/mime_types.hpp"

#include <cctype>
#include <fstream>
#include <map>
#include <sstream>

namespace shellctl::dify_agent {

namespace {

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool load_globs2(const char* path, std::map<std::string, std::string>& table) {
  std::ifstream in(path);
  if (!in) return false;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    // weight:type:glob[:flags]
    std::stringstream ss(line);
    std::string weight, type, glob;
    if (!std::getline(ss, weight, ':') || !std::getline(ss, type, ':') || !std::getline(ss, glob, ':'))
      continue;
    if (glob.size() < 3 || glob.compare(0, 2, "*.") != 0) continue;
    const std::string ext = glob.substr(1);
    if (ext.find_first_of("?*[") != std::string::npos) continue;
    table.emplace(ext, type);  // weight order: the first type seen for an extension wins
  }
  return true;
}

void load_mime_types(const char* path, std::map<std::string, std::string>& table) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    const auto hash = line.find('#');
    if (hash != std::string::npos) line.resize(hash);
    std::stringstream ss(line);
    std::string type, ext;
    if (!(ss >> type)) continue;
    while (ss >> ext) table["." + ext] = type;
  }
}

const std::map<std::string, std::string>& table() {
  static const std::map<std::string, std::string> t = [] {
    // Go's builtin table (mime/type.go); the system files add to it, never replace it.
    std::map<std::string, std::string> m = {
        {".avif", "image/avif"},        {".css", "text/css; charset=utf-8"},
        {".gif", "image/gif"},          {".htm", "text/html; charset=utf-8"},
        {".html", "text/html; charset=utf-8"}, {".jpeg", "image/jpeg"},
        {".jpg", "image/jpeg"},         {".js", "text/javascript; charset=utf-8"},
        {".json", "application/json"},  {".mjs", "text/javascript; charset=utf-8"},
        {".pdf", "application/pdf"},    {".png", "image/png"},
        {".svg", "image/svg+xml"},      {".wasm", "application/wasm"},
        {".webp", "image/webp"},        {".xml", "text/xml; charset=utf-8"},
    };
    if (!load_globs2("/usr/local/share/mime/globs2", m) &&
        !load_globs2("/usr/share/mime/globs2", m)) {
      std::map<std::string, std::string> files;
      for (const char* p : {"/etc/mime.types", "/etc/apache2/mime.types", "/etc/apache/mime.types",
                            "/etc/httpd/conf/mime.types"})
        load_mime_types(p, files);
      for (auto& [k, v] : files) m.emplace(k, v);
    }
    return m;
  }();
  return t;
}

}  // namespace

std::string guess_mime_type(const std::string& filename) {
  const auto slash = filename.rfind('/');
  const std::string base = slash == std::string::npos ? filename : filename.substr(slash + 1);
  const auto dot = base.rfind('.');
  if (dot == std::string::npos) return "application/octet-stream";
  const std::string ext = base.substr(dot);
  const auto& t = table();
  auto it = t.find(ext);
  if (it == t.end()) it = t.find(lower(ext));
  if (it == t.end() || it->second.empty()) return "application/octet-stream";
  std::string type = it->second;
  const auto semi = type.find(';');
  if (semi != std::string::npos) type.resize(semi);
  while (!type.empty() && type.back() == ' ') type.pop_back();
  return type;
}

}  // namespace shellctl::dify_agent
