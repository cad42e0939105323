// The snapshot's exclusion rules (docs/snapshots.md "Excludes") as tables: Go's filepath.Match,
// go-git's gitignore patterns, and the whole decision with the runtime default.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "io/archive/excludes.hpp"

using shellctl::io::archive::go_path_match;
using shellctl::io::archive::snapshot_excludes;

TEST_CASE("go_path_match: Go's filepath.Match, case by case") {
  struct row {
    const char* pattern;
    const char* name;
    bool match;
  };
  // Go's own match_test.go table (Linux), and the malformed cases.
  const row rows[] = {
      {"abc", "abc", true},        {"*", "abc", true},        {"*c", "abc", true},
      {"a*", "a", true},           {"a*", "abc", true},       {"a*", "ab/c", false},
      {"a*/b", "abc/b", true},     {"a*/b", "a/c/b", false},  {"a*b*c*d*e*/f", "axbxcxdxe/f", true},
      {"a*b*c*d*e*/f", "axbxcxdxexxx/f", true},               {"a*b*c*d*e*/f", "axbxcxdxe/xxx/f", false},
      {"a*b*c*d*e*/f", "axbxcxdxexxx/fff", false},            {"a*b?c*x", "abxbbxdbxebxczzx", true},
      {"a*b?c*x", "abxbbxdbxebxczzy", false},                 {"ab[c]", "abc", true},
      {"ab[b-d]", "abc", true},    {"ab[e-g]", "abc", false}, {"ab[^c]", "abc", false},
      {"ab[^b-d]", "abc", false},  {"ab[^e-g]", "abc", true}, {"a\\*b", "a*b", true},
      {"a\\*b", "ab", false},      {"a?b", "a☺b", true},      {"a[^a]b", "a☺b", true},
      {"a???b", "a☺b", false},     {"a[^a][^a][^a]b", "a☺b", false},
      {"[a-ζ]*", "α", true},       {"*[a-ζ]", "A", false},    {"a?b", "a/b", false},
      {"a*b", "a/b", false},       {"[\\]a]", "]", true},     {"[\\-]", "-", true},
      {"[x\\-]", "x", true},       {"[x\\-]", "-", true},     {"[x\\-]", "z", false},
      {"[\\-x]", "x", true},       {"[\\-x]", "-", true},     {"[\\-x]", "a", false},
      // Malformed: never a match.
      {"[]a]", "]", false},        {"[-]", "-", false},       {"[x-]", "x", false},
      {"[x-]", "-", false},        {"[x-]", "z", false},      {"[-x]", "x", false},
      {"[-x]", "-", false},        {"[-x]", "a", false},      {"\\", "a", false},
      {"[a-b-c]", "a", false},     {"[", "a", false},         {"[^", "a", false},
      {"[^bc", "a", false},        {"a[", "a", false},        {"a[", "ab", false},
      {"a[", "x", false},          {"a/b[", "x", false},      {"*x", "xxx", true},
      {"tmp?", "tmp1", true},      {"tmp?", "tmp", false},    {"*.log", "app.log", true},
      {"*.log", "app.txt", false},
  };
  for (const auto& r : rows) {
    CAPTURE(r.pattern);
    CAPTURE(r.name);
    CHECK(go_path_match(r.pattern, r.name) == r.match);
  }
}

namespace {
bool out(const std::vector<std::string>& patterns, const char* rel, bool dir = false) {
  return snapshot_excludes(patterns).excluded(rel, dir);
}
}  // namespace

TEST_CASE("name patterns match at any depth; dir-only ones only directories") {
  CHECK(out({"node_modules"}, "node_modules", true));
  CHECK(out({"node_modules"}, "src/app/node_modules", true));
  CHECK(out({"node_modules"}, "src/app/node_modules/x.js"));  // an ancestor matched
  CHECK(out({"tags"}, "src/tags"));
  CHECK(out({"target/"}, "target", true));
  CHECK_FALSE(out({"target/"}, "target"));         // a file named target
  CHECK(out({"target/"}, "target/x.o"));            // below the directory
  CHECK(out({"*.log"}, "var/app.log"));
  CHECK_FALSE(out({"*.log"}, "var/app.txt"));
  CHECK(out({"tmp?"}, "tmp1"));
  CHECK(out({"**"}, "anything/at/all"));           // a bare ** is a name pattern: everything
  CHECK(out({"#x"}, "#x"));                         // no comments: a literal name
  CHECK_FALSE(out({"X"}, "x"));                     // case-sensitive
}

TEST_CASE("path patterns are anchored at Home; ** spans directories") {
  CHECK(out({"/build"}, "build", true));
  CHECK_FALSE(out({"/build"}, "src/build", true));
  CHECK(out({"a/b"}, "a/b"));
  CHECK(out({"a/b"}, "a/b/c"));                     // leftover components are fine
  CHECK_FALSE(out({"a/b"}, "x/a/b"));
  CHECK(out({".cache/**"}, ".cache/a/b/c.bin"));
  CHECK_FALSE(out({".cache/**"}, ".cache", true));  // the dir-glob rule: not the dir itself
  CHECK(out({"src/**/dist"}, "src/a/b/dist", true));
  CHECK(out({"src/**/dist"}, "src/dist", true));
  CHECK_FALSE(out({"src/**/dist"}, "src/a/b", true));
  CHECK(out({"**/foo"}, "foo"));
  CHECK(out({"**/foo"}, "a/b/foo"));
  CHECK_FALSE(out({"a/foo**"}, "a/foo"));           // ** inside a segment: never
  CHECK(out({"a/b/"}, "a/b", true));
  CHECK_FALSE(out({"a/b/"}, "a/b"));                // dir-only, and b is a file
  CHECK(out({"a/*.txt"}, "a/x.txt"));
  CHECK_FALSE(out({"a/*.txt"}, "a/b/x.txt"));  // * does not span directories
}

TEST_CASE("the last matching pattern decides; negation re-includes") {
  const std::vector<std::string> p = {".cache/**", "!.cache/keep-me"};
  CHECK(out(p, ".cache/junk"));
  CHECK_FALSE(out(p, ".cache/keep-me"));
  CHECK_FALSE(out({"!x", "x"}, "y"));
  CHECK(out({"!x", "x"}, "x"));                     // x comes last: excluded
  CHECK_FALSE(out({"x", "!x"}, "x"));
}

TEST_CASE("trailing spaces, blank patterns and the runtime default") {
  CHECK(out({"name   "}, "name"));                  // trailing spaces dropped
  CHECK(out({"name\\ "}, "name\\ ") == go_path_match("name\\ ", "name\\ "));
  CHECK(out({"name\\ "}, "name "));                 // an escaped trailing space stays
  CHECK(out({"\tname"}, "\tname"));                 // leading whitespace stays
  CHECK_FALSE(out({"", "   ", "\t\n"}, "anything"));
  // The runtime's state: always out, exactly that path, whatever the patterns say.
  for (auto re : {"!.local/share/shellctl", "!/.local/share/shellctl", "!.local/share/shellctl/**",
                  "!**", "!/.local/share/shellctl/**"})
    CHECK(out({re}, ".local/share/shellctl", true));
  CHECK(out({}, ".local/share/shellctl"));            // a file there too
  CHECK_FALSE(out({}, ".local", true));
  CHECK_FALSE(out({}, ".local/share", true));
  CHECK_FALSE(out({}, ".local/bin/agent-tool"));
  CHECK_FALSE(out({}, "bin/.local/share/shellctl/keep.txt"));
  CHECK_FALSE(out({}, "workspace/notes.txt"));
}
