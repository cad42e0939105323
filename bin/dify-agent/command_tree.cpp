#include "bin/dify-agent/command_tree.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include "io/json/json.hpp"

namespace shellctl::dify_agent {

namespace {

// cobra pads subcommand names to at least this many columns.
constexpr std::size_t min_name_padding = 11;

std::string trim_trailing_whitespace(std::string s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\n' || s.back() == '\t' || s.back() == '\r'))
    s.pop_back();
  return s;
}

bool starts_with(const std::string& s, const char* p) { return s.rfind(p, 0) == 0; }

std::string type_word(flag_kind k) {
  switch (k) {
    case flag_kind::boolean: return "";
    case flag_kind::string: return "string";
    case flag_kind::integer: return "int";
    case flag_kind::string_array: return "stringArray";
  }
  return "";
}

bool zero_default(const flag_spec& f) {
  switch (f.kind) {
    case flag_kind::boolean: return f.default_value.empty() || f.default_value == "false";
    case flag_kind::integer: return f.default_value.empty() || f.default_value == "0";
    case flag_kind::string: return f.default_value.empty();
    case flag_kind::string_array: return true;
  }
  return true;
}

// pflag's FlagUsages: one row per visible flag, sorted by name, the usage column aligned.
std::string flag_usages(std::vector<flag_spec> flags) {
  std::sort(flags.begin(), flags.end(),
            [](const flag_spec& a, const flag_spec& b) { return a.name < b.name; });
  std::vector<std::pair<std::string, std::string>> rows;
  std::size_t widest = 0;
  for (const auto& f : flags) {
    if (f.hidden) continue;
    std::string left = f.shorthand ? std::string("  -") + f.shorthand + ", --" + f.name
                                   : "      --" + f.name;
    const std::string type = type_word(f.kind);
    if (!type.empty()) left += " " + type;
    widest = std::max(widest, left.size() + 1);  // pflag counts its \x00 marker
    std::string usage = f.usage;
    if (!zero_default(f))
      usage += f.kind == flag_kind::string ? " (default " + go_quote(f.default_value) + ")"
                                           : " (default " + f.default_value + ")";
    rows.emplace_back(std::move(left), std::move(usage));
  }
  std::string out;
  for (auto& [left, usage] : rows)
    out += left + " " + std::string(widest - left.size(), ' ') + " " + usage + "\n";
  return out;
}

bool parse_go_bool(const std::string& s, bool& out) {
  if (s == "1" || s == "t" || s == "T" || s == "TRUE" || s == "true" || s == "True") {
    out = true;
    return true;
  }
  if (s == "0" || s == "f" || s == "F" || s == "FALSE" || s == "false" || s == "False") {
    out = false;
    return true;
  }
  return false;
}

}  // namespace


// ---- values -------------------------------------------------------------------------------

bool flag_values::boolean(const std::string& name) const {
  auto it = values_.find(name);
  return it != values_.end() && it->second == "true";
}

const std::string& flag_values::text(const std::string& name) const {
  static const std::string empty;
  auto it = values_.find(name);
  return it == values_.end() ? empty : it->second;
}

long long flag_values::integer(const std::string& name) const {
  return std::strtoll(text(name).c_str(), nullptr, 0);
}

const std::vector<std::string>& flag_values::list(const std::string& name) const {
  static const std::vector<std::string> empty;
  auto it = lists_.find(name);
  return it == lists_.end() ? empty : it->second;
}

// ---- the tree -----------------------------------------------------------------------------

command& command::add(std::unique_ptr<command> child) {
  child->parent_ = this;
  children_.push_back(std::move(child));
  return *children_.back();
}

std::string command::name() const { return use_.substr(0, use_.find(' ')); }

std::string command::path() const { return parent_ ? parent_->path() + " " + name() : name(); }

std::vector<flag_spec> command::all_flags() const {
  auto all = flags_;
  all.push_back({"help", 'h', flag_kind::boolean, "help for " + name(), "", false});
  return all;
}

const flag_spec* command::long_flag(const std::string& n) const {
  for (const auto& f : flags_)
    if (f.name == n) return &f;
  return nullptr;
}

const flag_spec* command::short_flag(char c) const {
  for (const auto& f : flags_)
    if (f.shorthand == c) return &f;
  return nullptr;
}

std::string command::help() const {
  std::string out = trim_trailing_whitespace(short_) + "\n\n";
  std::vector<const command*> visible;
  std::size_t pad = min_name_padding;
  for (const auto& c : children_) {
    pad = std::max(pad, c->name().size());  // cobra counts hidden ones too
    if (!c->hidden_) visible.push_back(c.get());
  }
  std::sort(visible.begin(), visible.end(),
            [](const command* a, const command* b) { return a->name() < b->name(); });
  out += "Usage:";
  if (runnable()) {
    std::string line = parent_ ? parent_->path() + " " + use_ : use_;
    if (line.find("[flags]") == std::string::npos) line += " [flags]";
    out += "\n  " + line;
  }
  if (!visible.empty()) out += "\n  " + path() + " [command]";
  if (!visible.empty()) {
    out += "\n\nAvailable Commands:";
    for (const auto* c : visible) {
      std::string n = c->name();
      out += "\n  " + n + std::string(pad - n.size(), ' ') + " " + c->short_;
    }
  }
  out += "\n\nFlags:\n" + trim_trailing_whitespace(flag_usages(all_flags()));
  if (!visible.empty())
    out += "\n\nUse \"" + path() + " [command] --help\" for more information about a command.";
  return out + "\n";
}

void command::collect_help(std::map<std::string, std::string>& out, const std::string& root) const {
  for (const auto& c : children_) {
    if (c->hidden_) continue;
    out[c->path().substr(root.size() + 1)] = trim_trailing_whitespace(c->help());
    c->collect_help(out, root);
  }
}

std::string command::help_json() const {
  std::map<std::string, std::string> entries;
  collect_help(entries, path());
  std::string out = "{";
  bool first = true;
  for (const auto& [k, v] : entries) {
    out += first ? "\n  " : ",\n  ";
    first = false;
    io::json::append_string(out, k);
    out += ": ";
    io::json::append_string(out, v);
  }
  return out + "\n}\n";
}

// ---- finding the command (cobra's Find, stripFlags and argsMinusFirstX) --------------------

namespace {

// Whether `s` is a flag that takes the next argument as its value, as cobra's stripFlags
// judges it before the help flag exists: a long flag without '=' that is not boolean
// (unknown ones included), or a lone short flag of the same kind.
bool takes_next(const std::string& s,
                const std::function<const flag_spec*(const std::string&)>& lf,
                const std::function<const flag_spec*(char)>& sf) {
  if (starts_with(s, "--") && s.find('=') == std::string::npos) {
    const auto* f = lf(s.substr(2));
    return !(f && f->kind == flag_kind::boolean);
  }
  if (starts_with(s, "-") && s.find('=') == std::string::npos && s.size() == 2) {
    const auto* f = sf(s[1]);
    return !(f && f->kind == flag_kind::boolean);
  }
  return false;
}

}  // namespace

// The first word of `args` that is neither a flag nor a flag's value, as cobra's
// stripFlags sees it with the command's flags (lf, sf); "" when there is none.
static std::string first_word(const std::vector<std::string>& args,
                              const std::function<const flag_spec*(const std::string&)>& lf,
                              const std::function<const flag_spec*(char)>& sf) {
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& s = args[i];
    if (s == "--") break;
    if (takes_next(s, lf, sf)) {
      // cobra's quirk: with at most one word left after such a flag, the search ends.
      if (args.size() - i <= 2) break;
      ++i;
      continue;
    }
    if (!s.empty() && s[0] != '-') return s;
  }
  return "";
}

const command* command::find(std::vector<std::string>& args) const {
  const command* c = this;
  for (;;) {
    auto lf = [c](const std::string& n) { return c->long_flag(n); };
    auto sf = [c](char ch) { return c->short_flag(ch); };
    const std::string next = first_word(args, lf, sf);
    if (next.empty()) break;
    const command* child = nullptr;
    for (const auto& k : c->children_)
      if (k->name() == next) child = k.get();
    if (child == nullptr) break;
    // Remove the first occurrence of the name that is not a flag's value.
    for (std::size_t i = 0; i < args.size(); ++i) {
      const std::string& s = args[i];
      if (s == "--") break;
      if (takes_next(s, lf, sf)) {
        ++i;
        continue;
      }
      if (!starts_with(s, "-") && s == next) {
        args.erase(args.begin() + static_cast<std::ptrdiff_t>(i));
        break;
      }
    }
    c = child;
  }
  // cobra's legacy argument rule runs here, before any flag is parsed: only the root
  // refuses a word that names no subcommand.
  if (!c->parent_ && !c->children_.empty() && c->rule_ == arg_rule::arbitrary) {
    auto lf = [c](const std::string& n) { return c->long_flag(n); };
    auto sf = [c](char ch) { return c->short_flag(ch); };
    const std::string word = first_word(args, lf, sf);
    if (!word.empty()) throw cli_error{"unknown command " + go_quote(word) + " for " + go_quote(c->path())};
  }
  return c;
}

// ---- flags (pflag) ------------------------------------------------------------------------

flag_values command::parse_flags(const std::vector<std::string>& args,
                                 std::vector<std::string>& positional) const {
  flag_values v;
  const auto flags = all_flags();
  for (const auto& f : flags) {
    if (f.kind == flag_kind::string_array) continue;
    v.values_[f.name] = f.kind == flag_kind::boolean ? (f.default_value == "true" ? "true" : "false")
                                                     : f.default_value;
    if (f.kind == flag_kind::integer && f.default_value.empty()) v.values_[f.name] = "0";
  }
  auto display = [](const flag_spec& f) {
    return f.shorthand ? std::string("-") + f.shorthand + ", --" + f.name : "--" + f.name;
  };
  auto set = [&](const flag_spec& f, const std::string& value) {
    if (f.kind == flag_kind::boolean) {
      bool b = false;
      if (!parse_go_bool(value, b))
        throw cli_error{"invalid argument " + go_quote(value) + " for " + go_quote(display(f)) +
                        " flag: strconv.ParseBool: parsing " + go_quote(value) +
                        ": invalid syntax"};
      v.values_[f.name] = b ? "true" : "false";
    } else if (f.kind == flag_kind::integer) {
      errno = 0;
      char* end = nullptr;
      const long long n = std::strtoll(value.c_str(), &end, 0);
      if (value.empty() || *end != '\0' || errno == ERANGE || n > 0x7fffffffffffffffLL)
        throw cli_error{"invalid argument " + go_quote(value) + " for " + go_quote(display(f)) +
                        " flag: strconv.ParseInt: parsing " + go_quote(value) + ": " +
                        (errno == ERANGE ? "value out of range" : "invalid syntax")};
      v.values_[f.name] = std::to_string(n);
    } else if (f.kind == flag_kind::string_array) {
      v.lists_[f.name].push_back(value);
    } else {
      v.values_[f.name] = value;
    }
    v.changed_[f.name] = true;
  };
  auto find_long = [&](const std::string& n) -> const flag_spec* {
    for (const auto& f : flags)
      if (f.name == n) return &f;
    return nullptr;
  };
  auto find_short = [&](char c) -> const flag_spec* {
    for (const auto& f : flags)
      if (f.shorthand == c) return &f;
    return nullptr;
  };
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& s = args[i];
    if (s == "--") {
      positional.insert(positional.end(), args.begin() + static_cast<std::ptrdiff_t>(i) + 1,
                        args.end());
      break;
    }
    if (s.size() < 2 || s[0] != '-') {
      positional.push_back(s);
      continue;
    }
    if (s[1] == '-') {
      const std::string body = s.substr(2);
      if (body.empty() || body[0] == '-' || body[0] == '=')
        throw cli_error{"bad flag syntax: " + s};
      const auto eq = body.find('=');
      const std::string n = body.substr(0, eq);
      const auto* f = find_long(n);
      if (!f) throw cli_error{"unknown flag: --" + n};
      if (eq != std::string::npos) {
        set(*f, body.substr(eq + 1));
      } else if (f->kind == flag_kind::boolean) {
        set(*f, "true");
      } else if (i + 1 < args.size()) {
        set(*f, args[++i]);
      } else {
        throw cli_error{"flag needs an argument: --" + n};
      }
      continue;
    }
    // Shorthands: -h, -abc, -t value, -tvalue, -t=value.
    const std::string shorts = s.substr(1);
    for (std::size_t k = 0; k < shorts.size(); ++k) {
      const char ch = shorts[k];
      const auto* f = find_short(ch);
      if (!f)
        throw cli_error{"unknown shorthand flag: '" + std::string(1, ch) + "' in -" + shorts};
      if (k + 1 < shorts.size() && shorts[k + 1] == '=') {
        set(*f, shorts.substr(k + 2));
        break;
      }
      if (f->kind == flag_kind::boolean) {
        set(*f, "true");
        continue;
      }
      if (k + 1 < shorts.size()) {
        set(*f, shorts.substr(k + 1));
      } else if (i + 1 < args.size()) {
        set(*f, args[++i]);
      } else {
        throw cli_error{"flag needs an argument: '" + std::string(1, ch) + "' in -" + shorts};
      }
      break;
    }
  }
  return v;
}

void command::check_args(const std::vector<std::string>& a) const {
  const int n = static_cast<int>(a.size());
  switch (rule_) {
    case arg_rule::arbitrary:
      return;  // the root's legacy rule was applied by find()
    case arg_rule::none:
      if (n > 0) throw cli_error{"unknown command " + go_quote(a[0]) + " for " + go_quote(path())};
      return;
    case arg_rule::exactly:
      if (n != arg_count_)
        throw cli_error{"accepts " + std::to_string(arg_count_) + " arg(s), received " +
                        std::to_string(n)};
      return;
    case arg_rule::at_least:
      if (n < arg_count_)
        throw cli_error{"requires at least " + std::to_string(arg_count_) +
                        " arg(s), only received " + std::to_string(n)};
      return;
    case arg_rule::at_most:
      if (n > arg_count_)
        throw cli_error{"accepts at most " + std::to_string(arg_count_) + " arg(s), received " +
                        std::to_string(n)};
      return;
  }
}

void command::execute(const std::vector<std::string>& argv) const {
  std::vector<std::string> rest = argv;
  const command* c = find(rest);
  std::vector<std::string> positional;
  flag_values v = c->parse_flags(rest, positional);
  if (v.boolean("help") || !c->runnable()) {
    const std::string h = c->help();
    std::fwrite(h.data(), 1, h.size(), stdout);
    return;
  }
  c->check_args(positional);
  c->action_(invocation{*c, std::move(positional), std::move(v)});
}

}  // namespace shellctl::dify_agent
