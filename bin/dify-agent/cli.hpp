#pragma once
// `dify-agent`: the command tree and its help texts (docs/dify-agent.md) and the pre-dispatch
// that runs before it (help dump, verbatim connect, implicit connect).
#include <memory>
#include <string>
#include <vector>

#include "bin/dify-agent/command_tree.hpp"

namespace shellctl::dify_agent {

std::unique_ptr<command> make_root_command();

// Each part of the tree (one file each).
std::unique_ptr<command> make_connect_command();
std::unique_ptr<command> make_file_command();
std::unique_ptr<command> make_config_command();
std::unique_ptr<command> make_knowledge_command();
std::unique_ptr<command> make_home_snapshot_command();
std::unique_ptr<command> make_drive_command();

// connect's action, shared by the explicit, verbatim and implicit forms.
void run_connect(const std::vector<std::string>& argv, bool json_output);

// Runs argv (without the program name); returns the exit code (errors printed).
int run_cli(const std::vector<std::string>& args);

// Shared output helpers: a line on stdout (flushed, so it comes before a later error).
void print_line(const std::string& s);

}  // namespace shellctl::dify_agent
