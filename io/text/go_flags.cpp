#include "io/text/go_flags.hpp"

namespace shellctl::io::text {

go_flag_reader::step go_flag_reader::next(flag& out) {
  if (i_ >= argc_) return step::end;
  std::string_view a = argv_[i_];
  if (a.size() < 2 || a[0] != '-') return step::end;  // the first positional argument
  ++i_;
  if (a == "--") return step::end;
  out = flag{};
  out.raw = std::string(a);
  a.remove_prefix(a[1] == '-' ? 2 : 1);
  if (a.empty() || a[0] == '-' || a[0] == '=') return step::bad_syntax;
  const auto eq = a.find('=');
  out.name = std::string(a.substr(0, eq));
  if (eq != std::string_view::npos) out.value = std::string(a.substr(eq + 1));
  return step::flag;
}

bool go_flag_reader::take_value(flag& f) {
  if (f.value) return true;
  if (i_ >= argc_) return false;
  f.value = argv_[i_++];
  return true;
}

}  // namespace shellctl::io::text
