// io/fs on a real temporary directory: the helpers' modes and error forms, and the job
// directory's files as the runner and the pipe leave them.
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <stdexcept>
#include <string>

#include "io/fs/files.hpp"
#include "io/fs/job_dir.hpp"

namespace fs = shellctl::io::fs;

namespace {
struct temp_dir {
  std::string path;
  temp_dir() {
    char tmpl[] = "/tmp/shellctl-fs-XXXXXX";
    path = ::mkdtemp(tmpl);
  }
  ~temp_dir() { std::system(("rm -rf '" + path + "'").c_str()); }
};

unsigned mode_of(const std::string& p) {
  struct stat st {};
  REQUIRE(::stat(p.c_str(), &st) == 0);
  return st.st_mode & 07777;
}
}  // namespace

TEST_CASE("write_file_atomic replaces the whole file with the exact mode, or says why") {
  temp_dir t;
  const auto f = t.path + "/code";
  std::string err;
  ::umask(022);
  REQUIRE(fs::write_file_atomic(f, "1\n", 0600, err));
  CHECK(fs::read_small_file(f) == "1\n");
  CHECK(mode_of(f) == 0600);
  REQUIRE(fs::write_file_atomic(f, "22\n", 0644, err));
  CHECK(fs::read_small_file(f) == "22\n");
  CHECK(mode_of(f) == 0644);
  CHECK_FALSE(fs::write_file_atomic(t.path + "/missing/code", "1", 0600, err));
  CHECK(err.find("open ") == 0);
  CHECK(err.find("No such file or directory") != std::string::npos);
}

TEST_CASE("make_dirs: both forms, existing parts kept, a file in the way refused") {
  temp_dir t;
  std::string err;
  REQUIRE(fs::make_dirs(t.path + "/a/b/c", 0700, err));
  CHECK(fs::is_dir(t.path + "/a/b/c"));
  CHECK(mode_of(t.path + "/a/b") == 0700);
  REQUIRE(fs::make_dirs(t.path + "/a/b/c", 0700, err));  // exists: fine
  fs::write_file(t.path + "/f", "", 0600);
  CHECK_FALSE(fs::make_dirs(t.path + "/f/x", 0700, err));
  CHECK(err.find("mkdir " + t.path + "/f/x") == 0);
  CHECK_THROWS_AS(fs::make_dirs(t.path + "/f/x", 0700), std::runtime_error);
}

TEST_CASE("read_small_file_checked tells missing from unreadable and honours the limit") {
  temp_dir t;
  std::string out;
  CHECK(fs::read_small_file_checked(t.path + "/nope", out) == fs::read_result::missing);
  CHECK(fs::read_small_file_checked(t.path + "/nope/x", out) == fs::read_result::missing);
  CHECK(fs::read_small_file_checked(t.path, out) == fs::read_result::error);  // a directory
  fs::write_file(t.path + "/big", std::string(300000, 'x'), 0600);
  CHECK(fs::read_small_file_checked(t.path + "/big", out, 1000) == fs::read_result::ok);
  CHECK(out.size() > 1000);
  CHECK(out.size() < 300000);
  CHECK(fs::read_small_file_checked(t.path + "/big", out, SIZE_MAX) == fs::read_result::ok);
  CHECK(out.size() == 300000);
}

TEST_CASE("parent_of and join") {
  CHECK(fs::parent_of("/a/b/script") == "/a/b");
  CHECK(fs::parent_of("/script") == "/");
  CHECK(fs::parent_of("script") == ".");
  CHECK(fs::join("/a/", "b") == "/a/b");
  CHECK(fs::join("/a", "b") == "/a/b");
}

TEST_CASE("job_dir: inputs written 0600, the gate, markers and the exit record") {
  temp_dir t;
  fs::job_dir d(t.path);
  d.write_inputs("echo hi\n", "{\"A\":\"1\"}", d.file(fs::job_files::output));
  CHECK(fs::read_small_file(d.file(fs::job_files::script)) == "echo hi\n");
  CHECK(fs::read_small_file(d.file(fs::job_files::env)) == "{\"A\":\"1\"}");
  CHECK(mode_of(d.file(fs::job_files::script)) == 0600);
  CHECK(mode_of(d.file(fs::job_files::output)) == 0600);
  CHECK_FALSE(d.has(fs::job_files::start_gate));
  d.open_gate();
  CHECK(d.has(fs::job_files::start_gate));

  auto none = d.read_exit_record();
  CHECK_FALSE(none.code_file);
  CHECK_FALSE(none.complete());
  CHECK_FALSE(none.unreadable);
  fs::write_file(d.file(fs::job_files::exit_code), " 42\n", 0644);
  auto half = d.read_exit_record();
  CHECK(half.code == 42);
  CHECK_FALSE(half.complete());  // no end time yet
  fs::write_file(d.file(fs::job_files::ended_at), "2026-08-04T10:00:00Z\n", 0644);
  auto whole = d.read_exit_record();
  CHECK(whole.complete());
  CHECK(whole.ended_at == "2026-08-04T10:00:00Z");
  fs::write_file(d.file(fs::job_files::exit_code), "4x2\n", 0644);
  auto garbled = d.read_exit_record();
  CHECK(garbled.code_file);
  CHECK_FALSE(garbled.code);  // not a number: no code, and so not complete
  CHECK_FALSE(garbled.complete());

  fs::write_file(d.file(fs::job_files::pipe_ready), "", 0600);
  d.forget(fs::job_files::pipe_ready);
  CHECK_FALSE(d.has(fs::job_files::pipe_ready));
  d.forget(fs::job_files::pipe_ready);  // missing is fine
}
