#pragma once
// Go's flag package, the scanning half, for the binaries that keep the original's flag
// syntax (shellctl serve, shellctl-runner-exit, shellctl-sanitize-pty): `-name` or
// `--name`, a value as `=value` or as the next argument, scanning ends at `--` or at the
// first argument that is not a flag. Each binary keeps its own flags and messages; this
// only walks argv the way Go does.
#include <optional>
#include <string>
#include <string_view>

namespace shellctl::io::text {

class go_flag_reader {
 public:
  // Scans argv[first..argc).
  go_flag_reader(int argc, char** argv, int first) : argc_(argc), argv_(argv), i_(first) {}

  struct flag {
    std::string name;
    std::optional<std::string> value;  // given as -name=value
    std::string raw;                   // the argument as written
  };
  enum class step {
    flag,        // `out` is the next flag
    end,         // no more flags
    bad_syntax,  // `out.raw` is not a flag Go accepts ("---x", "-=x"): "bad flag syntax"
  };
  step next(flag& out);
  // A flag that takes a value and has none after '=' takes the next argument; false when
  // there is none ("flag needs an argument").
  bool take_value(flag& f);

 private:
  int argc_;
  char** argv_;
  int i_;
};

}  // namespace shellctl::io::text
