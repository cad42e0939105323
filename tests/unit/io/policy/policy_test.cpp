// Path-isolation policy: environment parsing (D7) and the child's command-line form.
#include "io/policy/policy.hpp"

#include <doctest/doctest.h>

#include <map>
#include <string>
#include <vector>

namespace policy = shellctl::io::policy;
using strings = std::vector<std::string>;

namespace {

policy::path_policy from(const std::map<std::string, std::string>& env) {
  return policy::policy_from_env([&](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  });
}

}  // namespace

TEST_CASE("split_path_list trims and drops empty entries") {
  CHECK(policy::split_path_list("") == strings{});
  CHECK(policy::split_path_list(" , ,") == strings{});
  CHECK(policy::split_path_list("/a") == strings{"/a"});
  CHECK(policy::split_path_list(" /a , /b c ,,\t/d\n") == strings{"/a", "/b c", "/d"});
}

TEST_CASE("defaults") {
  const auto p = from({});
  CHECK(p.isolation);
  CHECK(p.rw_dirs.empty());
  CHECK(p.ro_dirs == strings{"/usr", "/bin", "/sbin", "/lib", "/lib64", "/etc", "/proc",
                             "/opt/dify-agent-tools", "/opt/homebrew", "/snap"});
  CHECK(p.rw_files == strings{"/dev/null", "/dev/zero", "/dev/urandom", "/dev/random", "/dev/tty"});
}

TEST_CASE("isolation switch: unset = on, else only exactly 'true'") {
  CHECK(from({{"SHELLCTL_ENABLE_PATH_ISOLATION", "true"}}).isolation);
  for (const char* v : {"false", "", "True", "TRUE", "1", "yes", " true"}) {
    CAPTURE(std::string(v));
    CHECK_FALSE(from({{"SHELLCTL_ENABLE_PATH_ISOLATION", v}}).isolation);
  }
}

TEST_CASE("a set variable, even empty, replaces its default") {
  const auto p = from({{"SHELLCTL_LANDLOCK_RW_PATHS", "/srv/a, /srv/b"},
                       {"SHELLCTL_LANDLOCK_RO_PATHS", ""},
                       {"SHELLCTL_LANDLOCK_RW_DEV_PATHS", " /dev/null "}});
  CHECK(p.rw_dirs == strings{"/srv/a", "/srv/b"});
  CHECK(p.ro_dirs.empty());
  CHECK(p.rw_files == strings{"/dev/null"});
  // Unprefixed legacy names are not read.
  CHECK(from({{"LANDLOCK_RW_PATHS", "/"}}).rw_dirs.empty());
}

TEST_CASE("policy travels on the child's command line") {
  const auto p =
      from({{"SHELLCTL_LANDLOCK_RW_PATHS", "/x,/y"}, {"SHELLCTL_LANDLOCK_RO_PATHS", ""}});
  auto args = policy::policy_to_args(p);
  CHECK(args == strings{"--landlock", "--rw", "/x,/y", "--ro", "", "--dev",
                        "/dev/null,/dev/zero,/dev/urandom,/dev/random,/dev/tty"});
  args.insert(args.end(), {"--", "/job/script", "/cwd"});
  std::string err;
  const auto parsed = policy::parse_exec_args(args, err);
  REQUIRE(parsed);
  CHECK(parsed->policy.isolation);
  CHECK(parsed->policy.rw_dirs == p.rw_dirs);
  CHECK(parsed->policy.ro_dirs.empty());
  CHECK(parsed->policy.rw_files == p.rw_files);
  CHECK(parsed->script == "/job/script");
  CHECK(parsed->cwd == "/cwd");

  CHECK(policy::policy_to_args(from({{"SHELLCTL_ENABLE_PATH_ISOLATION", "false"}})).empty());
}

TEST_CASE("legacy child forms keep working") {
  std::string err;
  auto parsed = policy::parse_exec_args({"--landlock", "/job/script", "/cwd"}, err);
  REQUIRE(parsed);
  CHECK(parsed->policy.isolation);
  CHECK(parsed->policy.ro_dirs == policy::default_policy().ro_dirs);
  CHECK(parsed->policy.rw_files == policy::default_policy().rw_files);
  parsed = policy::parse_exec_args({"/job/script", "/cwd"}, err);
  REQUIRE(parsed);
  CHECK_FALSE(parsed->policy.isolation);
  CHECK(parsed->script == "/job/script");
}

TEST_CASE("bad child arguments") {
  std::string err;
  CHECK_FALSE(policy::parse_exec_args({}, err));
  CHECK_FALSE(policy::parse_exec_args({"/job/script"}, err));
  CHECK_FALSE(policy::parse_exec_args({"--landlock", "/job/script"}, err));
  CHECK_FALSE(policy::parse_exec_args({"--rw"}, err));
  CHECK_FALSE(policy::parse_exec_args({"--", "/job/script"}, err));
}
