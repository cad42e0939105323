#include "bin/dify-agent/cli.hpp"

#include <cstdio>

#include "bin/dify-agent/environment.hpp"
#include "bin/dify-agent/client/http_transfer.hpp"

namespace shellctl::dify_agent {

namespace {

bool known_root_command(const std::string& s) {
  return s == "config" || s == "connect" || s == "file" || s == "drive" ||
         s == "home-snapshot" || s == "knowledge";
}

void print_root_help() {
  const std::string h = make_root_command()->help();
  std::fwrite(h.data(), 1, h.size(), stdout);
  std::fflush(stdout);
}

}  // namespace

void print_line(const std::string& s) {
  std::fwrite(s.data(), 1, s.size(), stdout);
  std::fputc('\n', stdout);
  std::fflush(stdout);
}

std::unique_ptr<command> make_root_command() {
  auto root = std::make_unique<command>(
      "dify-agent", "Forward shell-visible dify-agent commands to the Dify Agent Stub server.");
  root->add(make_connect_command());
  root->add(make_file_command());
  root->add(make_drive_command());
  root->add(make_config_command());
  root->add(make_home_snapshot_command());
  root->add(make_knowledge_command());
  return root;
}

int run_cli(const std::vector<std::string>& args) {
  cancel_on_signals();
  try {
    // Every binary of ours answers --version (docs/layout.md "The binaries"); the original had no
    // such flag, and the help (which the agent backend injects) does not list it.
    if (args.size() == 1 && args[0] == "--version") {
      std::fputs("dify-agent " SHELLCTL_VERSION "\n", stdout);
      return 0;
    }
    if (args.size() == 1 && args[0] == "__dump-cli-help") {
      const std::string j = make_root_command()->help_json();
      std::fwrite(j.data(), 1, j.size(), stdout);
      return 0;
    }
    // connect forwards its argv verbatim: no flag parsing unless help is asked for.
    if (!args.empty() && args[0] == "connect") {
      bool help = false;
      for (std::size_t i = 1; i < args.size(); ++i) help = help || args[i] == "--help" || args[i] == "-h";
      if (!help) {
        std::vector<std::string> rest(args.begin() + 1, args.end());
        bool json_output = false;
        if (!rest.empty() && rest[0] == "--json") {
          json_output = true;
          rest.erase(rest.begin());
        }
        if (!rest.empty() && rest[0] == "--") rest.erase(rest.begin());
        run_connect(rest, json_output);
        return 0;
      }
    }
    std::vector<std::string> forwarded = args;
    bool json_output = false;
    if (forwarded.size() >= 2 && forwarded[0] == "--json" && !known_root_command(forwarded[1])) {
      json_output = true;
      forwarded.erase(forwarded.begin());
    }
    if (!forwarded.empty() && !known_root_command(forwarded[0]) && forwarded[0].rfind("-", 0) != 0) {
      // As the Python CLI did: the root help first when the environment is missing, then the
      // connect attempt that reports it.
      if (!has_environment()) print_root_help();
      run_connect(forwarded, json_output);
      return 0;
    }
    make_root_command()->execute(args);
    std::fflush(stdout);
    return 0;
  } catch (const cli_error& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "dify-agent: %s\n", e.message.c_str());
    return 1;
  }
}

}  // namespace shellctl::dify_agent
