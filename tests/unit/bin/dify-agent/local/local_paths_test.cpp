// bin/dify-agent/local_paths: Go's path rules and a download that never replaces a file.
#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdlib>

#include "bin/dify-agent/local/local_paths.hpp"

using namespace shellctl::dify_agent;

TEST_CASE("filepath rules") {
  CHECK(clean_path("a//b/./c/..") == "a/b");
  CHECK(clean_path("/../x") == "/x");
  CHECK(clean_path("../../x") == "../../x");
  CHECK(clean_path("") == ".");
  CHECK(base_name("/a/b/") == "b");
  CHECK(base_name("") == ".");
  CHECK(base_name("/") == "/");
  CHECK(dir_name("a/b") == "a");
  CHECK(dir_name("b") == ".");
  CHECK(extension("a.tar.gz") == ".gz");
  CHECK(extension("dir.d/file") == "");
  CHECK(join_path(".dify_conf", "skills") == ".dify_conf/skills");
  std::string out;
  CHECK(decode_base64_url("eyJyZWNvcmRfaWQiOiJ4In0=", out));
  CHECK(out == "{\"record_id\":\"x\"}");
  CHECK_FALSE(decode_base64_url("eyJyZWNvcmRfaWQiOiJ4In0", out));  // unpadded
  CHECK_FALSE(decode_base64_url("a+b/", out));                     // the standard alphabet
}

TEST_CASE("staged files take the first free name and vanish when not committed") {
  char tmpl[] = "/tmp/shellctl-agent-cli-XXXXXX";
  const std::string dir = ::mkdtemp(tmpl);
  for (int i = 0; i < 3; ++i) {
    staged_file f(dir, "a.txt");
    CHECK(f.write("x", 1));
    const std::string got = f.commit_unique(dir + "/a.txt");
    CHECK(got == dir + (i == 0 ? "/a.txt" : i == 1 ? "/a (1).txt" : "/a (2).txt"));
  }
  { staged_file abandoned(dir, "b.txt"); }
  CHECK(std::system(("test $(ls -A '" + dir + "' | wc -l) -eq 3").c_str()) == 0);
  CHECK(std::system(("rm -rf '" + dir + "'").c_str()) == 0);
}
