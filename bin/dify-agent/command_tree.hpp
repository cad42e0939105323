#pragma once
// The command tree of `dify-agent`: the subset of cobra and pflag the original CLI uses,
// reproduced where a user (or the agent's system prompt, which embeds the help) can tell.
// Commands with a use line, a short text, flags (bool, string, int, string array; hidden
// ones too), an argument rule and an action; flag parsing with pflag's syntax and error
// texts; help rendered with cobra's default templates; the help JSON of `__dump-cli-help`.
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "io/text/go_quote.hpp"

namespace shellctl::dify_agent {

// Any failure a command reports: printed as `dify-agent: <message>`, exit 1.
struct cli_error {
  std::string message;
};

using io::text::go_quote;  // Go's %q, for the original's messages

enum class flag_kind { boolean, string, integer, string_array };

struct flag_spec {
  std::string name;
  char shorthand = 0;
  flag_kind kind = flag_kind::string;
  std::string usage;
  std::string default_value;  // as pflag prints it ("" / "false" / "0" mean none)
  bool hidden = false;
};

// The values after parsing: every flag of the command has one (its default if not given).
class flag_values {
 public:
  bool boolean(const std::string& name) const;
  const std::string& text(const std::string& name) const;
  long long integer(const std::string& name) const;
  const std::vector<std::string>& list(const std::string& name) const;
  bool changed(const std::string& name) const { return changed_.count(name) != 0; }
  // Whether the command defines the flag at all.
  bool has(const std::string& name) const { return values_.count(name) || lists_.count(name); }

 private:
  friend class command;
  std::map<std::string, std::string> values_;
  std::map<std::string, std::vector<std::string>> lists_;
  std::map<std::string, bool> changed_;
};

enum class arg_rule { arbitrary, none, exactly, at_least, at_most };

struct invocation;
using action = std::function<void(const invocation&)>;

class command {
 public:
  command(std::string use, std::string short_text) : use_(std::move(use)), short_(std::move(short_text)) {}

  command& hidden() { hidden_ = true; return *this; }
  command& args(arg_rule rule, int n = 0) { rule_ = rule; arg_count_ = n; return *this; }
  command& flag(flag_spec f) { flags_.push_back(std::move(f)); return *this; }
  command& run(action a) { action_ = std::move(a); return *this; }
  command& add(std::unique_ptr<command> child);

  std::string name() const;
  std::string path() const;  // "dify-agent config note pull"
  bool is_hidden() const { return hidden_; }
  bool runnable() const { return static_cast<bool>(action_); }
  const std::vector<std::unique_ptr<command>>& children() const { return children_; }

  // Exactly what `<path> --help` prints (cobra's default help template).
  std::string help() const;

  // Runs the command line `args` (argv without the program name) as cobra's Execute would:
  // finds the subcommand, parses its flags, checks the argument rule, then runs the action
  // or prints help on stdout. Throws cli_error.
  void execute(const std::vector<std::string>& args) const;

  // `__dump-cli-help`: every visible command below this one, keyed by its path without the
  // root's name, valued by its help without trailing newlines; Go's MarshalIndent layout.
  std::string help_json() const;

 private:
  const command* find(std::vector<std::string>& args) const;
  const flag_spec* long_flag(const std::string& name) const;
  const flag_spec* short_flag(char c) const;
  flag_values parse_flags(const std::vector<std::string>& args,
                          std::vector<std::string>& positional) const;
  std::vector<flag_spec> all_flags() const;  // ours plus the implicit -h/--help
  void check_args(const std::vector<std::string>& positional) const;
  void collect_help(std::map<std::string, std::string>& out, const std::string& root) const;

  std::string use_, short_;
  bool hidden_ = false;
  arg_rule rule_ = arg_rule::arbitrary;
  int arg_count_ = 0;
  std::vector<flag_spec> flags_;
  action action_;
  std::vector<std::unique_ptr<command>> children_;
  command* parent_ = nullptr;
};

struct invocation {
  const command& cmd;
  std::vector<std::string> args;
  flag_values flags;
};

}  // namespace shellctl::dify_agent
