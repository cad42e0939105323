// Go's flag scanning (io/text/go_flags.hpp): the forms Go accepts and where it stops.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "io/text/go_flags.hpp"

using shellctl::io::text::go_flag_reader;

namespace {

struct argv_of {
  std::vector<std::string> args;
  std::vector<char*> ptrs;
  explicit argv_of(std::vector<std::string> a) : args(std::move(a)) {
    for (auto& s : args) ptrs.push_back(s.data());
    ptrs.push_back(nullptr);
  }
  int argc() const { return static_cast<int>(args.size()); }
  char** argv() { return ptrs.data(); }
};

}  // namespace

TEST_CASE("-name, --name, =value and the next argument") {
  argv_of a({"prog", "-a=1", "--b", "2", "-c", "--d=", "rest", "-e"});
  go_flag_reader r(a.argc(), a.argv(), 1);
  go_flag_reader::flag f;
  REQUIRE(r.next(f) == go_flag_reader::step::flag);
  CHECK(f.name == "a");
  CHECK(f.value == std::optional<std::string>("1"));
  REQUIRE(r.next(f) == go_flag_reader::step::flag);
  CHECK(f.name == "b");
  CHECK_FALSE(f.value);
  REQUIRE(r.take_value(f));
  CHECK(*f.value == "2");
  REQUIRE(r.next(f) == go_flag_reader::step::flag);
  CHECK(f.name == "c");  // a boolean flag: its caller does not take a value
  REQUIRE(r.next(f) == go_flag_reader::step::flag);
  CHECK(f.name == "d");
  CHECK(f.value == std::optional<std::string>(""));
  CHECK(r.next(f) == go_flag_reader::step::end);  // "rest" is positional: "-e" is not read
}

TEST_CASE("-- and a lone - end the flags; a missing value is reported") {
  argv_of a({"prog", "--", "-x"});
  go_flag_reader r(a.argc(), a.argv(), 1);
  go_flag_reader::flag f;
  CHECK(r.next(f) == go_flag_reader::step::end);
  argv_of b({"prog", "-", "-x"});
  go_flag_reader r2(b.argc(), b.argv(), 1);
  CHECK(r2.next(f) == go_flag_reader::step::end);
  argv_of c({"prog", "-v"});
  go_flag_reader r3(c.argc(), c.argv(), 1);
  REQUIRE(r3.next(f) == go_flag_reader::step::flag);
  CHECK_FALSE(r3.take_value(f));
}

TEST_CASE("bad syntax as Go calls it") {
  for (const char* bad : {"---x", "-=x", "--=1"}) {
    argv_of a({"prog", bad});
    go_flag_reader r(a.argc(), a.argv(), 1);
    go_flag_reader::flag f;
    CAPTURE(bad);
    CHECK(r.next(f) == go_flag_reader::step::bad_syntax);
    CHECK(f.raw == bad);
  }
}
