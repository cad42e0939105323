// The Home helper's messages (io/home/wire.hpp): everything round-trips, and the decoder
// refuses what a confined (so possibly hostile) helper could send that is not exactly one
// well-formed message: short, long, bad enums, out-of-range modes, counts beyond what the
// bytes can hold.
#include <doctest/doctest.h>

#include "io/home/wire.hpp"

namespace home = shellctl::io::home;
namespace fs = shellctl::io::fs;

TEST_CASE("requests and replies round-trip") {
  home::request r;
  r.kind = home::op::save;
  r.path = "a/b\nc";
  r.to = std::string("x\0y", 3);
  r.limit = 12345678901234ULL;
  r.flag = true;
  r.mode = 0755;
  r.excludes = {"node_modules", "", "!keep"};
  r.skip = {{1, 2}, {~0ULL, 0}};
  auto back = home::decode_request(home::encode(r));
  REQUIRE(back);
  CHECK(back->kind == r.kind);
  CHECK(back->path == r.path);
  CHECK(back->to == r.to);
  CHECK(back->limit == r.limit);
  CHECK(back->flag);
  CHECK(back->mode == r.mode);
  CHECK(back->excludes == r.excludes);
  CHECK(back->skip == r.skip);

  home::reply p;
  p.st = home::status::not_empty;
  p.message = "no";
  p.path = "/home/x";
  p.meta.name = "f";
  p.meta.type = fs::entry_type::symlink;
  p.meta.size = 7;
  p.meta.mode = 0777;
  p.meta.mtime = -5;
  p.meta.target = "../t";
  fs::entry_meta e;
  e.name = "e";
  e.type = fs::entry_type::dir;
  p.entries = {e, e};
  p.truncated = true;
  p.count = 3;
  p.bytes = 4;
  auto q = home::decode_reply(home::encode(p));
  REQUIRE(q);
  CHECK(q->st == p.st);
  CHECK(q->message == p.message);
  CHECK(q->meta.target == p.meta.target);
  CHECK(q->meta.mtime == -5);
  CHECK(q->entries.size() == 2);
  CHECK(q->entries[1].type == fs::entry_type::dir);
  CHECK_FALSE(q->entries[1].target);
  CHECK(q->truncated);
  CHECK(q->count == 3);
  CHECK(q->bytes == 4);
}

TEST_CASE("the decoder takes exactly one well-formed message") {
  home::request r;
  r.kind = home::op::stat;
  r.path = "p";
  const std::string good = home::encode(r);
  REQUIRE(home::decode_request(good));
  for (std::size_t n = 0; n < good.size(); ++n) CHECK_FALSE(home::decode_request(good.substr(0, n)));
  CHECK_FALSE(home::decode_request(good + "x"));
  std::string bad_op = good;
  bad_op[0] = 0;
  CHECK_FALSE(home::decode_request(bad_op));
  bad_op[0] = static_cast<char>(home::op_last + 1);
  CHECK_FALSE(home::decode_request(bad_op));

  home::request m = r;
  m.mode = 07777;
  std::string bytes = home::encode(m);
  REQUIRE(home::decode_request(bytes));
  m.mode = 010000;  // beyond the permission bits
  CHECK_FALSE(home::decode_request(home::encode(m)));

  home::reply p;
  const std::string ok = home::encode(p);
  REQUIRE(home::decode_reply(ok));
  std::string bad_status = ok;
  bad_status[0] = static_cast<char>(home::status_last + 1);
  CHECK_FALSE(home::decode_reply(bad_status));
  home::reply big;
  big.meta.mode = 0170000;  // a type in the mode: not a permission
  CHECK_FALSE(home::decode_reply(home::encode(big)));
  // A count of entries far beyond what the bytes hold is refused before anything is built.
  std::string huge = ok;
  // status, message, path, meta: the entries' count follows the meta.
  const std::size_t count_at = 1 + 4 + 4 + (4 + 1 + 8 + 4 + 8 + 1 + 4);
  huge[count_at] = '\xff';
  huge[count_at + 1] = '\xff';
  CHECK_FALSE(home::decode_reply(huge));
}

TEST_CASE("file_errc and status map one to one") {
  for (auto c : {fs::file_errc::invalid_path, fs::file_errc::denied, fs::file_errc::not_found,
                 fs::file_errc::not_a_directory, fs::file_errc::is_a_directory, fs::file_errc::exists,
                 fs::file_errc::not_empty, fs::file_errc::io})
    CHECK(home::file_errc_of(home::status_of(c)) == c);
  CHECK(home::file_errc_of(home::status::malformed) == fs::file_errc::io);
}
