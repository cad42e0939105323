#include "io/proc/job_env.hpp"

#include <unordered_map>

extern char** environ;

namespace shellctl::io::proc {

namespace {

// A small strict JSON reader for one object of strings; enough for `.job-env.json`.
class env_json_reader {
 public:
  explicit env_json_reader(std::string_view s) : s_(s) {}

  std::optional<env_pairs> parse(std::string& err) {
    env_pairs out;
    skip_ws();
    if (consume_literal("null")) {
      if (!at_end_after_ws()) return fail(err, "trailing data after top-level value");
      return out;
    }
    if (!consume('{')) return fail(err, "expected a JSON object");
    skip_ws();
    if (consume('}')) {
      if (!at_end_after_ws()) return fail(err, "trailing data after top-level value");
      return out;
    }
    for (;;) {
      skip_ws();
      std::string key;
      if (!read_string(key)) return fail(err, error_or("expected a string key"));
      skip_ws();
      if (!consume(':')) return fail(err, "expected ':' after key");
      skip_ws();
      std::string value;
      if (consume_literal("null")) {
        // Go stores the zero value for a null map element.
      } else if (!read_string(value)) {
        return fail(err, error_or("value of \"" + key + "\" is not a string"));
      }
      out.emplace_back(std::move(key), std::move(value));
      skip_ws();
      if (consume(',')) continue;
      if (consume('}')) break;
      return fail(err, "expected ',' or '}'");
    }
    if (!at_end_after_ws()) return fail(err, "trailing data after top-level value");
    return out;
  }

 private:
  std::string_view s_;
  std::size_t i_ = 0;
  std::string string_error_;

  std::optional<env_pairs> fail(std::string& err, std::string msg) {
    err = std::move(msg) + " at offset " + std::to_string(i_);
    return std::nullopt;
  }
  std::string error_or(std::string fallback) {
    return string_error_.empty() ? std::move(fallback) : string_error_;
  }
  void skip_ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r'))
      ++i_;
  }
  bool at_end_after_ws() {
    skip_ws();
    return i_ == s_.size();
  }
  bool consume(char c) {
    if (i_ < s_.size() && s_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  bool consume_literal(std::string_view lit) {
    if (s_.substr(i_, lit.size()) == lit) {
      i_ += lit.size();
      return true;
    }
    return false;
  }
  static int hex(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }
  bool read_hex4(unsigned& v) {
    if (i_ + 4 > s_.size()) return false;
    v = 0;
    for (int k = 0; k < 4; ++k) {
      const int h = hex(s_[i_ + static_cast<std::size_t>(k)]);
      if (h < 0) return false;
      v = v * 16 + static_cast<unsigned>(h);
    }
    i_ += 4;
    return true;
  }
  static void append_utf8(std::string& out, unsigned cp) {
    if (cp < 0x80) {
      out.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
      out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
      out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
  }
  bool read_string(std::string& out) {
    string_error_.clear();
    if (!consume('"')) return false;
    while (i_ < s_.size()) {
      const char c = s_[i_++];
      if (c == '"') return true;
      if (static_cast<unsigned char>(c) < 0x20) {
        string_error_ = "control character in string";
        return false;
      }
      if (c != '\\') {
        out.push_back(c);
        continue;
      }
      if (i_ >= s_.size()) break;
      const char e = s_[i_++];
      switch (e) {
        case '"':
          out.push_back('"');
          break;
        case '\\':
          out.push_back('\\');
          break;
        case '/':
          out.push_back('/');
          break;
        case 'b':
          out.push_back('\b');
          break;
        case 'f':
          out.push_back('\f');
          break;
        case 'n':
          out.push_back('\n');
          break;
        case 'r':
          out.push_back('\r');
          break;
        case 't':
          out.push_back('\t');
          break;
        case 'u': {
          unsigned cp = 0;
          if (!read_hex4(cp)) {
            string_error_ = "bad \\u escape";
            return false;
          }
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            // A high surrogate needs a low one; a lone surrogate becomes U+FFFD (as in Go).
            const std::size_t save = i_;
            unsigned lo = 0;
            if (consume('\\') && consume('u') && read_hex4(lo) && lo >= 0xDC00 && lo <= 0xDFFF) {
              cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            } else {
              i_ = save;
              cp = 0xFFFD;
            }
          } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
            cp = 0xFFFD;
          }
          append_utf8(out, cp);
          break;
        }
        default:
          string_error_ = "bad escape in string";
          return false;
      }
    }
    string_error_ = "unterminated string";
    return false;
  }
};

}  // namespace

bool is_filtered_name(std::string_view name) {
  return name == "TMUX" || name == "TMUX_PANE" || name.substr(0, 9) == "SHELLCTL_";
}

std::optional<env_pairs> parse_env_json(std::string_view text, std::string& err) {
  auto parsed = env_json_reader(text).parse(err);
  if (!parsed) return std::nullopt;
  for (const auto& [name, value] : *parsed) {
    if (name.empty() || name.find('=') != std::string::npos ||
        name.find('\0') != std::string::npos) {
      err = "invalid environment variable name \"" + name + "\"";
      return std::nullopt;
    }
    if (value.find('\0') != std::string::npos) {
      err = "environment variable " + name + " contains NUL";
      return std::nullopt;
    }
  }
  return parsed;
}

std::vector<std::string> build_job_env(const std::vector<std::string>& base,
                                       const env_pairs& overlay, const std::string& cwd) {
  std::vector<std::string> env;
  std::unordered_map<std::string, std::size_t> index;  // name -> position in env
  auto set = [&](std::string_view name, std::string_view value) {
    std::string entry;
    entry.reserve(name.size() + 1 + value.size());
    entry.append(name).push_back('=');
    entry.append(value);
    auto [it, inserted] = index.emplace(std::string(name), env.size());
    if (inserted) {
      env.push_back(std::move(entry));
    } else {
      env[it->second] = std::move(entry);
    }
  };
  for (const auto& entry : base) {
    const auto eq = entry.find('=');
    if (eq == std::string::npos || eq == 0) continue;
    const std::string_view name(entry.data(), eq);
    if (is_filtered_name(name)) continue;
    set(name, std::string_view(entry).substr(eq + 1));
  }
  // The request may set any name, even a filtered one; such names never steer the
  // sandbox policy, which the runner reads from its own environment only (D7).
  for (const auto& [name, value] : overlay) set(name, value);
  for (const char* name : {"TMPDIR", "TMP", "TEMP"}) set(name, cwd);
  return env;
}

std::vector<std::string> current_environ() {
  std::vector<std::string> out;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) out.emplace_back(*e);
  return out;
}

}  // namespace shellctl::io::proc
