// The file API's operations (io/fs/file_ops.hpp) on a real tree, for what the HTTP tests
// cannot arrange: a tree swapped for a symlink in the middle of a recursive delete's walk,
// an upload destroyed before its commit, a reader across a rename, and the listing bound.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "io/fs/file_ops.hpp"
#include "io/fs/files.hpp"

namespace fs = shellctl::io::fs;

namespace {

struct tree {
  std::string base, home, state, outside;
  tree() {
    char tmpl[] = "/tmp/shellctl-ops-XXXXXX";
    base = ::mkdtemp(tmpl);
    home = base + "/home";
    state = home + "/state";
    outside = base + "/outside";
    for (const auto& d : {home, state, outside}) ::mkdir(d.c_str(), 0700);
    fs::write_file(outside + "/secret", "outside", 0600);
    fs::write_file(state + "/shellctl.db", "db", 0600);
  }
  ~tree() { std::system(("rm -rf '" + base + "'").c_str()); }
  std::string read(const std::string& p) const { return fs::read_small_file(p); }
};

fs::file_errc code_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const fs::file_failure& e) {
    return e.code;
  }
  FAIL("no failure");
  return fs::file_errc::io;
}

}  // namespace

TEST_CASE("an upload destroyed before commit leaves the old file and no temporary") {
  tree t;
  fs::file_roots roots(t.home, {}, t.state);
  fs::write_file(t.home + "/f", "old", 0640);
  {
    fs::file_upload up(roots, "f", std::nullopt, false);
    up.write("new bytes that never land");
  }
  CHECK(t.read(t.home + "/f") == "old");
  std::vector<std::string> names;
  REQUIRE(fs::sorted_entry_names(t.home, names));
  CHECK(names == std::vector<std::string>{"f", "state"});
  fs::file_upload up(roots, "f", std::nullopt, false);
  up.write("new");
  CHECK(up.commit() == 3);
  CHECK(t.read(t.home + "/f") == "new");
  struct stat st {};
  REQUIRE(::stat((t.home + "/f").c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0640);  // a replaced file keeps its mode
}

TEST_CASE("an upload over a set-id file keeps its mode less the set-id bits") {
  tree t;
  fs::file_roots roots(t.home, {}, t.state);
  fs::write_file(t.home + "/suid", "old", 0644);
  REQUIRE(::chmod((t.home + "/suid").c_str(), 06755) == 0);
  fs::file_upload up(roots, "suid", std::nullopt, false);
  up.write("caller's bytes");
  up.commit();
  struct stat st {};
  REQUIRE(::stat((t.home + "/suid").c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0755);
  fs::file_upload given(roots, "suid", 04755, false);  // the edge refuses it; never set here either
  given.write("x");
  given.commit();
  REQUIRE(::stat((t.home + "/suid").c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0755);
}

TEST_CASE("a state dir file with another name in a root is refused by identity") {
  tree t;
  REQUIRE(::link((t.state + "/shellctl.db").c_str(), (t.home + "/state.db").c_str()) == 0);
  struct stat st {};
  REQUIRE(::stat((t.state + "/shellctl.db").c_str(), &st) == 0);
  fs::file_roots roots(t.home, {}, t.state,
                       {{static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino)}});
  auto code_of = [](auto f) {
    try {
      f();
    } catch (const fs::file_failure& e) {
      return e.code;
    }
    return fs::file_errc::io;
  };
  CHECK(code_of([&] { fs::file_reader r(roots, "state.db"); }) == fs::file_errc::denied);
  CHECK(code_of([&] { fs::stat_path(roots, "state.db"); }) == fs::file_errc::denied);
}

TEST_CASE("a reader keeps the file it opened across a rename over it") {
  tree t;
  fs::file_roots roots(t.home, {}, t.state);
  fs::write_file(t.home + "/r", "first version", 0644);
  fs::file_reader reader(roots, "r");
  fs::file_upload up(roots, "r", std::nullopt, false);
  up.write("second");
  up.commit();
  char buf[64];
  const auto n = reader.read_at(0, buf, sizeof buf);
  CHECK(std::string(buf, n) == "first version");
  CHECK(reader.meta().size == 13);
}

TEST_CASE("a recursive delete meets a directory swapped for a link to outside") {
  tree t;
  fs::file_roots roots(t.home, {}, t.state);
  fs::make_dirs(t.home + "/d/sub", 0755);
  fs::write_file(t.home + "/d/sub/x", "x", 0644);
  // The swap the walk may meet: `sub` is a symlink out by the time it is reached.
  REQUIRE(::rename((t.home + "/d/sub").c_str(), (t.home + "/moved").c_str()) == 0);
  REQUIRE(::symlink(t.outside.c_str(), (t.home + "/d/sub").c_str()) == 0);
  fs::remove_path(roots, "d", true);
  CHECK(!fs::exists(t.home + "/d"));
  CHECK(t.read(t.outside + "/secret") == "outside");
  CHECK(fs::exists(t.home + "/moved/x"));
}

TEST_CASE("the state dir and the trees holding it") {
  tree t;
  fs::file_roots roots(t.home, {}, t.state);
  CHECK(code_of([&] { fs::remove_path(roots, "state", true); }) == fs::file_errc::denied);
  CHECK(code_of([&] { fs::move_path(roots, "state", "s2", false); }) == fs::file_errc::denied);
  CHECK(code_of([&] { fs::remove_path(roots, t.home, true); }) == fs::file_errc::denied);
  REQUIRE(::symlink("state", (t.home + "/st").c_str()) == 0);
  CHECK(code_of([&] { fs::file_reader r(roots, "st/shellctl.db"); }) == fs::file_errc::denied);
  CHECK(code_of([&] { fs::stat_path(roots, "st/shellctl.db"); }) == fs::file_errc::denied);
  CHECK(code_of([&] { fs::file_upload u(roots, "st/new", std::nullopt, false); }) == fs::file_errc::denied);
  CHECK(t.read(t.state + "/shellctl.db") == "db");
}

TEST_CASE("a listing is sorted, bounded and says when it is cut") {
  tree t;
  fs::file_roots roots(t.home, {}, t.state);
  fs::make_dirs(t.home + "/many", 0755);
  for (int i = 2999; i >= 0; --i) fs::write_file(t.home + "/many/" + std::to_string(i), "", 0644);
  const auto l = fs::list_dir(roots, "many", 10);
  REQUIRE(l.entries.size() == 10);
  CHECK(l.truncated);
  CHECK(l.entries.front().name == "0");
  CHECK(l.entries[1].name == "1");
  CHECK(l.entries[2].name == "10");
  CHECK(l.entries.back().name == "1005");
  const auto all = fs::list_dir(roots, "many", 10000);
  CHECK(all.entries.size() == 3000);
  CHECK(!all.truncated);
}
