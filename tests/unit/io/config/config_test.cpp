// `shellctl serve` flags and environment (docs/layout.md "Settings", decisions D1, D2, D7, D10).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "io/config/serve_config.hpp"

using namespace shellctl::io::config;

namespace {
struct outcome {
  parse_result result;
  serve_config cfg;
  std::string message;
};

outcome parse(std::vector<std::string> args, std::vector<std::string> env) {
  std::vector<char*> argv;
  args.insert(args.begin(), "shellctl");
  for (auto& a : args) argv.push_back(a.data());
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  outcome o;
  o.result = parse_serve(static_cast<int>(argv.size()), argv.data(), envp.data(), o.cfg, o.message);
  return o;
}
}  // namespace

TEST_CASE("defaults") {
  auto o = parse({"serve"}, {"HOME=/home/u"});
  REQUIRE(o.result == parse_result::run);
  CHECK(o.cfg.listen_host == "127.0.0.1");
  CHECK(o.cfg.listen_port == 8765);
  CHECK(o.cfg.state_dir == "/home/u/.local/share/shellctl");
  CHECK(o.cfg.token.empty());
  CHECK(o.cfg.retention == std::chrono::hours(24));
  CHECK(o.cfg.gc_interval == std::chrono::seconds(60));
  CHECK(o.cfg.snapshot_timeout == std::chrono::seconds(45));
}

TEST_CASE("no serve subcommand prints usage and exits 0; -h too") {
  CHECK(parse({}, {}).result == parse_result::exit_ok);
  CHECK(parse({"run"}, {}).result == parse_result::exit_ok);
  auto h = parse({"serve", "-h"}, {"HOME=/h"});
  CHECK(h.result == parse_result::exit_ok);
  CHECK(h.message.find("-listen") != std::string::npos);
}

TEST_CASE("Go flag syntax") {
  auto o = parse({"serve", "--listen=0.0.0.0:5004", "-state-dir", "/s", "--token", "t"},
                 {"HOME=/h"});
  REQUIRE(o.result == parse_result::run);
  CHECK(o.cfg.listen_host == "0.0.0.0");
  CHECK(o.cfg.listen_port == 5004);
  CHECK(o.cfg.state_dir == "/s");
  CHECK(o.cfg.token == "t");
  CHECK(parse({"serve", "--bogus"}, {"HOME=/h"}).result == parse_result::exit_usage_error);
  CHECK(parse({"serve", "--listen"}, {"HOME=/h"}).result == parse_result::exit_usage_error);
  CHECK(parse({"serve", "--listen", "nope"}, {"HOME=/h"}).result ==
        parse_result::exit_config_error);
  auto v6 = parse({"serve", "--listen", "[::1]:9000"}, {"HOME=/h"});
  CHECK(v6.cfg.listen_host == "::1");
}

TEST_CASE("state dir: flag, then XDG_DATA_HOME, then HOME") {
  CHECK(parse({"serve"}, {"HOME=/h", "XDG_DATA_HOME=/x"}).cfg.state_dir == "/x/shellctl");
  CHECK(parse({"serve", "--state-dir", "/s"}, {"HOME=/h", "XDG_DATA_HOME=/x"}).cfg.state_dir ==
        "/s");
}

TEST_CASE("token: non-empty flag wins, env otherwise; --require-auth-token") {
  CHECK(parse({"serve", "--token", "f"}, {"HOME=/h", "SHELLCTL_AUTH_TOKEN=e"}).cfg.token == "f");
  CHECK(parse({"serve", "--token", ""}, {"HOME=/h", "SHELLCTL_AUTH_TOKEN=e"}).cfg.token == "e");
  CHECK(parse({"serve", "--require-auth-token"}, {"HOME=/h"}).result ==
        parse_result::exit_config_error);
  CHECK(parse({"serve", "--require-auth-token"}, {"HOME=/h", "SHELLCTL_AUTH_TOKEN= \t"}).result ==
        parse_result::exit_config_error);
  auto ok = parse({"serve", "--require-auth-token"}, {"HOME=/h", "SHELLCTL_AUTH_TOKEN= x "});
  CHECK(ok.result == parse_result::run);
  CHECK(ok.cfg.token == " x ");  // used unchanged
}

TEST_CASE("duration settings: Go syntax, bad or non-positive values refuse startup") {
  auto o = parse({"serve"}, {"HOME=/h", "SHELLCTL_RESULT_RETENTION=1h30m", "SHELLCTL_GC_INTERVAL=90s"});
  REQUIRE(o.result == parse_result::run);
  CHECK(o.cfg.retention == std::chrono::minutes(90));
  CHECK(o.cfg.gc_interval == std::chrono::seconds(90));
  for (auto bad : {"SHELLCTL_RESULT_RETENTION=soon", "SHELLCTL_RESULT_RETENTION=0",
                   "SHELLCTL_GC_INTERVAL=-1s", "SHELLCTL_SNAPSHOT_TIMEOUT=10"}) {
    auto b = parse({"serve"}, {"HOME=/h", bad});
    CAPTURE(bad);
    CHECK(b.result == parse_result::exit_config_error);
    CHECK(b.message.rfind("shellctl: config: ", 0) == 0);
  }
  CHECK(parse({"serve"}, {"HOME=/h", "SHELLCTL_GC_INTERVAL=  "}).result == parse_result::run);
}

TEST_CASE("tmux environment drops TMUX* and SHELLCTL_* (D10); isolation settings kept apart (D7)") {
  auto o = parse({"serve"}, {"HOME=/h", "PATH=/bin", "TMUX=/x,1,2", "TMUX_PANE=%1",
                             "SHELLCTL_AUTH_TOKEN=t", "SHELLCTL_LANDLOCK_RO_PATHS=/usr",
                             "SHELLCTL_ENABLE_PATH_ISOLATION=false"});
  CHECK(o.cfg.tmux_env == std::vector<std::string>{"HOME=/h", "PATH=/bin"});
  REQUIRE(o.cfg.isolation_env.size() == 2);
  CHECK(o.cfg.isolation_env[0].first == "SHELLCTL_ENABLE_PATH_ISOLATION");
  CHECK(o.cfg.isolation_env[1] ==
        std::make_pair(std::string("SHELLCTL_LANDLOCK_RO_PATHS"), std::string("/usr")));
}

TEST_CASE("cgroup root: a non-empty flag wins over SHELLCTL_CGROUP_ROOT; none; absolute only") {
  CHECK(parse({"serve"}, {"HOME=/h"}).cfg.cgroup_root.empty());  // detect
  CHECK(parse({"serve"}, {"HOME=/h", "SHELLCTL_CGROUP_ROOT=/sys/fs/cgroup/x"}).cfg.cgroup_root ==
        "/sys/fs/cgroup/x");
  CHECK(parse({"serve", "--cgroup-root", "/a"}, {"HOME=/h", "SHELLCTL_CGROUP_ROOT=/b"}).cfg.cgroup_root == "/a");
  CHECK(parse({"serve", "-cgroup-root=none"}, {"HOME=/h"}).cfg.cgroup_root == "none");
  CHECK(parse({"serve", "--cgroup-root="}, {"HOME=/h", "SHELLCTL_CGROUP_ROOT=/b"}).cfg.cgroup_root == "/b");
  CHECK(parse({"serve"}, {"HOME=/h", "SHELLCTL_CGROUP_ROOT=  "}).cfg.cgroup_root.empty());
  auto rel = parse({"serve", "--cgroup-root", "sys/fs"}, {"HOME=/h"});
  CHECK(rel.result == parse_result::exit_config_error);
  CHECK(rel.message.find("must be an absolute path") != std::string::npos);
  // The SHELLCTL_* names never reach tmux (D10).
  for (auto& e : parse({"serve"}, {"HOME=/h", "SHELLCTL_CGROUP_ROOT=/b"}).cfg.tmux_env)
    CHECK(e.rfind("SHELLCTL_", 0) != 0);
}

TEST_CASE("per-job limits: cgroup syntax checked at startup") {
  auto ok = parse({"serve"}, {"HOME=/h", "SHELLCTL_JOB_MEMORY_MAX=512M", "SHELLCTL_JOB_PIDS_MAX=max",
                              "SHELLCTL_JOB_CPU_MAX=50000 100000"});
  REQUIRE(ok.result == parse_result::run);
  CHECK(ok.cfg.job_limits.memory_max == "512M");
  CHECK(ok.cfg.job_limits.pids_max == "max");
  CHECK(ok.cfg.job_limits.cpu_max == "50000 100000");
  CHECK(ok.cfg.job_limits.any());
  CHECK_FALSE(parse({"serve"}, {"HOME=/h"}).cfg.job_limits.any());
  for (const char* bad : {"SHELLCTL_JOB_MEMORY_MAX=lots", "SHELLCTL_JOB_MEMORY_MAX=-1",
                          "SHELLCTL_JOB_MEMORY_MAX=1.5G", "SHELLCTL_JOB_PIDS_MAX=0",
                          "SHELLCTL_JOB_PIDS_MAX=12k", "SHELLCTL_JOB_CPU_MAX=half",
                          "SHELLCTL_JOB_CPU_MAX=50000 ", "SHELLCTL_JOB_CPU_MAX=max 0"}) {
    CAPTURE(bad);
    auto o = parse({"serve"}, {"HOME=/h", bad});
    CHECK(o.result == parse_result::exit_config_error);
    CHECK(o.message.find("must be") != std::string::npos);
  }
  CHECK(parse({"serve"}, {"HOME=/h", "SHELLCTL_JOB_MEMORY_MAX=max", "SHELLCTL_JOB_CPU_MAX=max",
                          "SHELLCTL_JOB_PIDS_MAX=1"}).result == parse_result::run);
}

TEST_CASE("native test supervisor settings (docs/native-scopes.md)") {
  auto n = parse({"serve", "--native-test-supervisor", "--native-base-root", "/srv/base",
                  "-native-input-root=/srv/in", "--native-mediator", "10.0.2.2:8080"},
                 {"HOME=/h", "SHELLCTL_NATIVE_CGROUP=/dify-native.service"});
  REQUIRE(n.result == parse_result::run);
  CHECK(n.cfg.native.supervisor);
  CHECK_FALSE(n.cfg.native.check_only);
  CHECK(n.cfg.native.base_root == "/srv/base");
  CHECK(n.cfg.native.input_root == "/srv/in");
  CHECK(n.cfg.native.image_root == "/");
  CHECK(n.cfg.native.unit_cgroup == "/dify-native.service");
  CHECK(n.cfg.native.mediator == "10.0.2.2:8080");
  CHECK(n.cfg.native.max_scopes == 16);
  // The environment when a flag is empty; --native-check with the mode.
  auto e = parse({"serve", "--native-test-supervisor", "--native-check"},
                 {"HOME=/h", "SHELLCTL_NATIVE_BASE_ROOT=/b", "SHELLCTL_NATIVE_MEDIATOR=[fd00::1]:443",
                  "SHELLCTL_NATIVE_MAX_SCOPES=4", "SHELLCTL_NATIVE_MAX_DEADLINE=2h"});
  REQUIRE(e.result == parse_result::run);
  CHECK(e.cfg.native.check_only);
  CHECK(e.cfg.native.base_root == "/b");
  CHECK(e.cfg.native.mediator == "[fd00::1]:443");
  CHECK(e.cfg.native.max_scopes == 4);
  CHECK(e.cfg.native.max_deadline == std::chrono::hours(2));
  // An ordinary server refuses them: it must not look as if it served scopes.
  for (auto bad : std::vector<std::vector<std::string>>{{"serve", "--native-check"},
                                                        {"serve", "--native-base-root", "/b"}}) {
    auto o = parse(bad, {"HOME=/h"});
    CHECK(o.result == parse_result::exit_config_error);
    CHECK(o.message.find("needs -native-test-supervisor") != std::string::npos);
  }
  CHECK(parse({"serve"}, {"HOME=/h", "SHELLCTL_NATIVE_INPUT_ROOT=/i"}).result ==
        parse_result::exit_config_error);
  for (const char* m : {"example.com:80", "10.0.0.1", "10.0.0.1:0", "10.0.0.1:65536", "fd00::1:80",
                        "10.0.0.1:8o"}) {
    CAPTURE(m);
    auto o = parse({"serve", "--native-test-supervisor", std::string("--native-mediator=") + m},
                   {"HOME=/h"});
    CHECK(o.result == parse_result::exit_config_error);
    CHECK(o.message.find("must be one IP:port") != std::string::npos);
  }
  CHECK(parse({"serve", "--native-test-supervisor", "--native-base-root", "rel"}, {"HOME=/h"}).result ==
        parse_result::exit_config_error);
  CHECK(parse({"serve", "--native-test-supervisor=maybe"}, {"HOME=/h"}).result ==
        parse_result::exit_usage_error);
}
