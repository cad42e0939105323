// bin/dify-agent/agent_home and skill_zip on real files: the Home Snapshot archive of
// `dify-agent home-snapshot` read back by GNU tar and zstd, its extraction rules, and the
// skill zips, extracted confined.
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "bin/dify-agent/formats/agent_home.hpp"
#include "bin/dify-agent/formats/skill_zip.hpp"
#include "tests/unit/io/archive/archive_test_support.hpp"

namespace dify_agent = shellctl::dify_agent;
using shellctl::test::archive_dirs;
using shellctl::test::run;

namespace {

std::string save(const std::string& home, const std::set<std::string>& ex, std::string& err) {
  std::string out;
  err = dify_agent::write_agent_home(home, ex, [&](std::string_view c) {
    out.append(c);
    return true;
  });
  return out;
}

std::string restore(const std::string& home, const std::string& bytes) {
  std::size_t at = 0;
  return dify_agent::extract_agent_home(home, [&](char* buf, std::size_t cap) -> std::ptrdiff_t {
    const std::size_t n = std::min(cap, bytes.size() - at);
    std::memcpy(buf, bytes.data() + at, n);
    at += n;
    return static_cast<std::ptrdiff_t>(n);
  });
}

std::string slurp(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void put(const std::string& p, const std::string& data) {
  std::ofstream out(p, std::ios::binary);
  out << data;
}

}  // namespace

TEST_CASE("upload archive: GNU tar lists the names the original writes") {
  archive_dirs d;
  d.file("a.txt", "hello\n");
  d.file("dir/sub/b.txt", "b");
  d.file("skip/big.bin", "excluded");
  d.file("keep/skipme/x", "excluded too");
  d.file(std::string(120, 'n') + "/long.txt", "long");
  REQUIRE(::symlink((d.home() + "/dir/sub/b.txt").c_str(), (d.home() + "/dir/abs-link").c_str()) == 0);
  REQUIRE(::symlink("/etc/hostname", (d.home() + "/outside-link").c_str()) == 0);
  REQUIRE(::symlink((d.home() + "/skip/big.bin").c_str(), (d.home() + "/to-excluded").c_str()) == 0);
  REQUIRE(::mkfifo((d.home() + "/fifo").c_str(), 0600) == 0);
  std::string err;
  const std::string bytes = save(d.home(), {"skip", "keep/skipme"}, err);
  REQUIRE(err.empty());
  put(d.src() + "/a.tar.zst", bytes);
  const std::string listing =
      run("zstd -dc '" + d.src() + "/a.tar.zst' | tar -tv --numeric-owner --full-time -f - | "
          "awk '{print $1, $2, $6, $7, $8}' | sed 's/ *$//'");
  INFO(listing);
  CHECK(listing.find("-rw-r--r-- 0/0 a.txt") != std::string::npos);
  CHECK(listing.find("drwxr-xr-x 0/0 dir\n") != std::string::npos);  // no trailing slash
  CHECK(listing.find("lrwxrwxrwx 0/0 dir/abs-link -> sub/b.txt") != std::string::npos);
  CHECK(listing.find("outside-link -> /etc/hostname") != std::string::npos);
  CHECK(listing.find("to-excluded -> " + d.home() + "/skip/big.bin") != std::string::npos);
  CHECK(listing.find(std::string(120, 'n') + "/long.txt") != std::string::npos);
  CHECK(listing.find("0/0 skip") == std::string::npos);
  CHECK(listing.find("keep/skipme") == std::string::npos);
  CHECK(listing.find("0/0 keep\n") != std::string::npos);
  CHECK(listing.find("fifo") == std::string::npos);
  // zstd level 1 with a checksum, one frame.
  CHECK(run("zstd -lv '" + d.src() + "/a.tar.zst' 2>&1 | grep -c 'Check: XXH64'") == "1\n");
}

TEST_CASE("download archive: round trip, then the original's refusals") {
  archive_dirs d;
  d.file("x/y.txt", "data", 0640);
  d.file("run.sh", "#!/bin/sh\n", 0755);
  REQUIRE(::symlink("y.txt", (d.home() + "/x/link").c_str()) == 0);
  ::chmod((d.home() + "/x").c_str(), 0750);
  std::string err;
  const std::string bytes = save(d.home(), {}, err);
  REQUIRE(err.empty());
  const std::string dest = d.src() + "/restored";
  REQUIRE(::mkdir(dest.c_str(), 0755) == 0);
  CHECK(restore(dest, bytes) == "");
  CHECK(slurp(dest + "/x/y.txt") == "data");
  struct stat st {};
  REQUIRE(::stat((dest + "/x/y.txt").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0640);
  REQUIRE(::stat((dest + "/run.sh").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0755);
  REQUIRE(::stat((dest + "/x").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0750);
  char target[64] = {};
  REQUIRE(::readlink((dest + "/x/link").c_str(), target, sizeof target - 1) > 0);
  CHECK(std::string(target) == "y.txt");

  // A truncated stream is caught even though the tar end was already seen.
  const std::string cut_dest = d.src() + "/cut";
  REQUIRE(::mkdir(cut_dest.c_str(), 0755) == 0);
  CHECK(restore(cut_dest, bytes.substr(0, bytes.size() - 3)) != "");

  // Archives made by GNU tar with names the original refuses.
  struct bad_case {
    const char* setup;  // shell run in src/t to build the tree
    const char* args;   // tar arguments
    const char* message;
  };
  const bad_case cases[] = {
      {"echo a > f", "--transform=s,^f,../f, f", "invalid Home Snapshot entry path \"../f\""},
      {"echo a > f", "--transform=s,^f,./f, f", "invalid Home Snapshot entry path \"./f\""},
      {"echo a > f", "f f", "duplicate Home Snapshot entry \"f\""},
      {"echo a > f; ln f g", "--hard-dereference f g", ""},  // both regular: accepted
      {"echo a > f; ln f g", "f g", "Home Snapshot hardlink entry is not allowed: \"g\""},
      {"mkfifo p", "p", "Home Snapshot special entry is not allowed: \"p\""},
  };
  int k = 0;
  for (const auto& c : cases) {
    const std::string t = d.src() + "/t" + std::to_string(k);
    const std::string into = d.src() + "/into" + std::to_string(k++);
    run("mkdir -p '" + t + "' '" + into + "' && cd '" + t + "' && " + c.setup + " && tar -c --zstd -f ../a.tar.zst " + c.args);
    CAPTURE(c.args);
    CHECK(restore(into, slurp(d.src() + "/a.tar.zst")) == c.message);
  }
}

TEST_CASE("skill zips: a directory round trip, and names that lead out are refused") {
  archive_dirs d;
  d.file("skill/SKILL.md", "# Skill\n");
  d.file("skill/scripts/run.py", "print(1)\n");
  const std::string zip = d.src() + "/skill.zip";
  REQUIRE(dify_agent::zip_directory(d.home() + "/skill", zip) == "");
  const std::string names = run("python3 -c \"import zipfile,sys; print(sorted(zipfile.ZipFile(sys.argv[1]).namelist()))\" '" + zip + "'");
  CHECK(names == "['SKILL.md', 'scripts/', 'scripts/run.py']\n");
  const std::string out = d.src() + "/out";
  REQUIRE(::mkdir(out.c_str(), 0755) == 0);
  REQUIRE(dify_agent::extract_zip(zip, out) == "");
  CHECK(slurp(out + "/scripts/run.py") == "print(1)\n");

  run("cd '" + d.src() + "' && python3 -c \"import zipfile; z=zipfile.ZipFile('evil.zip','w'); "
      "z.writestr('../escaped.txt','x'); z.close()\"");
  const std::string out2 = d.src() + "/out2";
  REQUIRE(::mkdir(out2.c_str(), 0755) == 0);
  CHECK(dify_agent::extract_zip(d.src() + "/evil.zip", out2) == "invalid archive entry path \"../escaped.txt\"");
  CHECK(::access((d.src() + "/escaped.txt").c_str(), F_OK) != 0);
}
