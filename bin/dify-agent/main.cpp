// dify-agent: the CLI inside the sandbox that talks to the Agent Stub (docs/dify-agent.md).
#include <csignal>
#include <string>
#include <vector>

#include "bin/dify-agent/cli.hpp"

int main(int argc, char** argv) {
  std::signal(SIGPIPE, SIG_IGN);  // a closed pipe or peer is an error return, not a death
  return shellctl::dify_agent::run_cli(std::vector<std::string>(argv + 1, argv + argc));
}
