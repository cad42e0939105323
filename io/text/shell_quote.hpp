#pragma once
// Quoting for the shell strings tmux runs (docs/jobs.md "Starting a job"): each word in single
// quotes, a ' inside a word becomes '\''.
#include <string>
#include <string_view>
#include <vector>

namespace shellctl::io::text {

std::string sh_quote(std::string_view word);
std::string sh_join(const std::vector<std::string>& words);

}  // namespace shellctl::io::text
