// Job environment: filter (D7/D10), `.job-env.json` overlay, forced TMPDIR/TMP/TEMP.
#include "io/proc/job_env.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace proc = shellctl::io::proc;

namespace {

bool has(const std::vector<std::string>& env, const std::string& entry) {
  return std::find(env.begin(), env.end(), entry) != env.end();
}

bool has_name(const std::vector<std::string>& env, const std::string& name) {
  return std::any_of(env.begin(), env.end(),
                     [&](const std::string& e) { return e.rfind(name + "=", 0) == 0; });
}

}  // namespace

TEST_CASE("filtered names") {
  CHECK(proc::is_filtered_name("TMUX"));
  CHECK(proc::is_filtered_name("TMUX_PANE"));
  CHECK(proc::is_filtered_name("SHELLCTL_AUTH_TOKEN"));
  CHECK(proc::is_filtered_name("SHELLCTL_LANDLOCK_RW_PATHS"));
  CHECK(proc::is_filtered_name("SHELLCTL_ENABLE_PATH_ISOLATION"));
  CHECK(proc::is_filtered_name("SHELLCTL_"));
  CHECK_FALSE(proc::is_filtered_name("SHELLCTL"));
  CHECK_FALSE(proc::is_filtered_name("TMUX_TMPDIR"));
  CHECK_FALSE(proc::is_filtered_name("MY_SHELLCTL_X"));
  CHECK_FALSE(proc::is_filtered_name("PATH"));
}

TEST_CASE("build_job_env: filter, overlay, forced temp dirs") {
  const std::vector<std::string> base = {"PATH=/usr/bin:/bin",
                                         "TMUX=/tmp/tmux-0/default,1,0",
                                         "TMUX_PANE=%1",
                                         "SHELLCTL_AUTH_TOKEN=secret",
                                         "SHELLCTL_STATE_DIR=/s",
                                         "LANG=C.UTF-8",
                                         "TMPDIR=/tmp",
                                         "NOEQUALS",
                                         "=weird",
                                         "DUP=1",
                                         "DUP=2",
                                         "EMPTY="};
  const proc::env_pairs overlay = {{"FOO", "bar"},
                                   {"LANG", "en_US.UTF-8"},
                                   {"SHELLCTL_X", "from-request"},
                                   {"TEMP", "/ignored"}};
  const auto env = proc::build_job_env(base, overlay, "/work/dir");
  CHECK(has(env, "PATH=/usr/bin:/bin"));
  CHECK_FALSE(has_name(env, "TMUX"));
  CHECK_FALSE(has_name(env, "TMUX_PANE"));
  CHECK_FALSE(has_name(env, "SHELLCTL_AUTH_TOKEN"));
  CHECK_FALSE(has_name(env, "SHELLCTL_STATE_DIR"));
  CHECK_FALSE(has_name(env, "NOEQUALS"));
  CHECK_FALSE(has(env, "=weird"));
  CHECK(has(env, "DUP=2"));
  CHECK_FALSE(has(env, "DUP=1"));
  CHECK(has(env, "EMPTY="));
  CHECK(has(env, "FOO=bar"));
  CHECK(has(env, "LANG=en_US.UTF-8"));
  // The request may name anything; it only never steers the sandbox policy.
  CHECK(has(env, "SHELLCTL_X=from-request"));
  CHECK(has(env, "TMPDIR=/work/dir"));
  CHECK(has(env, "TMP=/work/dir"));
  CHECK(has(env, "TEMP=/work/dir"));
  // Every name appears once.
  for (const auto& e : env) {
    const auto name = e.substr(0, e.find('='));
    CHECK(std::count_if(env.begin(), env.end(),
                        [&](const std::string& x) { return x.rfind(name + "=", 0) == 0; }) == 1);
  }
}

TEST_CASE("parse_env_json: valid documents") {
  std::string err;
  auto r = proc::parse_env_json(R"({"A":"1","B":"x y","A":"2"})", err);
  REQUIRE(r);
  REQUIRE(r->size() == 3);
  const auto env = proc::build_job_env({}, *r, "/c");
  CHECK(has(env, "A=2"));  // duplicate keys: last wins
  CHECK(has(env, "B=x y"));

  r = proc::parse_env_json(" {} \n", err);
  REQUIRE(r);
  CHECK(r->empty());
  r = proc::parse_env_json("null", err);
  REQUIRE(r);
  CHECK(r->empty());
  r = proc::parse_env_json(R"({"N":null})", err);
  REQUIRE(r);
  CHECK((*r)[0].second.empty());

  r = proc::parse_env_json(R"({"E":"q\"b\\s\/n\nt\tu\u00e9\ud83d\ude00\ud800x"})", err);
  REQUIRE(r);
  CHECK((*r)[0].second == "q\"b\\s/n\nt\tu\xc3\xa9\xf0\x9f\x98\x80\xef\xbf\xbdx");
  r = proc::parse_env_json("{\"U\":\"caf\xc3\xa9\"}", err);
  REQUIRE(r);
  CHECK((*r)[0].second == "caf\xc3\xa9");
}

TEST_CASE("parse_env_json: errors") {
  for (const char* bad :
       {"", "[]", "\"s\"", "{", "{\"A\":1}", "{\"A\":true}", "{\"A\":{}}", "{\"A\":[\"x\"]}",
        "{\"A\":\"1\"} x", "{\"A\" \"1\"}", "{\"A\":\"1\",}", "{A:\"1\"}", "{\"A\":\"\\x\"}",
        "{\"A\":\"\\u12\"}", "{\"A\":\"line\nbreak\"}", "{\"\":\"v\"}", "{\"A=B\":\"v\"}",
        "{\"A\":\"nul\\u0000\"}", "{\"A\":\"unterminated}"}) {
    CAPTURE(std::string(bad));
    std::string err;
    CHECK_FALSE(proc::parse_env_json(bad, err));
    CHECK_FALSE(err.empty());
  }
}
