#include "io/config/serve_config.hpp"

#include <arpa/inet.h>
#include <sys/resource.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <map>
#include <optional>

#include "io/text/go_duration.hpp"
#include "io/text/go_flags.hpp"

namespace shellctl::io::config {
namespace {

const char* usage_text =
    "Usage: shellctl serve [flags]\n"
    "  -cgroup-root string\n"
    "    \tcgroup v2 directory for the jobs' cgroups, or \"none\" (default $SHELLCTL_CGROUP_ROOT,\n"
    "    \telse the server's own cgroup when it is writable)\n"
    "  -listen string\n"
    "    \taddress to listen on (default \"127.0.0.1:8765\")\n"
    "  -native-base-root string\n"
    "    \tnative test supervisor: the immutable root of base snapshots\n"
    "  -native-check\n"
    "    \twith -native-test-supervisor: run its startup checks, print them as JSON, change nothing\n"
    "  -native-image-root string\n"
    "    \tnative test supervisor: the image jobs see read-only (default \"/\")\n"
    "  -native-input-root string\n"
    "    \tnative test supervisor: the immutable root of input files\n"
    "  -native-mediator string\n"
    "    \tnative test supervisor: the one private IP:port the network broker may reach\n"
    "  -native-test-supervisor\n"
    "    \tserve isolated native test scopes instead of ordinary jobs (see README)\n"
    "  -log-format string\n"
    "    \trequest log on stderr: text or json (default: text on a terminal, json otherwise)\n"
    "  -log-level string\n"
    "    \tdebug, info, warn or error; answered requests are logged at info (default \"info\")\n"
    "  -require-auth-token\n"
    "    \trefuse to start without a non-blank auth token\n"
    "  -state-dir string\n"
    "    \tstate directory (default $XDG_DATA_HOME/shellctl or ~/.local/share/shellctl)\n"
    "  -token string\n"
    "    \tbearer token (default $SHELLCTL_AUTH_TOKEN)\n";

const char* environment_text =
    "\nEnvironment:\n"
    "  SHELLCTL_AUTH_TOKEN              bearer token when -token is empty (empty: auth off)\n"
    "  SHELLCTL_ENABLE_PATH_ISOLATION   \"true\" or unset: jobs are sandboxed (Landlock and an\n"
    "                                   own root); anything else: no path isolation\n"
    "  SHELLCTL_LANDLOCK_RW_PATHS       extra read-write directories for jobs (comma list)\n"
    "  SHELLCTL_LANDLOCK_RO_PATHS       read-only+exec directories (default /usr,/bin,/sbin,\n"
    "                                   /lib,/lib64,/etc,/proc,/opt/dify-agent-tools,\n"
    "                                   /opt/homebrew,/snap)\n"
    "  SHELLCTL_LANDLOCK_RW_DEV_PATHS   device files jobs may use (default /dev/null,/dev/zero,\n"
    "                                   /dev/urandom,/dev/random,/dev/tty)\n"
    "  SHELLCTL_JOB_NAMESPACES          \"auto\" (default) or \"off\" (needs isolation off)\n"
    "  SHELLCTL_JOB_OOM_SCORE_ADJ       every job process's oom_score_adj, -1000..1000 (default\n"
    "                                   800; the server keeps -800: the job is the OOM victim)\n"
    "  SHELLCTL_CGROUP_ROOT             cgroup v2 directory for job cgroups when -cgroup-root is\n"
    "                                   empty; \"none\": no containment (default: detect)\n"
    "  SHELLCTL_JOB_MEMORY_MAX          per-job memory.max (needs the memory controller)\n"
    "  SHELLCTL_JOB_PIDS_MAX            per-job pids.max (needs the pids controller)\n"
    "  SHELLCTL_JOB_CPU_MAX             per-job cpu.max, \"QUOTA PERIOD\" (needs the cpu controller)\n"
    "  SHELLCTL_NATIVE_BASE_ROOT, SHELLCTL_NATIVE_INPUT_ROOT, SHELLCTL_NATIVE_IMAGE_ROOT,\n"
    "  SHELLCTL_NATIVE_MEDIATOR         the -native-* flags' values when the flag is empty\n"
    "  SHELLCTL_NATIVE_CGROUP           the supervisor's unit cgroup (default: our cgroup's parent)\n"
    "  SHELLCTL_NATIVE_MAX_SCOPES       live scopes at most (default 16)\n"
    "  SHELLCTL_NATIVE_MAX_DEADLINE     the furthest scope deadline (Go duration, default 24h)\n"
    "  SHELLCTL_RESULT_RETENTION        keep finished jobs this long (Go duration, default 24h)\n"
    "  SHELLCTL_GC_INTERVAL             retention sweep interval (default 60s)\n"
    "  SHELLCTL_SNAPSHOT_TIMEOUT        snapshot I/O deadline (default 45s)\n"
    "  SHELLCTL_HTTP_MAX_CONNECTIONS    open connections (default half the fd limit, <= 1024)\n"
    "  SHELLCTL_HTTP_MAX_BUFFERED_BYTES request bytes held at once (default 268435456)\n"
    "  SHELLCTL_HTTP_HEAD_TIMEOUT       a request head must arrive within this, and a connection\n"
    "                                   without the token may idle this long (default 10s)\n"
    "  HOME, XDG_DATA_HOME              default state dir and the jobs' default HOME and cwd\n"
    "  PATH                             where tmux and the helper binaries are found\n"
    "\nshellctl runs jobs in tmux for AI agents over HTTP; see README.md.\n";

bool blank(const std::string& s) {
  for (unsigned char c : s)
    if (!std::isspace(c)) return false;
  return true;
}

// Go duration env setting: unset/blank = default; unparsable or <= 0 is fatal.
bool duration_setting(const std::map<std::string, std::string>& env, const char* name,
                      std::chrono::nanoseconds& out, std::string& message) {
  auto it = env.find(name);
  if (it == env.end() || blank(it->second)) return true;
  auto d = text::parse_go_duration(it->second);
  if (!d) {
    message = std::string("shellctl: config: ") + name + ": invalid duration \"" + it->second +
              "\"\n";
    return false;
  }
  if (d->count() <= 0) {
    message = std::string("shellctl: config: ") + name + ": must be positive, got \"" +
              it->second + "\"\n";
    return false;
  }
  out = *d;
  return true;
}

// A positive integer setting: unset/blank = default; anything else is fatal.
bool count_setting(const std::map<std::string, std::string>& env, const char* name,
                   std::size_t& out, std::string& message) {
  auto it = env.find(name);
  if (it == env.end() || blank(it->second)) return true;
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(it->second.c_str(), &end, 10);
  if (errno != 0 || end == it->second.c_str() || *end != '\0' || v == 0 ||
      it->second[0] == '-') {
    message = std::string("shellctl: config: ") + name + ": must be a positive integer, got \"" +
              it->second + "\"\n";
    return false;
  }
  out = static_cast<std::size_t>(v);
  return true;
}

// Half the descriptors may go to connections, the rest stays for jobs, tmux and SQLite:
// idle connections must not starve the server of what it needs to settle jobs.
std::size_t default_max_connections() {
  struct rlimit rl {};
  if (::getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return 1024;
  return std::min<std::size_t>(1024, std::max<std::size_t>(16, rl.rlim_cur / 2));
}

bool parse_listen(const std::string& addr, serve_config& out, std::string& message) {
  auto colon = addr.rfind(':');
  if (colon == std::string::npos) {
    message = "shellctl: listen tcp " + addr + ": missing port in address\n";
    return false;
  }
  std::string host = addr.substr(0, colon);
  std::string port = addr.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  char* end = nullptr;
  long p = std::strtol(port.c_str(), &end, 10);
  if (port.empty() || *end || p < 0 || p > 65535) {
    message = "shellctl: listen tcp " + addr + ": invalid port\n";
    return false;
  }
  out.listen_host = host.empty() ? "0.0.0.0" : host;
  out.listen_port = static_cast<std::uint16_t>(p);
  out.listen_text = addr;
  return true;
}

// The supervisor's settings (docs/native-scopes.md "The scope service"): flag (when non-empty),
// else environment, else the default. Refused without --native-test-supervisor: an ordinary
// server must not look as if it had them.
bool parse_native(const std::map<std::string, std::string>& env,
                  const std::map<std::string, std::string>& flags, serve_config& out,
                  std::string& message) {
  auto& n = out.native;
  struct text_setting {
    const char* flag;
    const char* env;
    std::string* value;
  };
  const text_setting texts[] = {
      {"native-base-root", "SHELLCTL_NATIVE_BASE_ROOT", &n.base_root},
      {"native-input-root", "SHELLCTL_NATIVE_INPUT_ROOT", &n.input_root},
      {"native-image-root", "SHELLCTL_NATIVE_IMAGE_ROOT", &n.image_root},
      {"native-mediator", "SHELLCTL_NATIVE_MEDIATOR", &n.mediator},
      {nullptr, "SHELLCTL_NATIVE_CGROUP", &n.unit_cgroup},
  };
  std::string given;  // the first native setting seen, for the refusal below
  for (const auto& t : texts) {
    auto f = t.flag ? flags.find(t.flag) : flags.end();
    auto e = env.find(t.env);
    if (f != flags.end() && !f->second.empty()) {
      *t.value = f->second;
      given = std::string("-") + t.flag;
    } else if (e != env.end() && !blank(e->second)) {
      *t.value = e->second;
      given = t.env;
    }
  }
  for (const char* name : {"SHELLCTL_NATIVE_MAX_SCOPES", "SHELLCTL_NATIVE_MAX_DEADLINE"})
    if (env.count(name) && !blank(env.at(name))) given = name;
  if (!count_setting(env, "SHELLCTL_NATIVE_MAX_SCOPES", n.max_scopes, message) ||
      !duration_setting(env, "SHELLCTL_NATIVE_MAX_DEADLINE", n.max_deadline, message))
    return false;
  if (n.check_only && !n.supervisor) {
    message = "shellctl: config: -native-check needs -native-test-supervisor\n";
    return false;
  }
  if (!n.supervisor) {
    if (given.empty()) return true;
    message = "shellctl: config: " + given + " needs -native-test-supervisor\n";
    return false;
  }
  for (const auto* path : {&n.base_root, &n.input_root, &n.image_root, &n.unit_cgroup})
    if (!path->empty() && (*path)[0] != '/') {
      message = "shellctl: config: native test supervisor: \"" + *path +
                "\" must be an absolute path\n";
      return false;
    }
  if (!n.mediator.empty()) {
    // One exact IP:port ([v6]:port for IPv6), never a name: the broker pins addresses.
    const auto colon = n.mediator.rfind(':');
    std::string host = colon == std::string::npos ? "" : n.mediator.substr(0, colon);
    const std::string port = colon == std::string::npos ? "" : n.mediator.substr(colon + 1);
    const bool v6 = host.size() > 2 && host.front() == '[' && host.back() == ']';
    if (v6) host = host.substr(1, host.size() - 2);
    unsigned char buf[16];
    char* end = nullptr;
    const long p = port.empty() ? 0 : std::strtol(port.c_str(), &end, 10);
    const bool port_ok = !port.empty() && *end == '\0' && p >= 1 && p <= 65535 &&
                         port.find_first_not_of("0123456789") == std::string::npos;
    if (!port_ok || ::inet_pton(v6 ? AF_INET6 : AF_INET, host.c_str(), buf) != 1) {
      message = "shellctl: config: native test supervisor: mediator \"" + n.mediator +
                "\" must be one IP:port ([IPv6]:port)\n";
      return false;
    }
  }
  return true;
}

}  // namespace

parse_result parse_serve(int argc, char** argv, char** envp, serve_config& out,
                         std::string& message) {
  std::map<std::string, std::string> env;
  for (char** e = envp; e && *e; ++e) {
    std::string kv = *e;
    auto eq = kv.find('=');
    if (eq == std::string::npos) continue;
    env.emplace(kv.substr(0, eq), kv.substr(eq + 1));
    // D10: the tmux server (and so every job) never sees our TMUX* or SHELLCTL_* names.
    if (kv.rfind("TMUX", 0) != 0 && kv.rfind("SHELLCTL_", 0) != 0) out.tmux_env.push_back(kv);
  }
  const std::string first = argc >= 2 ? argv[1] : "";
  if (first == "--version" || first == "-version" || first == "version") {
    message = std::string("shellctl ") + SHELLCTL_VERSION + "\n";
    return parse_result::print_version;
  }
  if (first == "--help" || first == "-help" || first == "-h" || first == "help") {
    message = std::string(usage_text) + environment_text;
    return parse_result::exit_ok;
  }
  if (first != "serve") {
    message = "Usage: shellctl serve [flags]\n";
    return parse_result::exit_ok;
  }
  std::optional<std::string> listen, state_dir, token, cgroup_root;
  std::map<std::string, std::string> native_flags;  // "native-base-root" -> value
  bool require_token = false;
  // Go's flag syntax (io/text/go_flags.hpp), after the "serve" subcommand.
  text::go_flag_reader flags(argc, argv, 2);
  text::go_flag_reader::flag f;
  for (;;) {
    const auto step = flags.next(f);
    if (step == text::go_flag_reader::step::end) break;
    if (step == text::go_flag_reader::step::bad_syntax) {
      message = "bad flag syntax: " + f.raw + "\n" + usage_text;
      return parse_result::exit_usage_error;
    }
    const std::string& name = f.name;
    const std::optional<std::string>& value = f.value;
    if (name == "h" || name == "help") {
      message = std::string(usage_text) + environment_text;
      return parse_result::exit_ok;
    }
    // Go's boolean flags: bare, or =true/=false in strconv.ParseBool's spellings.
    bool* boolean = name == "require-auth-token"       ? &require_token
                    : name == "native-test-supervisor" ? &out.native.supervisor
                    : name == "native-check"           ? &out.native.check_only
                                                       : nullptr;
    if (boolean != nullptr) {
      if (!value || *value == "true" || *value == "1" || *value == "t" || *value == "TRUE" ||
          *value == "True" || *value == "T") {
        *boolean = true;
      } else if (*value == "false" || *value == "0" || *value == "f" || *value == "FALSE" ||
                 *value == "False" || *value == "F") {
        *boolean = false;
      } else {
        message = "invalid boolean value \"" + *value + "\" for -" + name + "\n" + usage_text;
        return parse_result::exit_usage_error;
      }
      continue;
    }
    if (name != "listen" && name != "state-dir" && name != "token" && name != "log-format" &&
        name != "log-level" && name != "cgroup-root" && name != "native-base-root" &&
        name != "native-input-root" && name != "native-image-root" && name != "native-mediator") {
      message = "flag provided but not defined: -" + name + "\n" + usage_text;
      return parse_result::exit_usage_error;
    }
    if (!flags.take_value(f)) {
      message = "flag needs an argument: -" + name + "\n" + usage_text;
      return parse_result::exit_usage_error;
    }
    if (name == "listen") listen = value;
    if (name == "state-dir") state_dir = value;
    if (name == "token") token = value;
    if (name == "cgroup-root") cgroup_root = value;
    if (name.rfind("native-", 0) == 0) native_flags[name] = *value;
    if (name == "log-format") {
      if (*value != "text" && *value != "json") {
        message = "invalid value \"" + *value + "\" for flag -log-format: want text or json\n" +
                  usage_text;
        return parse_result::exit_usage_error;
      }
      out.log_format = *value;
    }
    if (name == "log-level") {
      static const char* levels[] = {"debug", "info", "warn", "error"};
      int found = -1;
      for (int i = 0; i < 4; ++i)
        if (*value == levels[i]) found = i;
      if (found < 0) {
        message = "invalid value \"" + *value +
                  "\" for flag -log-level: want debug, info, warn or error\n" + usage_text;
        return parse_result::exit_usage_error;
      }
      out.log_level = found;
    }
  }

  if (!parse_listen(listen.value_or("127.0.0.1:8765"), out, message))
    return parse_result::exit_config_error;

  out.home = env.count("HOME") ? env["HOME"] : "";
  if (state_dir && !state_dir->empty()) {
    out.state_dir = *state_dir;
  } else if (env.count("XDG_DATA_HOME") && !env["XDG_DATA_HOME"].empty()) {
    out.state_dir = env["XDG_DATA_HOME"] + "/shellctl";
  } else if (!out.home.empty()) {
    out.state_dir = out.home + "/.local/share/shellctl";
  } else {
    message = "shellctl: config: cannot choose a state directory: HOME is not set "
              "(use --state-dir)\n";
    return parse_result::exit_config_error;
  }

  // Decision D2: a non-empty --token wins; values are used unchanged.
  out.token = token && !token->empty() ? *token
                                       : (env.count("SHELLCTL_AUTH_TOKEN") ? env["SHELLCTL_AUTH_TOKEN"] : "");
  if (require_token && blank(out.token)) {
    message = "shellctl: config: --require-auth-token: no non-blank token configured "
              "(--token or SHELLCTL_AUTH_TOKEN)\n";
    return parse_result::exit_config_error;
  }

  out.max_connections = default_max_connections();
  if (!duration_setting(env, "SHELLCTL_SNAPSHOT_TIMEOUT", out.snapshot_timeout, message) ||
      !duration_setting(env, "SHELLCTL_RESULT_RETENTION", out.retention, message) ||
      !duration_setting(env, "SHELLCTL_GC_INTERVAL", out.gc_interval, message) ||
      !duration_setting(env, "SHELLCTL_HTTP_HEAD_TIMEOUT", out.head_timeout, message) ||
      !count_setting(env, "SHELLCTL_HTTP_MAX_CONNECTIONS", out.max_connections, message) ||
      !count_setting(env, "SHELLCTL_HTTP_MAX_BUFFERED_BYTES", out.max_buffered_bytes, message))
    return parse_result::exit_config_error;

  for (const char* name : {"SHELLCTL_ENABLE_PATH_ISOLATION", "SHELLCTL_LANDLOCK_RW_PATHS",
                           "SHELLCTL_LANDLOCK_RO_PATHS", "SHELLCTL_LANDLOCK_RW_DEV_PATHS",
                           "SHELLCTL_JOB_NAMESPACES"}) {
    auto it = env.find(name);
    if (it == env.end()) continue;
    // They travel on a tmux command line: a control character there is a mistake.
    for (unsigned char c : it->second)
      if (c < 0x20 || c == 0x7f) {
        message = std::string("shellctl: config: ") + name + ": control characters are not allowed\n";
        return parse_result::exit_config_error;
      }
    out.isolation_env.emplace_back(name, it->second);
  }
  if (auto oom = env.find("SHELLCTL_JOB_OOM_SCORE_ADJ"); oom != env.end() && !blank(oom->second)) {
    char* end = nullptr;
    errno = 0;
    const long v = std::strtol(oom->second.c_str(), &end, 10);
    if (errno != 0 || end == oom->second.c_str() || *end != '\0' || v < -1000 || v > 1000) {
      message = "shellctl: config: SHELLCTL_JOB_OOM_SCORE_ADJ: must be an integer from -1000 to 1000, got \"" +
                oom->second + "\"\n";
      return parse_result::exit_config_error;
    }
    out.job_oom_score_adj = static_cast<int>(v);
  }
  auto iso = env.find("SHELLCTL_ENABLE_PATH_ISOLATION");
  out.isolation = iso == env.end() || iso->second == "true";
  auto ns = env.find("SHELLCTL_JOB_NAMESPACES");
  if (ns != env.end() && ns->second != "auto" && ns->second != "off" && !ns->second.empty()) {
    message = "shellctl: config: SHELLCTL_JOB_NAMESPACES: must be \"auto\" or \"off\", got \"" +
              ns->second + "\"\n";
    return parse_result::exit_config_error;
  }
  out.namespaces = ns == env.end() || ns->second != "off";
  if (!out.namespaces && out.isolation) {
    message = "shellctl: config: SHELLCTL_JOB_NAMESPACES=off needs "
              "SHELLCTL_ENABLE_PATH_ISOLATION=false: path isolation runs every job in its own "
              "namespaces\n";
    return parse_result::exit_config_error;
  }
  // The cgroup root (docs/jobs.md "Containment"): a non-empty flag wins over the environment,
  // as --token does.
  out.cgroup_root = cgroup_root && !cgroup_root->empty()
                        ? *cgroup_root
                        : (env.count("SHELLCTL_CGROUP_ROOT") ? env["SHELLCTL_CGROUP_ROOT"] : "");
  if (blank(out.cgroup_root)) out.cgroup_root.clear();
  if (!out.cgroup_root.empty() && out.cgroup_root != "none" && out.cgroup_root[0] != '/') {
    message = "shellctl: config: cgroup root \"" + out.cgroup_root +
              "\": must be an absolute path or \"none\"\n";
    return parse_result::exit_config_error;
  }
  struct limit_setting {
    const char* name;
    std::string* value;
    bool (*valid)(const std::string&);
    const char* syntax;
  };
  const limit_setting limits[] = {
      {"SHELLCTL_JOB_MEMORY_MAX", &out.job_limits.memory_max, sandbox::cgroups::valid_memory_max,
       "\"max\" or bytes with an optional K, M, G or T suffix"},
      {"SHELLCTL_JOB_PIDS_MAX", &out.job_limits.pids_max, sandbox::cgroups::valid_pids_max,
       "\"max\" or a positive number of processes"},
      {"SHELLCTL_JOB_CPU_MAX", &out.job_limits.cpu_max, sandbox::cgroups::valid_cpu_max,
       "\"QUOTA PERIOD\" in microseconds (QUOTA may be \"max\"), e.g. \"50000 100000\""},
  };
  for (const auto& l : limits) {
    auto it = env.find(l.name);
    if (it == env.end() || blank(it->second)) continue;
    if (!l.valid(it->second)) {
      message = std::string("shellctl: config: ") + l.name + ": must be " + l.syntax + ", got \"" +
                it->second + "\"\n";
      return parse_result::exit_config_error;
    }
    *l.value = it->second;
  }
  return parse_native(env, native_flags, out, message) ? parse_result::run
                                                       : parse_result::exit_config_error;
}

}  // namespace shellctl::io::config
