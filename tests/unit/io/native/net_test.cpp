// The network path's pure parts (docs/native-scopes.md "The network broker", unit tier): the
// address classifier over every denied range and its mapped and NAT64 forms, the mediator
// exception, IP:port text, the proxy's request heads and target matching, the broker's DIAL
// line; and the catalog's network budget on a real SQLite file: pins kept in order, one unit
// per dial, bytes reserved min(asked, left), counters that never decrease, all surviving a
// reopen.
#include <doctest/doctest.h>

#include <unistd.h>

#include <cstdlib>
#include <string>

#include "io/native/scope/catalog.hpp"
#include "io/native/net/net_address.hpp"
#include "io/native/net/proxy_request.hpp"

namespace native = shellctl::io::native;

namespace {

bool denied(const std::string& ip) {
  auto e = native::parse_endpoint(ip, 443);
  REQUIRE(e.has_value());
  return native::denied_address(*e);
}

}  // namespace

TEST_CASE("every denied range (docs/native-scopes.md \"The network broker\") is denied, in v4, mapped, compatible and NAT64 form") {
  for (const char* ip : {"0.0.0.0", "0.1.2.3", "10.0.0.1", "10.255.255.255", "100.64.0.1", "100.127.255.254",
                         "127.0.0.1", "127.1.2.3", "169.254.169.254", "172.16.0.1", "172.31.255.255",
                         "192.0.0.8", "192.168.1.1", "198.18.0.1", "198.19.255.255", "224.0.0.1",
                         "239.255.255.250", "240.0.0.1", "255.255.255.255"}) {
    const std::string v4 = ip;
    CHECK_MESSAGE(denied(v4), v4);
    CHECK_MESSAGE(denied("::ffff:" + v4), ("mapped " + v4));
  }
  for (const char* ip : {"::", "::1", "fc00::1", "fd00:ec2::254", "fdff::1", "fe80::1", "febf::1", "ff02::1",
                         "64:ff9b::a9fe:a9fe", "64:ff9b::7f00:1", "64:ff9b:1::1", "::127.0.0.1"}) {
    const std::string v6 = ip;
    CHECK_MESSAGE(denied(v6), v6);
  }
}

TEST_CASE("public addresses, and the edges just outside the ranges, are allowed") {
  for (const char* ip : {"1.1.1.1", "8.8.8.8", "9.255.255.255", "11.0.0.0", "100.63.255.255", "100.128.0.0",
                         "172.15.255.255", "172.32.0.0", "192.0.1.1", "192.0.2.1", "192.169.0.0",
                         "198.17.255.255", "198.20.0.0", "203.0.113.7", "223.255.255.255", "2001:db8::1",
                         "2606:4700::1111", "::ffff:8.8.8.8", "64:ff9b::808:808", "fec0::1"}) {
    const std::string a = ip;
    CHECK_MESSAGE(!denied(a), a);
  }
}

TEST_CASE("the mediator is the one exception, by exact address and port") {
  const auto mediator = native::parse_ip_port("127.0.0.1:8443");
  REQUIRE(mediator);
  CHECK(native::allowed_address(*native::parse_endpoint("127.0.0.1", 8443), mediator));
  CHECK_FALSE(native::allowed_address(*native::parse_endpoint("127.0.0.1", 8444), mediator));
  CHECK_FALSE(native::allowed_address(*native::parse_endpoint("127.0.0.2", 8443), mediator));
  CHECK_FALSE(native::allowed_address(*native::parse_endpoint("127.0.0.1", 8443), std::nullopt));
  const auto v6 = native::parse_ip_port("[fd00::5]:80");
  REQUIRE(v6);
  CHECK(native::allowed_address(*native::parse_endpoint("fd00::5", 80), v6));
  for (const char* bad : {"127.0.0.1", "127.0.0.1:", "127.0.0.1:0", "127.0.0.1:65536", "fd00::5:80",
                          "[fd00::5]", "host:80", ":80", "127.0.0.1:+80"})
    CHECK_MESSAGE(!native::parse_ip_port(bad), bad);
}

TEST_CASE("pin_target keeps allowed addresses and names why when none is left") {
  std::string why;
  auto pub = native::pin_target("203.0.113.7", 443, std::nullopt, why);
  CHECK(pub.addresses == std::vector<std::string>{"203.0.113.7"});
  auto local = native::pin_target("localhost", 443, std::nullopt, why);
  CHECK(local.addresses.empty());
  CHECK(why.find("denied") != std::string::npos);
  auto mediated = native::pin_target("localhost", 443, native::parse_ip_port("127.0.0.1:443"), why);
  CHECK(mediated.addresses == std::vector<std::string>{"127.0.0.1"});
  auto none = native::pin_target("no-such-host.invalid", 443, std::nullopt, why);
  CHECK(none.addresses.empty());
}

TEST_CASE("the proxy reads CONNECT and absolute-form http, and nothing else") {
  native::proxy_refusal why;
  auto c = native::parse_proxy_head("CONNECT a.example:443 HTTP/1.1\r\nHost: a.example:443\r\n\r\n", why);
  REQUIRE(c);
  CHECK(c->what == native::proxy_request::kind::connect);
  CHECK(c->host == "a.example");
  CHECK(c->port == 443);
  auto v6 = native::parse_proxy_head("CONNECT [2001:db8::1]:8443 HTTP/1.1\r\n\r\n", why);
  REQUIRE(v6);
  CHECK(v6->host == "[2001:db8::1]");
  auto h = native::parse_proxy_head("POST http://a.example/x/y?z=1 HTTP/1.1\r\nHost: a.example\r\nContent-Length: 2\r\n\r\n", why);
  REQUIRE(h);
  CHECK(h->what == native::proxy_request::kind::http);
  CHECK(h->port == 80);
  CHECK(h->forward_head == "POST /x/y?z=1 HTTP/1.1\r\nHost: a.example\r\nContent-Length: 2\r\n\r\n");
  auto bare = native::parse_proxy_head("GET http://a.example:8080 HTTP/1.0\r\n\r\n", why);
  REQUIRE(bare);
  CHECK(bare->port == 8080);
  CHECK(bare->forward_head.rfind("GET / HTTP/1.0\r\n", 0) == 0);
  const std::pair<const char*, int> refused[] = {
      {"GET /relative HTTP/1.1\r\n\r\n", 403},
      {"GET https://a.example/ HTTP/1.1\r\n\r\n", 403},
      {"CONNECT a.example HTTP/1.1\r\n\r\n", 400},
      {"CONNECT a.example:0 HTTP/1.1\r\n\r\n", 400},
      {"CONNECT a.example:65536 HTTP/1.1\r\n\r\n", 400},
      {"CONNECT a.example:443 HTTP/2\r\n\r\n", 400},
      {"CONNECT  a.example:443 HTTP/1.1\r\n\r\n", 400},
      {"GET http://user@a.example/ HTTP/1.1\r\n\r\n", 400},
      {"GET http://a.exa mple/ HTTP/1.1\r\n\r\n", 400},
      {"nonsense\r\n\r\n", 400},
  };
  for (const auto& [head, status] : refused) {
    const std::string text = head;
    CHECK_MESSAGE(!native::parse_proxy_head(text, why), text);
    CHECK_MESSAGE(why.status == status, text);
  }
  CHECK(!native::parse_proxy_head(std::string(native::kProxyHeadMax + 1, 'a'), why));
  CHECK(why.status == 431);
  CHECK(native::proxy_head_length("GET / HTTP/1.1\r\n") == 0);
  CHECK(native::proxy_head_length("GET / HTTP/1.1\r\n\r\nbody") == 18);
}

TEST_CASE("targets match by host (any case) and exact port") {
  const std::vector<native::proxy_target> t = {{"a.example", 443}, {"2001:db8::1", 8443}};
  CHECK(native::match_target(t, "A.Example", 443) == std::size_t{0});
  CHECK(!native::match_target(t, "a.example", 444));
  CHECK(!native::match_target(t, "b.example", 443));
  CHECK(native::match_target(t, "[2001:db8::1]", 8443) == std::size_t{1});
}

TEST_CASE("the DIAL line has one spelling") {
  CHECK(native::parse_dial_line("DIAL 0\n") == std::size_t{0});
  CHECK(native::parse_dial_line("DIAL 15\n") == std::size_t{15});
  for (const char* bad : {"DIAL 16\n", "DIAL 01\n", "DIAL -1\n", "DIAL 1", "DIAL \n", "dial 1\n", "DIAL 1 \n", "DIAL 1\r\n"})
    CHECK_MESSAGE(!native::parse_dial_line(bad), bad);
}

TEST_CASE("the network budget: pins in order, a unit per dial, bytes before reads, never lowered") {
  char tmpl[] = "/tmp/shellctl-netbudget-XXXXXX";
  const std::string dir = ::mkdtemp(tmpl);
  const std::string path = dir + "/catalog.db";
  native::scope_record r;
  r.scope_id = "net";
  r.generation = 1;
  r.created_at = "2026-12-05T00:00:00Z";
  native::scope_network net;
  net.pins = {{"a.example", 443, {"203.0.113.9", "203.0.113.7"}}, {"b.example", 80, {"2001:db8::1"}}};
  net.bytes_limit = 100000;
  net.conns_limit = 2;
  {
    native::catalog c(path);
    REQUIRE(c.begin_create(r, net) == native::create_outcome::created);
    const auto pins = c.net_pins("net");
    REQUIRE(pins.size() == 2);
    CHECK(pins[0].addresses == std::vector<std::string>{"203.0.113.9", "203.0.113.7"});
    CHECK(pins[1].host == "b.example");
    CHECK(c.charge_net_connection("net"));
    CHECK(c.reserve_net_bytes("net", 65536) == 65536);
    CHECK(c.reserve_net_bytes("net", 65536) == 100000 - 65536);  // min(asked, left)
    CHECK(c.reserve_net_bytes("net", 65536) == 0);
    CHECK(c.reserve_net_bytes("other", 10) == 0);  // no budget: nothing
  }
  {
    native::catalog c(path);  // reopened: the counters stayed
    auto b = c.net_budget("net");
    REQUIRE(b);
    CHECK(b->bytes_used == 100000);
    CHECK(b->conns_used == 1);
    CHECK(c.charge_net_connection("net"));
    CHECK_FALSE(c.charge_net_connection("net"));  // the third dial
    CHECK(c.net_budget("net")->conns_used == 2);
    CHECK_FALSE(c.net_budget("none"));
    // Burial removes the pins and budget with the scope.
    REQUIRE(c.transition("net", 1, {native::scope_state::creating}, native::scope_state::destroying, "deleted", "now"));
    REQUIRE(c.bury("net", 1, "deleted", "now"));
    CHECK(c.net_pins("net").empty());
    CHECK_FALSE(c.net_budget("net"));
  }
  (void)!std::system(("rm -rf " + dir).c_str());
}
