// request_parser: bytes in, requests out. No sockets.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "io/http/request_parser.hpp"
#include "io/http/server.hpp"
#include "io/http/wire.hpp"

using namespace shellctl::io::http;
using ev = request_parser::event;

namespace {

struct outcome {
  std::vector<request> requests;
  std::vector<bool> keep_alive;
  int heads = 0;
  int continues = 0;
  bool failed = false;
  parse_error error;
};

// Feeds `pieces` one after another, collecting everything the parser produces.
outcome feed_pieces(const std::vector<std::string>& pieces, parser_limits lim = {}) {
  request_parser p{lim};
  outcome o;
  for (const auto& piece : pieces) {
    std::size_t off = 0;
    while (off < piece.size() && !o.failed) {
      auto r = p.feed(piece.data() + off, piece.size() - off);
      off += r.consumed;
      if (r.ev == ev::request) {
        o.requests.push_back(p.take());
        o.keep_alive.push_back(p.keep_alive());
      } else if (r.ev == ev::head) {
        ++o.heads;
        if (p.expects_continue()) ++o.continues;
        // A caller that does not stream the body feeds on, even with nothing: that is
        // where an announced body above the limit is refused.
        if (off == piece.size() && p.body_too_large()) {
          auto r2 = p.feed(piece.data() + off, 0);
          if (r2.ev == ev::error) {
            o.failed = true;
            o.error = p.error();
          }
        }
      } else if (r.ev == ev::error) {
        o.failed = true;
        o.error = p.error();
      } else if (r.consumed == 0) {
        break;
      }
    }
  }
  return o;
}

outcome feed_all(const std::string& s, parser_limits lim = {}) { return feed_pieces({s}, lim); }

}  // namespace

TEST_CASE("a simple GET with query and headers") {
  auto o = feed_all("GET /v1/jobs?limit=5&x=%20 HTTP/1.1\r\nHost: a\r\nX-Thing:  v  \r\n\r\n");
  REQUIRE(o.requests.size() == 1);
  const request& r = o.requests[0];
  CHECK(r.method == "GET");
  CHECK(r.target == "/v1/jobs?limit=5&x=%20");
  CHECK(r.path == "/v1/jobs");
  CHECK(r.query == "limit=5&x=%20");
  REQUIRE(r.headers.size() == 2);
  CHECK(r.headers[1].value == "v");  // surrounding whitespace is not part of the value
  CHECK(o.keep_alive[0]);
}

TEST_CASE("header lookup is case-insensitive") {
  auto o = feed_all("GET / HTTP/1.1\r\nauthorization: Bearer t\r\nCONTENT-type: x\r\n\r\n");
  REQUIRE(o.requests.size() == 1);
  const request& r = o.requests[0];
  REQUIRE(r.find_header("Authorization") != nullptr);
  CHECK(*r.find_header("AUTHORIZATION") == "Bearer t");
  CHECK(*r.find_header("content-type") == "x");
  CHECK(r.find_header("X-Missing") == nullptr);
}

TEST_CASE("empty header values are kept") {
  auto o = feed_all("GET / HTTP/1.1\r\nX-A:\r\nX-B: \r\nX-C: c\r\n\r\n");
  REQUIRE(o.requests.size() == 1);
  REQUIRE(o.requests[0].headers.size() == 3);
  CHECK(o.requests[0].headers[0].value.empty());
  CHECK(o.requests[0].headers[2].value == "c");
}

TEST_CASE("pipelined requests split at every byte position") {
  const std::string wire =
      "POST /a HTTP/1.1\r\nContent-Length: 5\r\n\r\nhelloGET /b?q=1 HTTP/1.1\r\nHost: h\r\n\r\n"
      "POST /c HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2;ext=1\r\nde\r\n0\r\n\r\n";
  for (std::size_t cut = 0; cut <= wire.size(); ++cut) {
    for (std::size_t cut2 = cut; cut2 <= wire.size(); cut2 += 7) {
      auto o = feed_pieces({wire.substr(0, cut), wire.substr(cut, cut2 - cut), wire.substr(cut2)});
      INFO("cut at " << cut << "," << cut2);
      REQUIRE(!o.failed);
      REQUIRE(o.requests.size() == 3);
      CHECK(o.requests[0].body == "hello");
      CHECK(o.requests[1].path == "/b");
      CHECK(o.requests[1].query == "q=1");
      CHECK(o.requests[1].body.empty());
      CHECK(o.requests[2].body == "abcde");
    }
  }
}

TEST_CASE("one byte at a time") {
  const std::string wire = "GET /x HTTP/1.1\r\nA: 1\r\n\r\nGET /y HTTP/1.1\r\n\r\n";
  std::vector<std::string> bytes;
  for (char c : wire) bytes.emplace_back(1, c);
  auto o = feed_pieces(bytes);
  REQUIRE(o.requests.size() == 2);
  CHECK(o.requests[0].path == "/x");
  CHECK(o.requests[1].path == "/y");
}

TEST_CASE("chunked body with extensions and trailers") {
  auto o = feed_all(
      "POST /up HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
      "4;name=value\r\nWiki\r\n5;q=\"quoted\"\r\npedia\r\nE\r\n in\r\n\r\nchunks.\r\n"
      "0\r\nX-Checksum: abc\r\nAuthorization: Bearer smuggled\r\n\r\n"
      "GET /next HTTP/1.1\r\n\r\n");
  INFO(o.error.message);
  REQUIRE(!o.failed);
  REQUIRE(o.requests.size() == 2);
  CHECK(o.requests[0].body == "Wikipedia in\r\n\r\nchunks.");
  // Trailers are parsed but never become headers.
  CHECK(o.requests[0].find_header("Authorization") == nullptr);
  CHECK(o.requests[0].find_header("X-Checksum") == nullptr);
  CHECK(o.requests[1].path == "/next");
}

// llhttp 8.1 rejects several extensions on one chunk ("4;a=b;c=d"), a known limitation of
// that version (fixed in later llhttp); one extension per chunk, quoted or not, works.

TEST_CASE("chunk data must be followed by CRLF") {
  auto o = feed_all("POST /r HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nabcdXY0\r\n\r\n");
  CHECK(o.requests.empty());
  CHECK(o.failed);
  CHECK(o.error.status == 400);
  o = feed_pieces({"POST /r HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nab", "cd\r",
                   "\n0\r\n\r\n"});
  REQUIRE(o.requests.size() == 1);
  CHECK(o.requests[0].body == "abcd");
}

TEST_CASE("the head is reported before any body byte is consumed") {
  request_parser p;
  std::string head =
      "POST /v1/jobs/run?x=1 HTTP/1.1\r\nAuthorization: Bearer t\r\nContent-Length: 60000000\r\n\r\n";
  std::string bytes = head + "{\"script\"";
  auto r = p.feed(bytes);
  CHECK(r.ev == ev::head);
  CHECK(r.consumed == head.size());  // the body is left unread
  CHECK(p.head().path == "/v1/jobs/run");
  CHECK(p.head().query == "x=1");
  REQUIRE(p.head().find_header("authorization") != nullptr);
  CHECK(*p.head().find_header("authorization") == "Bearer t");
  CHECK(p.head().body.empty());
  CHECK(p.content_length() == 60000000u);
  CHECK(!p.expects_continue());
  // Without a body there is nothing to decide early: the request completes at once.
  auto o = feed_all("GET /a HTTP/1.1\r\n\r\nPOST /b HTTP/1.1\r\nContent-Length: 1\r\n\r\nx");
  CHECK(o.heads == 1);
  CHECK(o.requests.size() == 2);
}

TEST_CASE("Expect: 100-continue is reported once the headers are in") {
  request_parser p;
  std::string head = "POST /r HTTP/1.1\r\nContent-Length: 3\r\nExpect: 100-Continue\r\n\r\n";
  auto r = p.feed(head);
  CHECK(r.ev == ev::head);
  CHECK(p.expects_continue());
  CHECK(r.consumed == head.size());
  CHECK(p.in_message());
  r = p.feed("abc");
  CHECK(r.ev == ev::request);
  CHECK(p.take().body == "abc");
  CHECK(!p.in_message());

  // Without a body there is nothing to continue to.
  auto o = feed_all("GET / HTTP/1.1\r\nExpect: 100-continue\r\n\r\n");
  CHECK(o.continues == 0);
  CHECK(o.requests.size() == 1);
  // Chunked bodies do count.
  o = feed_all(
      "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nExpect: 100-continue\r\n\r\n1\r\nx\r\n0\r\n\r\n");
  CHECK(o.continues == 1);
  REQUIRE(o.requests.size() == 1);
  CHECK(o.requests[0].body == "x");
}

TEST_CASE("keep-alive rules") {
  auto o = feed_all(
      "GET /1 HTTP/1.1\r\n\r\nGET /2 HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"
      "GET /3 HTTP/1.1\r\nConnection: close\r\n\r\n");
  REQUIRE(o.requests.size() == 3);
  CHECK(o.keep_alive[0]);
  CHECK(o.keep_alive[1]);
  CHECK(!o.keep_alive[2]);
  o = feed_all("GET / HTTP/1.0\r\n\r\n");
  REQUIRE(o.requests.size() == 1);
  CHECK(!o.keep_alive[0]);
}

TEST_CASE("upgrade requests end the HTTP conversation") {
  request_parser p;
  std::string s =
      "GET /ws HTTP/1.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n\x81\x05hello";
  std::size_t off = 0;
  int requests = 0;
  while (off < s.size()) {
    auto r = p.feed(s.data() + off, s.size() - off);
    off += r.consumed;
    CHECK(r.ev != ev::error);
    if (r.ev == ev::request) {
      ++requests;
      p.take();
      CHECK(!p.keep_alive());
    }
    if (r.consumed == 0) break;
  }
  CHECK(requests == 1);
}

TEST_CASE("absolute-form targets route by path") {
  auto o = feed_all("GET http://example.com/v1/jobs?x=1 HTTP/1.1\r\n\r\n");
  REQUIRE(o.requests.size() == 1);
  CHECK(o.requests[0].path == "/v1/jobs");
  CHECK(o.requests[0].query == "x=1");
}

TEST_CASE("limits") {
  parser_limits lim;
  lim.max_body_bytes = 10;
  lim.max_header_bytes = 100;
  lim.max_request_line = 50;

  SUBCASE("Content-Length above the body limit is refused before the body") {
    auto o = feed_all("POST / HTTP/1.1\r\nContent-Length: 11\r\n\r\n", lim);
    REQUIRE(o.failed);
    CHECK(o.error.status == 413);
    CHECK(o.error.code == "payload_too_large");
    o = feed_all("POST / HTTP/1.1\r\nContent-Length: 10\r\n\r\n0123456789", lim);
    CHECK(!o.failed);
    CHECK(o.requests.size() == 1);
  }
  SUBCASE("chunked bodies count as they arrive") {
    auto o = feed_all(
        "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n6\r\nabcdef\r\n6\r\nabcdef\r\n0\r\n\r\n",
        lim);
    REQUIRE(o.failed);
    CHECK(o.error.status == 413);
  }
  SUBCASE("a long request line is 414") {
    auto o = feed_all("GET /" + std::string(60, 'a') + " HTTP/1.1\r\n\r\n", lim);
    REQUIRE(o.failed);
    CHECK(o.error.status == 414);
    CHECK(o.error.code == "uri_too_long");
    // Also when it arrives in small pieces.
    std::vector<std::string> pieces{"GET /"};
    for (int i = 0; i < 20; ++i) pieces.push_back("aaaa");
    o = feed_pieces(pieces, lim);
    REQUIRE(o.failed);
    CHECK(o.error.status == 414);
  }
  SUBCASE("a big header block is 431") {
    std::string many = "GET / HTTP/1.1\r\n";
    for (int i = 0; i < 10; ++i) many += "X-H" + std::to_string(i) + ": 0123456789\r\n";
    auto o = feed_all(many + "\r\n", lim);
    REQUIRE(o.failed);
    CHECK(o.error.status == 431);
    CHECK(o.error.code == "headers_too_large");
    o = feed_all("GET / HTTP/1.1\r\nX: " + std::string(200, 'v') + "\r\n\r\n", lim);
    REQUIRE(o.failed);
    CHECK(o.error.status == 431);
  }
  SUBCASE("header limit counts trailers separately") {
    auto o = feed_all(
        "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nT: " + std::string(200, 't') +
            "\r\n\r\n",
        lim);
    REQUIRE(o.failed);
    CHECK(o.error.status == 431);
  }
}

TEST_CASE("malformed requests are 400 bad_request") {
  const char* bad[] = {
      "GARBAGE\r\n\r\n",
      "GET\r\n\r\n",
      "GET / HTTP/9.9\r\n\r\n",
      "GET / HTTP/1.1\r\nNo colon here\r\n\r\n",
      "GET / HTTP/1.1\r\nBad\x01Name: x\r\n\r\n",
      "POST / HTTP/1.1\r\nContent-Length: abc\r\n\r\n",
      "POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
      "POST / HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n",
      "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
      "GET /a b HTTP/1.1\r\n\r\n",
  };
  for (const char* b : bad) {
    INFO(std::string(b));
    auto o = feed_all(b);
    REQUIRE(o.failed);
    CHECK(o.error.status == 400);
    CHECK(o.error.code == "bad_request");
  }
  // After an error the parser stays failed.
  request_parser p;
  CHECK(p.feed("BAD\r\n\r\n").ev == ev::error);
  CHECK(p.feed("GET / HTTP/1.1\r\n\r\n").ev == ev::error);
}

TEST_CASE("error_body escapes like Go") {
  CHECK(error_body("not_found", "x") == "{\"error\":{\"code\":\"not_found\",\"message\":\"x\"}}\n");
  CHECK(error_body("c", "a\"b\\c\n<&>\x01") ==
        "{\"error\":{\"code\":\"c\",\"message\":\"a\\\"b\\\\c\\n\\u003c\\u0026\\u003e\\u0001\"}}\n");
  CHECK(error_body("c", "bad \xff utf8, ok \xc3\xa9, sep \xe2\x80\xa8") ==
        "{\"error\":{\"code\":\"c\",\"message\":\"bad \\ufffd utf8, ok \xc3\xa9, sep "
        "\\u2028\"}}\n");
}

TEST_CASE("wire helpers") {
  std::string h;
  wire::append_hex(h, 0);
  wire::append_hex(h, 255);
  wire::append_hex(h, 4096);
  CHECK(h == "0ff1000");
  CHECK(wire::http_date(784111777) == "Sun, 06 Nov 1994 08:49:37 GMT");
  CHECK(wire::reason_phrase(431) == "Request Header Fields Too Large");
}
