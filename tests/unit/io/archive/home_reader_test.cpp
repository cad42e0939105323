// io/archive/home_reader on real archives (ours, GNU tar's, hand-made hostile ones from
// Python's tarfile) into a real temporary Home: what is extracted, what is refused, and
// that nothing is ever written outside Home.
#include <doctest/doctest.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "io/archive/home_reader.hpp"
#include "io/archive/home_writer.hpp"
#include "io/fs/files.hpp"
#include "tests/unit/io/archive/archive_test_support.hpp"

namespace archive = shellctl::io::archive;
namespace fs = shellctl::io::fs;
using outcome = archive::restore_result::outcome;
using shellctl::test::run;

namespace {

// The shared dirs, and what proves nothing escaped: nothing but home/ and src/ (and the
// archive files) beside them.
struct sandbox_dirs : shellctl::test::archive_dirs {
  std::string outside() const { return run("ls -A '" + dir + "' | grep -v -e '^home$' -e '^src$' -e '^a\\.' || true"); }
};

// A body read in small pieces, as a request body arrives.
class string_source : public archive::byte_source {
 public:
  explicit string_source(std::string bytes, std::size_t piece = 1000, bool fail_at_end = false)
      : bytes_(std::move(bytes)), piece_(piece), fail_at_end_(fail_at_end) {}
  std::ptrdiff_t read(char* buf, std::size_t cap) override {
    if (pos_ == bytes_.size()) return fail_at_end_ ? -1 : 0;
    std::size_t n = std::min({cap, piece_, bytes_.size() - pos_});
    std::memcpy(buf, bytes_.data() + pos_, n);
    pos_ += n;
    return static_cast<std::ptrdiff_t>(n);
  }
  std::string failure() const override { return "the client went away"; }

 private:
  std::string bytes_;
  std::size_t piece_, pos_ = 0;
  bool fail_at_end_;
};

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

archive::restore_result restore(const std::string& home, std::string bytes) {
  string_source src(std::move(bytes));
  return archive::restore_home(home, src, [] { return false; });
}

// A tar made by Python's tarfile from `script` (which adds members to `t`), zstd-compressed.
std::string hostile(const sandbox_dirs& d, const std::string& script) {
  const std::string path = d.dir + "/a.tar";
  std::ofstream(d.dir + "/a.py") << "import io, tarfile\n"
                                    "t = tarfile.open('" << path << "', 'w', format=tarfile.PAX_FORMAT)\n"
                                    "def add(name, data=b'', **kw):\n"
                                    "    i = tarfile.TarInfo(name)\n"
                                    "    for k, v in kw.items(): setattr(i, k, v)\n"
                                    "    i.size = len(data)\n"
                                    "    t.addfile(i, io.BytesIO(data))\n"
                                 << script << "\nt.close()\n";
  run("python3 '" + d.dir + "/a.py' && zstd -q -f '" + path + "' -o '" + path + ".zst'");
  return slurp(path + ".zst");
}

unsigned mode_of(const std::string& p) {
  struct stat st {};
  REQUIRE(::lstat(p.c_str(), &st) == 0);
  return st.st_mode & 07777;
}

}  // namespace

TEST_CASE("our save restores to the same tree; setuid stripped, directory modes last") {
  sandbox_dirs d;
  const auto s = d.src();
  fs::make_dirs(s + "/bin", 0755);
  fs::write_file(s + "/bin/tool.sh", "#!/bin/sh\n", 0755);
  fs::write_file(s + "/suid", "x", 04755);
  fs::make_dirs(s + "/emptydir", 0700);
  fs::make_dirs(s + "/ünï", 0755);
  fs::write_file(s + "/ünï/çødé.txt", "unicode\n", 0644);
  fs::make_dirs(s + "/ro", 0755);
  fs::write_file(s + "/ro/child.txt", "child\n", 0644);
  ::chmod((s + "/ro").c_str(), 0555);
  REQUIRE(::symlink("bin/tool.sh", (s + "/tool-link").c_str()) == 0);
  REQUIRE(::symlink("/etc/passwd", (s + "/abs-link").c_str()) == 0);  // link text only
  const std::string big(300000, 'b');
  fs::write_file(s + "/big", big, 0600);

  std::string bytes;
  archive::snapshot_excludes ex({});
  auto saved = archive::write_home_archive(
      s, ex, [&](std::string_view c) { bytes.append(c); return true; }, [] { return false; });
  REQUIRE(saved.ok);
  auto r = restore(d.home(), bytes);
  REQUIRE_MESSAGE(r.result == outcome::ok, r.message);
  CHECK(r.entries == static_cast<std::int64_t>(saved.entries));
  CHECK(r.bytes_written == static_cast<std::int64_t>(big.size() + 10 + 1 + 8 + 6));
  run("diff -r --no-dereference '" + s + "' '" + d.home() + "'");
  CHECK(mode_of(d.home() + "/suid") == 0755);  // 04755 restored as 0755
  CHECK(mode_of(d.home() + "/bin/tool.sh") == 0755);
  CHECK(mode_of(d.home() + "/ro") == 0555);
  CHECK(slurp(d.home() + "/ro/child.txt") == "child\n");
  char target[64] = {};
  REQUIRE(::readlink((d.home() + "/abs-link").c_str(), target, sizeof target - 1) > 0);
  CHECK(std::string(target) == "/etc/passwd");
  ::chmod((s + "/ro").c_str(), 0755);
  ::chmod((d.home() + "/ro").c_str(), 0755);
}

TEST_CASE("GNU tar's archives restore; the root entry is skipped; existing files are merged") {
  sandbox_dirs d;
  fs::make_dirs(d.src() + "/dir", 0755);
  fs::write_file(d.src() + "/dir/f", "new\n", 0644);
  fs::write_file(d.src() + "/g", "g\n", 0644);
  REQUIRE(::link((d.src() + "/g").c_str(), (d.src() + "/dir/hard").c_str()) == 0);
  fs::make_dirs(d.home() + "/dir", 0755);
  fs::write_file(d.home() + "/dir/f", "old content, longer\n", 0644);
  fs::write_file(d.home() + "/unrelated", "stays\n", 0644);
  const auto bytes = run("tar -C '" + d.src() + "' -cf - . | zstd -q -c");
  auto r = restore(d.home(), bytes);
  REQUIRE_MESSAGE(r.result == outcome::ok, r.message);
  CHECK(r.entries == 4);  // dir/, dir/f, g, dir/hard (or g as the link): not "./"
  CHECK(slurp(d.home() + "/dir/f") == "new\n");  // truncated and rewritten
  CHECK(slurp(d.home() + "/unrelated") == "stays\n");
  CHECK(slurp(d.home() + "/dir/hard") == "g\n");
  struct stat a {}, b {};
  ::stat((d.home() + "/g").c_str(), &a);
  ::stat((d.home() + "/dir/hard").c_str(), &b);
  CHECK(a.st_ino == b.st_ino);  // a hard link inside Home stays one
}

TEST_CASE("every escape is refused as malformed, and nothing is written outside Home") {
  struct escape {
    const char* what;
    const char* script;
    const char* message_part;
  };
  const escape cases[] = {
      {"absolute name", "add('/tmp/../evil-abs', b'x')", "absolute entry name"},
      {"dot-dot", "add('../evil', b'x')", "entry escapes root"},
      {"dot-dot inside", "add('a/../../evil', b'x')", "entry escapes root"},
      {"symlink then a file through it",
       "add('sneaky', type=tarfile.SYMTYPE, linkname='../')\nadd('sneaky/pwned', b'x')",
       "leads out of Home"},
      {"absolute symlink then through it",
       "add('abs', type=tarfile.SYMTYPE, linkname='/tmp')\nadd('abs/pwned', b'x')",
       "leads out of Home"},
      {"hard link out", "add('h', type=tarfile.LNKTYPE, linkname='../src/x')", "entry escapes root"},
      {"hard link through a symlink out",
       "add('up', type=tarfile.SYMTYPE, linkname='..')\nadd('h', type=tarfile.LNKTYPE, linkname='up/src/x')",
       "leads out of Home"},
      {"char device", "add('null', type=tarfile.CHRTYPE, devmajor=1, devminor=3)",
       "unsupported entry type 51"},
      {"block device", "add('sda', type=tarfile.BLKTYPE, devmajor=8, devminor=0)",
       "unsupported entry type 52"},
      {"fifo", "add('fifo', type=tarfile.FIFOTYPE)", "unsupported entry type 54"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.what);
    sandbox_dirs d;
    fs::write_file(d.src() + "/x", "secret\n", 0600);
    auto r = restore(d.home(), hostile(d, c.script));
    CHECK(r.result == outcome::malformed);
    CHECK(r.message.rfind("archive malformed: ", 0) == 0);
    CHECK(r.message.find(c.message_part) != std::string::npos);
    CHECK(d.outside() == "");
    CHECK_FALSE(fs::exists("/tmp/pwned"));
    CHECK_FALSE(fs::exists(d.dir + "/evil"));
    CHECK_FALSE(fs::exists(d.dir + "/pwned"));
  }
}

TEST_CASE("a sparse entry (GNU tar --sparse) is refused as malformed") {
  sandbox_dirs d;
  run("truncate -s 4M '" + d.src() + "/holes' && printf x >> '" + d.src() + "/holes'");
  for (const char* format : {"gnu", "posix"}) {
    CAPTURE(format);
    const auto bytes = run(std::string("tar -C '") + d.src() + "' --sparse --format=" + format +
                           " -cf - holes | zstd -q -c");
    auto r = restore(d.home(), bytes);
    CHECK(r.result == outcome::malformed);
    CHECK(r.message.find("sparse") != std::string::npos);
  }
}

TEST_CASE("a GNU.sparse pax record refuses its entry, wherever it stands; other records do not") {
  struct variant {
    const char* what;
    const char* script;
    bool names_sparse = true;  // libarchive may refuse it first, with its own words
  };
  // libarchive builds no sparse map from these, so only the records themselves tell.
  const variant sparse[] = {
      // libarchive reads a 1.0 map from the data here, finds none and refuses it itself.
      {"major/minor only", "i = tarfile.TarInfo('s')\ni.pax_headers = {'GNU.sparse.major': '1', 'GNU.sparse.minor': '0'}\nt.addfile(i, io.BytesIO(b''))",
       false},
      // These libarchive accepts as plain entries (the original refuses them): ours refuse.
      {"a name", "i = tarfile.TarInfo('s')\ni.pax_headers = {'GNU.sparse.name': 'real-name'}\nt.addfile(i, io.BytesIO(b''))"},
      {"after a good entry, with a long name", "add('first', b'ok')\ni = tarfile.TarInfo('d/' + 'n' * 200)\n"
                                                "i.pax_headers = {'comment': 'x' * 600, 'GNU.sparse.name': 'n'}\nt.addfile(i, io.BytesIO(b''))",
       false},
      {"after a good entry, between other records", "add('first', b'ok')\ni = tarfile.TarInfo('second')\n"
                                                    "i.pax_headers = {'comment': 'c', 'GNU.sparse.realsize': '0', 'SCHILY.dev': '3'}\n"
                                                    "t.addfile(i, io.BytesIO(b''))"},
  };
  for (const auto& v : sparse) {
    CAPTURE(v.what);
    sandbox_dirs d;
    auto r = restore(d.home(), hostile(d, v.script));
    CHECK(r.result == outcome::malformed);
    if (v.names_sparse) CHECK_MESSAGE(r.message.find("sparse") != std::string::npos, r.message);
  }
  sandbox_dirs d;
  auto ok = restore(d.home(), hostile(d, "i = tarfile.TarInfo('plain')\n"
                                        "i.pax_headers = {'comment': 'GNU.sparse.major=1', 'SCHILY.dev': '1'}\n"
                                        "t.addfile(i, io.BytesIO(b''))\nadd('after', b'GNU.sparse.name data')"));
  CHECK_MESSAGE(ok.result == outcome::ok, ok.message);
  CHECK(ok.entries == 2);
}

TEST_CASE("streams that are not a good tar+zstd archive") {
  sandbox_dirs d;
  auto garbage = restore(d.home(), "garbage");
  CHECK(garbage.result == outcome::malformed);
  auto gzip = restore(d.home(), run("tar -C '" + d.src() + "' -czf - ."));
  CHECK(gzip.result == outcome::malformed);
  // Empty body: an empty archive.
  auto empty = restore(d.home(), "");
  CHECK(empty.result == outcome::ok);
  CHECK(empty.entries == 0);
  CHECK(empty.bytes_written == 0);
  // Cut in the middle of the frame.
  fs::write_file(d.src() + "/f", std::string(200000, 'x'), 0644);
  const auto whole = run("tar -C '" + d.src() + "' -cf - f | zstd -q -c");
  auto cut = restore(d.home(), whole.substr(0, whole.size() / 2));
  CHECK(cut.result == outcome::malformed);
  // A flipped byte: the frame checksum or the decoder notices.
  std::string flipped = whole;
  flipped[flipped.size() / 2] ^= 0x55;
  auto bad = restore(d.home(), flipped);
  CHECK(bad.result == outcome::malformed);
  // A frame that asks for a 128 MiB window.
  const auto wide = run("tar -C '" + d.src() + "' -cf - f | zstd -q -c --long=27");
  auto refused = restore(d.home(), wide);
  CHECK(refused.result == outcome::malformed);
  CHECK(refused.message.find("zstd") != std::string::npos);
  // Two frames back to back are one stream.
  const auto half1 = run("tar -C '" + d.src() + "' -cf - f | head -c 102400 | zstd -q -c");
  const auto half2 = run("tar -C '" + d.src() + "' -cf - f | tail -c +102401 | zstd -q -c");
  auto two = restore(d.home(), half1 + half2);
  CHECK(two.result == outcome::ok);
  CHECK(slurp(d.home() + "/f") == std::string(200000, 'x'));
}

TEST_CASE("a body that fails, a stop, and a full disk are restore_failed") {
  sandbox_dirs d;
  fs::write_file(d.src() + "/f", std::string(300000, 'x'), 0644);
  const auto whole = run("tar -C '" + d.src() + "' -cf - f | zstd -q -c");
  string_source gone(whole.substr(0, whole.size() / 2), 1000, /*fail_at_end=*/true);
  auto r = archive::restore_home(d.home(), gone, [] { return false; });
  CHECK(r.result == outcome::failed);
  CHECK(r.message == "the client went away");

  string_source src(whole);
  auto stopped = archive::restore_home(d.home(), src, [] { return true; });
  CHECK(stopped.result == outcome::failed);

  // A 64 KiB tmpfs as Home: writing 300 kB fails with ENOSPC, the machine's problem.
  REQUIRE(::mount("tmpfs", d.home().c_str(), "tmpfs", 0, "size=64k") == 0);
  auto full = restore(d.home(), whole);
  CHECK(full.result == outcome::failed);
  CHECK(full.message.find("No space left on device") != std::string::npos);
}
