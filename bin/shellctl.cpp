// shellctl serve: parses flags and environment, then hands over to actors::serve.
#include <sys/prctl.h>

#include <csignal>
#include <cstdio>
#include <cstring>
#include <string_view>

#include "actors/wiring/native_supervisor.hpp"
#include "actors/wiring/native_worker.hpp"
#include "actors/wiring/serve.hpp"
#include "io/config/serve_config.hpp"
#include "io/sandbox/namespaces.hpp"

extern char** environ;

namespace {

// Guarantee G2: once read, the bearer token is overwritten where other processes of the
// same user could read it, /proc/<pid>/cmdline (argv) and /proc/<pid>/environ (the
// initial environment block, which unsetenv() would not touch). Values are kept at their
// length so the argument layout stays as it was.
void scrub(char* value) {
  for (char* c = value; *c != '\0'; ++c) *c = 'x';
}

void scrub_token(int argc, char** argv, char** envp) {
  for (int i = 2; i < argc; ++i) {
    std::string_view a = argv[i];
    if (a == "--") break;
    for (std::string_view name : {"-token", "--token"}) {
      if (a == name && i + 1 < argc) scrub(argv[i + 1]);
      if (a.size() > name.size() && a.substr(0, name.size()) == name && a[name.size()] == '=')
        scrub(argv[i] + name.size() + 1);
    }
  }
  static const char kEnvName[] = "SHELLCTL_AUTH_TOKEN=";
  for (char** e = envp; e != nullptr && *e != nullptr; ++e)
    if (std::strncmp(*e, kEnvName, sizeof kEnvName - 1) == 0) scrub(*e + sizeof kEnvName - 1);
}

}  // namespace

int main(int argc, char** argv) {
  std::signal(SIGPIPE, SIG_IGN);  // a vanished peer is an error return, not a death
  // A native scope's worker, started by its supervisor (docs/native-scopes.md "The scope worker").
  if (argc >= 2 && std::string_view(argv[1]) == "native-worker")
    return shellctl::actors::native_worker_main(argc - 1, argv + 1);
  if (argc >= 2 && std::string_view(argv[1]) == "native-budget")
    return shellctl::actors::native_budget_main(argc - 1, argv + 1);
  shellctl::io::config::serve_config cfg;
  std::string message;
  using shellctl::io::config::parse_result;
  char** envp = environ;  // the initial block, before anything can reallocate it
  const auto result = shellctl::io::config::parse_serve(argc, argv, environ, cfg, message);
  // Probed before any thread exists (it forks) and while the process is still dumpable: a
  // non-dumpable probe child cannot be mapped by a non-root server, though the runner's
  // children can. This exposes nothing new: until the prctl below and the scrub, the token
  // is readable in argv or environ anyway.
  shellctl::io::sandbox::namespace_probe probe;
  if (result == parse_result::run && !cfg.native.supervisor) probe = shellctl::actors::probe_job_sandbox(cfg);
  // Not dumpable: processes of the same user can neither ptrace this one nor read its
  // memory or environment through /proc (the token lives in memory).
  ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  scrub_token(argc, argv, envp);
  switch (result) {
    case parse_result::run:
      if (cfg.native.supervisor) return shellctl::actors::serve_native(cfg);
      return shellctl::actors::serve(cfg, probe);
    case parse_result::exit_ok:
      std::fputs(message.c_str(), stderr);
      return 0;
    case parse_result::print_version:
      std::fputs(message.c_str(), stdout);
      return 0;
    case parse_result::exit_usage_error:
      std::fputs(message.c_str(), stderr);
      return 2;
    case parse_result::exit_config_error:
      std::fputs(message.c_str(), stderr);
      return 1;
  }
  return 1;
}
