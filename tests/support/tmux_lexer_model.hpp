#pragma once
// A model of how tmux 3.3a's command parser (cmd-parse.y: yylex, yylex_token, yylex_getc,
// yylex_token_escape) splits ONE control-mode line into tokens, written from its source
// for the quoting tests and the fuzzer. It keeps every rule that can turn data into
// syntax: the line ends at NUL (C string) and at byte 0xFF (a `char` compared with EOF);
// newline, ';', '{', '}' separate; '#' starts a comment; '%' starts a directive; outside
// single quotes '\' escapes, '$' expands variables and a leading '~' the home directory.
// Expansions are reported as such (the model does not know tmux's environment).
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace shellctl::test {

struct tmux_lexed {
  std::vector<std::string> tokens;  // the words, in order
  bool separator = false;    // ';', '{', '}' or a newline: more than one command
  bool comment = false;      // '#' outside quotes at a word start
  bool directive = false;    // '%if', '%hidden', ...
  bool expansion = false;    // $VAR or ~ would be replaced
  bool error = false;        // the parser would refuse the line
};

class tmux_lexer_model {
 public:
  explicit tmux_lexer_model(std::string_view line) {
    // The control client hands the parser a C string: it ends at the first NUL.
    const auto nul = line.find('\0');
    buf_ = line.substr(0, nul);
  }

  tmux_lexed run() {
    tmux_lexed out;
    for (;;) {
      int ch = getc();
      if (ch == kEof) break;
      if (ch == ' ' || ch == '\t') continue;
      if (ch == '\n' || ch == ';' || ch == '{' || ch == '}') {
        out.separator = true;
        continue;
      }
      if (ch == '#') {
        out.comment = true;
        break;  // the rest of the line is a comment
      }
      if (ch == '%') {
        std::string word(1, '%');
        int c;
        while ((c = getc()) != kEof && c != ' ' && c != '\t' && c != '\n')
          word += static_cast<char>(c);
        bool number = true;
        for (char w : word)
          if (w != '%' && (w < '0' || w > '9')) number = false;
        if (number) {
          out.tokens.push_back(word);
          continue;
        }
        out.directive = true;
        break;
      }
      auto token = lex_token(ch, out);
      if (!token) {
        out.error = true;
        break;
      }
      out.tokens.push_back(*token);
    }
    return out;
  }

 private:
  static constexpr int kEof = -1;
  std::string_view buf_;
  std::size_t off_ = 0;
  unsigned escapes_ = 0;

  int getc1() {
    if (off_ == buf_.size()) return kEof;
    // tmux reads `char`: signed on x86, so 0xFF is -1 == EOF.
    return static_cast<signed char>(buf_[off_++]);
  }
  void ungetc(int ch) {
    if (off_ > 0 && ch != kEof) --off_;
  }
  int getc() {
    if (escapes_ != 0) {
      --escapes_;
      return '\\';
    }
    for (;;) {
      int ch = getc1();
      if (ch == '\\') {
        ++escapes_;
        continue;
      }
      if (ch == '\n' && (escapes_ % 2) == 1) {
        --escapes_;
        continue;
      }
      if (escapes_ != 0) {
        ungetc(ch);
        --escapes_;
        return '\\';
      }
      return ch;
    }
  }

  bool lex_escape(std::string& buf) {
    int ch = getc();
    if (ch >= '4' && ch <= '7') return false;
    if (ch >= '0' && ch <= '3') {
      int o2 = getc();
      if (o2 >= '0' && o2 <= '7') {
        int o3 = getc();
        if (o3 >= '0' && o3 <= '7') {
          buf += static_cast<char>(64 * (ch - '0') + 8 * (o2 - '0') + (o3 - '0'));
          return true;
        }
      }
      return false;
    }
    switch (ch) {
      case kEof: return false;
      case 'a': ch = '\a'; break;
      case 'b': ch = '\b'; break;
      case 'e': ch = '\033'; break;
      case 'f': ch = '\f'; break;
      case 's': ch = ' '; break;
      case 'v': ch = '\v'; break;
      case 'r': ch = '\r'; break;
      case 'n': ch = '\n'; break;
      case 't': ch = '\t'; break;
      case 'u':
      case 'U': {
        // \uXXXX / \UXXXXXXXX: our quoting never writes these; consume and accept.
        const int size = ch == 'u' ? 4 : 8;
        for (int i = 0; i < size; ++i) {
          int h = getc();
          bool hex = (h >= '0' && h <= '9') || (h >= 'a' && h <= 'f') || (h >= 'A' && h <= 'F');
          if (!hex) return false;
        }
        buf += "?";
        return true;
      }
      default: break;
    }
    buf += static_cast<char>(ch);
    return true;
  }

  std::optional<std::string> lex_token(int ch, tmux_lexed& out) {
    enum { start, none, double_quotes, single_quotes } state = none, last = start;
    std::string buf;
    for (;;) {
      if (ch == kEof || (state == none && ch == '\n')) break;
      if ((ch == ' ' || ch == '\t' || ch == ';' || ch == '}') && state == none) break;
      if (ch == '\n' && state != none) {
        out.separator = true;  // a newline inside quotes would span two control lines
        buf += '\n';
        ch = getc();
        continue;
      }
      if (ch == '\\' && state != single_quotes) {
        if (!lex_escape(buf)) return std::nullopt;
        last = state;
        ch = getc();
        continue;
      }
      if (ch == '~' && last != state && state != single_quotes) {
        out.expansion = true;
        last = state;
        ch = getc();
        continue;
      }
      if (ch == '$' && state != single_quotes) {
        out.expansion = true;
        last = state;
        ch = getc();
        continue;
      }
      if (ch == '}' && state == none) return std::nullopt;
      if (ch == '\'') {
        if (state == none) {
          state = single_quotes;
          ch = getc();
          continue;
        }
        if (state == single_quotes) {
          state = none;
          ch = getc();
          continue;
        }
      }
      if (ch == '"') {
        if (state == none) {
          state = double_quotes;
          ch = getc();
          continue;
        }
        if (state == double_quotes) {
          state = none;
          ch = getc();
          continue;
        }
      }
      buf += static_cast<char>(ch);
      last = state;
      ch = getc();
    }
    ungetc(ch);
    return buf;
  }
};

// What format_expand does to an argument our quote_format() produced: "##" is one '#'.
// nullopt when a '#' would start a format (#{...}, #(...), ...).
inline std::optional<std::string> tmux_format_literal(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '#') {
      out += s[i];
      continue;
    }
    if (i + 1 < s.size() && s[i + 1] == '#') {
      out += '#';
      ++i;
      continue;
    }
    return std::nullopt;
  }
  return out;
}

}  // namespace shellctl::test
