#include "io/native/host_checks.hpp"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "io/json/json.hpp"
#include "io/sandbox/cgroups.hpp"
#include "io/sandbox/landlock.hpp"
#include "io/sandbox/namespaces.hpp"
#include "io/store/statement.hpp"

namespace shellctl::io::native {
namespace {

std::string read_text(const std::string& path, bool* ok = nullptr) {
  std::ifstream in(path);
  if (ok) *ok = static_cast<bool>(in);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

std::vector<std::string> words(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

// "Name:\tvalue" of /proc/self/status.
std::string status_field(const std::string& name) {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind(name + ":", 0) == 0) {
      auto v = line.substr(name.size() + 1);
      v.erase(0, v.find_first_not_of(" \t"));
      return v;
    }
  return "";
}

std::string hex(const unsigned char* p, std::size_t n) {
  static const char digits[] = "0123456789abcdef";
  std::string out;
  for (std::size_t i = 0; i < n; ++i) {
    out += digits[p[i] >> 4];
    out += digits[p[i] & 15];
  }
  return out;
}

std::string sha256(const std::string& data) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(data.data(), data.size(), md, &len, EVP_sha256(), nullptr);
  return std::string(reinterpret_cast<char*>(md), len);
}

std::string parent_of(const std::string& cg) {
  if (cg.empty() || cg == "/") return "/";
  const auto slash = cg.rfind('/');
  return slash == 0 ? "/" : cg.substr(0, slash);
}

struct checker {
  const supervisor_setup& s;
  check_report& r;
  void add(const char* id, bool ok, std::string detail) {
    r.checks.push_back({id, ok, std::move(detail)});
  }
};

void check_uid(checker& c) {
  const uid_t uid = ::geteuid();
  const std::string eff = status_field("CapEff");
  const bool no_caps = !eff.empty() && eff.find_first_not_of('0') == std::string::npos;
  if (uid == 0)
    c.add("uid", false, "runs as root; the supervisor needs a dedicated unprivileged user");
  else if (!no_caps)
    c.add("uid", false, "uid " + std::to_string(uid) + " holds capabilities (CapEff " + eff + ")");
  else
    c.add("uid", true, "uid " + std::to_string(uid) + ", no capabilities");
}

void check_token(checker& c) {
  const bool blank = c.s.token.find_first_not_of(" \t\r\n") == std::string::npos;
  c.add("token", !blank, blank ? "no non-blank bearer token (--token or SHELLCTL_AUTH_TOKEN)"
                               : "set");
}

void check_seccomp(checker& c) {
  const std::string mode = status_field("Seccomp");
  c.add("seccomp", mode == "2",
        mode == "2" ? "a filter is active (Seccomp: 2)"
                    : "no seccomp filter on this process (Seccomp: " + (mode.empty() ? "?" : mode) +
                          "); the unit or the OCI runtime must install one");
}

void check_apparmor(checker& c) {
  bool ok = false;
  std::string label = first_line(read_text("/proc/self/attr/apparmor/current", &ok));
  if (!ok) label = first_line(read_text("/proc/self/attr/current", &ok));
  const std::string want = std::string(kAppArmorProfile) + " (enforce)";
  if (label == want) {
    c.r.found.apparmor_profile = kAppArmorProfile;
    c.add("apparmor", true, label);
  } else {
    c.add("apparmor", false,
          !ok || label.empty() ? "AppArmor is not available on this host"
                               : "confined by \"" + label + "\", not \"" + want + "\"");
  }
}

void check_landlock(checker& c) {
  const int abi = sandbox::landlock_abi();
  c.r.found.landlock_abi = abi > 0 ? abi : 0;
  c.add("landlock", abi >= 1, abi >= 1 ? "ABI " + std::to_string(abi) : "Landlock is not available");
}

void check_namespaces(checker& c) {
  std::string why;
  const bool ok = sandbox::scope_namespaces_available(why);
  c.add("namespaces", ok,
        ok ? "user, mount, PID and net namespaces; tmpfs, proc and an overlay on tmpfs" : why);
}

void check_cgroups(checker& c) {
  std::string why;
  const auto place = sandbox::cgroups::find_own_cgroup(why);
  const std::string own = place ? place->path : "";
  const std::string unit = c.s.unit_cgroup.empty() ? parent_of(own) : c.s.unit_cgroup;
  const std::string udir = place ? place->dir(unit) : "";
  c.r.unit_dir = udir;
  if (!place || udir.empty()) {
    for (const char* id : {"cgroup_placement", "cgroup_controllers", "cgroup_finite"})
      c.add(id, false, place ? "the unit cgroup " + unit + " is not reachable through the cgroup2 mount"
                             : why);
    return;
  }
  // placement: we are <U>/manager, and <U> itself holds no process.
  {
    std::string detail;
    if (!c.s.unit_cgroup.empty() && c.s.unit_cgroup != parent_of(own))
      detail = "SHELLCTL_NATIVE_CGROUP is " + c.s.unit_cgroup + " but our cgroup is " + own;
    else if (own != (unit == "/" ? "" : unit) + "/manager")
      detail = "our cgroup is " + own + ", not " + (unit == "/" ? "" : unit) + "/manager";
    else if (!words(read_text(udir + "/cgroup.procs")).empty())
      detail = udir + "/cgroup.procs is not empty: the unit cgroup must hold no process";
    c.add("cgroup_placement", detail.empty(), detail.empty() ? "0::" + own : detail);
  }
  // controllers: cpu, memory and pids delegated below <U>; cgroup.kill and memory.swap.max.
  {
    bool readable = false;
    const auto enabled = words(read_text(udir + "/cgroup.subtree_control", &readable));
    std::string missing;
    for (const char* want : {"cpu", "memory", "pids"}) {
      if (std::find(enabled.begin(), enabled.end(), want) != enabled.end())
        c.r.found.cgroup_controllers.push_back(want);
      else
        missing += std::string(missing.empty() ? "" : " ") + want;
    }
    struct stat st {};
    std::string detail;
    if (!readable)
      detail = "cannot read " + udir + "/cgroup.subtree_control";
    else if (!missing.empty())
      detail = udir + "/cgroup.subtree_control lacks " + missing;
    else if (unit != "/" && ::access((udir + "/cgroup.kill").c_str(), F_OK) != 0)
      detail = "no " + udir + "/cgroup.kill (Linux 5.14 or later is needed)";
    else if (::access((udir + "/memory.swap.max").c_str(), F_OK) != 0)
      detail = "no " + udir + "/memory.swap.max";
    else if (::stat(udir.c_str(), &st) != 0 || st.st_uid != ::geteuid())
      detail = udir + " is not delegated to uid " + std::to_string(::geteuid());
    c.add("cgroup_controllers", detail.empty(), detail.empty() ? "cpu memory pids in " + udir : detail);
  }
  // finite: the unit's own bounds.
  {
    std::string unbounded;
    for (const char* file : {"memory.max", "pids.max", "cpu.max"}) {
      bool ok = false;
      const auto v = words(read_text(udir + "/" + file, &ok));
      if (!ok || v.empty() || v[0] == "max")
        unbounded += std::string(unbounded.empty() ? "" : ", ") + file + (ok ? " is max" : " missing");
    }
    c.add("cgroup_finite", unbounded.empty(),
          unbounded.empty() ? "memory.max, pids.max and cpu.max are finite in " + udir
                            : udir + ": " + unbounded);
  }
}

void check_roots(checker& c) {
  std::string detail;
  const std::pair<const char*, const std::string*> roots[] = {
      {"base root", &c.s.base_root}, {"input root", &c.s.input_root}, {"image root", &c.s.image_root}};
  for (const auto& [name, path] : roots) {
    struct stat st {};
    if (path->empty())
      detail = std::string(name) + " is not set (--native-" + (name[0] == 'b' ? "base" : "input") +
               "-root)";
    else if (::stat(path->c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
      detail = std::string(name) + " " + *path + " is not a directory";
    else if (st.st_uid != 0)
      detail = std::string(name) + " " + *path + " is not owned by root";
    else if ((st.st_mode & 022) != 0 || (::geteuid() != 0 && ::access(path->c_str(), W_OK) == 0))
      detail = std::string(name) + " " + *path + " is writable by us or by others";
    if (!detail.empty()) break;
  }
  c.add("roots", detail.empty(), detail.empty() ? "root-owned, read-only to us" : detail);
}

// The catalog, opened read-only if it exists: FULL durability, and the fingerprint of the
// key that retained scopes' tokens were made with.
void check_catalog(checker& c) {
  const std::string path = c.s.state_dir + "/native/catalog.db";
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    c.add("catalog", true, "none yet: created with synchronous=FULL at first start");
    c.add("signing_key", true, "no retained scopes");
    return;
  }
  // Read-only, through the store's statement wrapper: the dry run changes nothing.
  std::string err;
  long sync = -1, retained = 0;
  std::string stored;
  sqlite3* db = nullptr;
  try {
    if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK)
      throw store::db_error(db ? sqlite3_errmsg(db) : "out of memory");
    sqlite3_exec(db, "PRAGMA synchronous=FULL", nullptr, nullptr, nullptr);
    store::statement q(db, "PRAGMA synchronous");
    if (q.step()) sync = q.int64(0);
    // Retained scopes: rows of native_scopes. Their tokens were made with the key whose
    // fingerprint native_meta keeps; another token would invalidate them all (S7).
    store::statement n(db, "SELECT count(*) FROM native_scopes");
    if (n.step()) retained = n.int64(0);
    store::statement f(db, "SELECT value FROM native_meta WHERE key='fingerprint'");
    if (f.step()) stored = f.text(0);
  } catch (const std::exception& e) {
    err = e.what();
  }
  sqlite3_close(db);
  c.add("catalog", err.empty() && sync == 2,
        !err.empty() ? path + ": " + err
        : sync == 2  ? path + ": synchronous=FULL"
                     : path + ": synchronous=FULL does not hold");
  if (retained == 0) {
    c.add("signing_key", true, "no retained scopes");
  } else {
    const bool same = stored == key_fingerprint(c.s.token);
    c.add("signing_key", same,
          same ? std::to_string(retained) + " retained scope(s); the fingerprint matches"
               : "the token is not the one " + std::to_string(retained) +
                     " retained scope(s) were created with (fingerprint mismatch): their tokens "
                     "would stop verifying");
  }
}

void check_helpers(checker& c) {
  std::string tmux;
  if (const char* path = std::getenv("PATH")) {
    std::istringstream dirs(path);
    for (std::string d; std::getline(dirs, d, ':');)
      if (!d.empty() && ::access((d + "/tmux").c_str(), X_OK) == 0) {
        tmux = d + "/tmux";
        break;
      }
  }
  std::string detail;
  if (tmux.empty()) detail = "tmux is not on PATH";
  else if (c.s.runner.empty()) detail = "shellctl-runner not found";
  c.add("helpers", detail.empty(), detail.empty() ? tmux + ", " + c.s.runner : detail);
}

}  // namespace

std::string capability_json(const capabilities& c) {
  // Keys in byte order: the canonical form the digest is taken of.
  json::writer w;
  w.begin_object();
  w.key("apparmor_profile");
  if (c.apparmor_profile.empty()) w.null(); else w.value(c.apparmor_profile);
  w.key("cgroup_controllers").begin_array();
  auto sorted = c.cgroup_controllers;
  std::sort(sorted.begin(), sorted.end());
  for (const auto& ctl : sorted) w.value(ctl);
  w.end_array();
  w.key("landlock_abi").value(c.landlock_abi);
  w.key("max_jobs").value(c.max_jobs);
  w.key("mediator");
  if (c.mediator.empty()) w.null(); else w.value(c.mediator);
  w.key("protocol").value(kProtocol);
  w.key("proxy").value(c.proxy);
  w.end_object();
  auto out = w.finish();
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

std::string capability_digest(const capabilities& c) {
  const auto d = sha256(capability_json(c));
  return "sha256:" + hex(reinterpret_cast<const unsigned char*>(d.data()), d.size());
}

std::string scope_token_key(const std::string& control_token) {
  static const char label[] = "dify-native/scope-token/v1";
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), control_token.data(), static_cast<int>(control_token.size()),
       reinterpret_cast<const unsigned char*>(label), sizeof label - 1, md, &len);
  return std::string(reinterpret_cast<char*>(md), len);
}

std::string key_fingerprint(const std::string& control_token) {
  const auto d = sha256(scope_token_key(control_token));
  return hex(reinterpret_cast<const unsigned char*>(d.data()), d.size());
}

bool check_report::ok() const { return first_failure() == nullptr; }

const check_result* check_report::first_failure() const {
  for (const auto& c : checks)
    if (!c.ok) return &c;
  return nullptr;
}

std::string check_report::json() const {
  json::writer w;
  w.begin_object();
  w.key("ok").value(ok());
  w.key("checks").begin_array();
  for (const auto& c : checks) {
    w.begin_object();
    w.key("id").value(c.id);
    w.key("ok").value(c.ok);
    w.key("detail").value(c.detail);
    w.end_object();
  }
  w.end_array();
  w.key("capability_digest").value(capability_digest(found));
  w.end_object();
  return w.finish();
}

check_report run_checks(const supervisor_setup& s) {
  check_report r;
  r.found.mediator = s.mediator;
  checker c{s, r};
  check_uid(c);
  check_token(c);
  check_seccomp(c);
  check_apparmor(c);
  check_landlock(c);
  check_namespaces(c);
  check_cgroups(c);
  check_roots(c);
  check_catalog(c);
  check_helpers(c);
  return r;
}

}  // namespace shellctl::io::native
