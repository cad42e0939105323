// The server over real loopback sockets: a thread runs server::run(), the test talks raw
// HTTP/1.1 to it. Socket receive timeouts only keep a broken build from hanging forever;
// no assertion depends on timing.
#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "io/http/server.hpp"
#include "io/http/wire.hpp"

using namespace shellctl::io::http;
using namespace std::chrono_literals;

namespace {

struct client_response {
  int status = 0;
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;
  std::map<std::string, std::string> trailers;
  bool complete = false;  // ended cleanly (length reached / last chunk seen)
};

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

class client {
 public:
  explicit client(std::uint16_t port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    timeval tv{20, 0};  // safety net only
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0)
      throw std::runtime_error("connect failed");
  }
  ~client() {
    if (fd_ >= 0) ::close(fd_);
  }
  client(const client&) = delete;
  client& operator=(const client&) = delete;

  void send(const std::string& s) {
    std::size_t off = 0;
    while (off < s.size()) {
      ssize_t n = ::send(fd_, s.data() + off, s.size() - off, MSG_NOSIGNAL);
      if (n <= 0) throw std::runtime_error("send failed");
      off += static_cast<std::size_t>(n);
    }
  }
  void close() {
    ::close(fd_);
    fd_ = -1;
  }

  // Reads one response (skipping 1xx unless asked). head_only: the request was HEAD.
  client_response read(bool head_only = false, bool keep_interim = false) {
    for (;;) {
      client_response r;
      std::string line = read_line();
      if (line.empty()) return r;
      r.status = std::stoi(line.substr(9, 3));
      for (;;) {
        std::string h = read_line();
        if (h.empty()) break;
        auto colon = h.find(':');
        std::string v = h.substr(colon + 1);
        while (!v.empty() && v.front() == ' ') v.erase(0, 1);
        r.headers[lower(h.substr(0, colon))] = v;
      }
      if (r.status < 200 && !keep_interim) continue;
      if (r.status < 200 || head_only) {
        r.complete = true;
        return r;
      }
      if (r.headers.count("transfer-encoding")) {
        for (;;) {
          std::string size_line = read_line();
          if (size_line.empty()) return r;  // cut off
          std::size_t n = std::stoul(size_line, nullptr, 16);
          if (n == 0) break;
          std::string data = read_n(n + 2);
          if (data.size() < n + 2) return r;
          r.body += data.substr(0, n);
        }
        for (;;) {
          std::string t = read_line();
          if (t.empty()) break;
          auto colon = t.find(':');
          r.trailers[lower(t.substr(0, colon))] = t.substr(colon + 2);
        }
        r.complete = true;
        return r;
      }
      std::size_t len = std::stoul(r.headers["content-length"]);
      r.body = read_n(len);
      r.complete = r.body.size() == len;
      return r;
    }
  }

  // Everything until the server closes the connection.
  std::string rest() {
    while (fill()) {
    }
    std::string out;
    out.swap(buf_);
    return out;
  }

  // True when the server closed the connection (EOF) with nothing more to read.
  bool at_eof() {
    if (!buf_.empty()) return false;
    char c;
    ssize_t n = ::recv(fd_, &c, 1, 0);
    if (n == 1) buf_.push_back(c);
    return n == 0 || (n < 0 && errno == ECONNRESET);
  }

 private:
  bool fill() {
    char tmp[65536];
    ssize_t n = ::recv(fd_, tmp, sizeof tmp, 0);
    if (n <= 0) return false;
    buf_.append(tmp, static_cast<std::size_t>(n));
    return true;
  }
  std::string read_line() {
    for (;;) {
      auto p = buf_.find("\r\n");
      if (p != std::string::npos) {
        std::string l = buf_.substr(0, p);
        buf_.erase(0, p + 2);
        return l;
      }
      if (!fill()) return {};
    }
  }
  std::string read_n(std::size_t n) {
    while (buf_.size() < n)
      if (!fill()) break;
    std::string out = buf_.substr(0, std::min(n, buf_.size()));
    buf_.erase(0, out.size());
    return out;
  }

  int fd_ = -1;
  std::string buf_;
};

// Requests the test wants to answer itself, by path.
struct held {
  std::mutex mu;
  std::condition_variable cv;
  std::map<std::string, responder> by_path;
  std::map<std::string, std::string> bodies;

  void put(const std::string& path, responder r, std::string body) {
    std::lock_guard<std::mutex> lk(mu);
    by_path[path] = std::move(r);
    bodies[path] = std::move(body);
    cv.notify_all();
  }
  responder take(const std::string& path) {
    std::unique_lock<std::mutex> lk(mu);
    cv.wait(lk, [&] { return by_path.count(path) != 0; });
    responder r = by_path[path];
    by_path.erase(path);
    return r;
  }
};

response text(int status, std::string body) {
  response r;
  r.status = status;
  r.headers.push_back({"Content-Type", "text/plain"});
  r.body = std::move(body);
  return r;
}

class test_server {
 public:
  explicit test_server(server_config cfg = {}) {
    cfg.host = "127.0.0.1";
    cfg.port = 0;
    cfg.handle_signals = false;
    srv_ = std::make_unique<server>(cfg, [this](request&& r, responder resp) {
      handle(std::move(r), std::move(resp));
    });
    srv_->listen();
    thread_ = std::thread([this] {
      srv_->run();
      returned_ = true;
    });
  }
  ~test_server() {
    srv_->stop();
    if (thread_.joinable()) thread_.join();
  }
  std::uint16_t port() const { return srv_->port(); }
  void stop() { srv_->stop(); }
  void join() { thread_.join(); }
  bool returned() const { return returned_; }

  held hold;
  std::atomic<int> drains{0};
  // Streamed uploads: what the handler saw (set on the loop thread, read by the test after
  // the answer or under the mutex).
  std::mutex up_mu;
  std::condition_variable up_cv;
  std::string up_failure;
  std::size_t up_max_piece = 0;
  std::size_t up_pieces = 0;  // pieces seen by all uploads

 private:
  void handle(request&& r, responder resp) {
    if (r.path.rfind("/hold", 0) == 0) {
      hold.put(r.path, std::move(resp), std::move(r.body));
    } else if (r.path == "/echo") {
      resp.send(text(200, r.method + " " + r.body));
    } else if (r.path == "/drop") {
      // The responder dies here unanswered.
    } else if (r.path == "/throw") {
      throw std::runtime_error("boom");
    } else if (r.path == "/stream") {
      // query: number of 64 KiB chunks
      int n = r.query.empty() ? 3 : std::stoi(r.query);
      auto sent = std::make_shared<int>(0);
      response head;
      head.headers.push_back({"Content-Type", "application/octet-stream"});
      head.headers.push_back({"Trailer", "X-Count"});
      resp.start_stream(std::move(head), [this, resp, sent, n] {
        ++drains;
        if (*sent < n) {
          resp.send_chunk(std::string(64 << 10, static_cast<char>('a' + *sent % 26)));
          ++*sent;
        } else {
          resp.end_stream({{"X-Count", std::to_string(*sent)}});
        }
      });
    } else if (r.path.rfind("/upload", 0) == 0) {
      // A streamed body (the head check set stream_body): count it piece by piece.
      struct progress {
        std::size_t bytes = 0, pieces = 0;
      };
      auto p = std::make_shared<progress>();
      const bool early = r.path == "/upload-early";
      const bool slow = r.path == "/upload-slow";  // a consumer slower than the connection
      const bool late = r.path == "/upload-late";  // one that starts reading after 300 ms
      CHECK(r.body.empty());
      auto on_piece = [this, resp, p, early, slow](body_piece piece) {
        std::lock_guard<std::mutex> lk(up_mu);
        if (piece.failed) {
          up_failure = piece.error;
          up_cv.notify_all();
          return;
        }
        if (piece.end) {
          resp.send(text(200, std::to_string(p->bytes) + " " + std::to_string(p->pieces)));
          return;
        }
        p->bytes += piece.data.size();
        ++p->pieces;
        up_max_piece = std::max(up_max_piece, piece.data.size());
        ++up_pieces;
        up_cv.notify_all();
        if (early) {
          resp.send(text(200, "early"));
          return;
        }
        if (slow) {
          std::thread([resp] {
            std::this_thread::sleep_for(50ms);
            resp.more_body();
          }).detach();
          return;
        }
        resp.more_body();
      };
      if (late) {
        std::thread([resp, on_piece] {
          std::this_thread::sleep_for(300ms);
          resp.read_body(on_piece);
        }).detach();
      } else {
        resp.read_body(on_piece);
      }
    } else if (r.path == "/abort") {
      auto step = std::make_shared<int>(0);
      resp.start_stream(response{}, [resp, step] {
        if ((*step)++ == 0)
          resp.send_chunk("partial");
        else
          resp.abort();
      });
    } else {
      resp.send(text(200, "ok"));
    }
  }

  std::unique_ptr<server> srv_;
  std::thread thread_;
  std::atomic<bool> returned_{false};
};

}  // namespace

TEST_CASE("keep-alive: several requests on one connection, Date and Content-Length set") {
  test_server s;
  client c(s.port());
  for (int i = 0; i < 3; ++i) {
    c.send("GET /ok HTTP/1.1\r\nHost: x\r\n\r\n");
    auto r = c.read();
    CHECK(r.status == 200);
    CHECK(r.body == "ok");
    CHECK(r.headers["content-length"] == "2");
    CHECK(r.headers.count("date") == 1);
    CHECK(r.headers.count("connection") == 0);
  }
  c.send("POST /echo HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc");
  CHECK(c.read().body == "POST abc");
}

TEST_CASE("pipelined answers leave in request order even when answered out of order") {
  test_server s;
  client c(s.port());
  c.send("GET /hold1 HTTP/1.1\r\n\r\nGET /hold2 HTTP/1.1\r\n\r\nGET /ok HTTP/1.1\r\n\r\n");
  responder first = s.hold.take("/hold1");
  responder second = s.hold.take("/hold2");
  std::thread([second] { second.send(text(200, "second")); }).join();
  std::thread([first] { first.send(text(200, "first")); }).join();
  CHECK(c.read().body == "first");
  CHECK(c.read().body == "second");
  CHECK(c.read().body == "ok");
}

TEST_CASE("many pipelined requests in one write are all answered in order") {
  test_server s;
  client c(s.port());
  std::string all;
  for (int i = 0; i < 200; ++i)
    all += "POST /echo HTTP/1.1\r\nContent-Length: " + std::to_string(std::to_string(i).size()) +
           "\r\n\r\n" + std::to_string(i);
  c.send(all);
  for (int i = 0; i < 200; ++i) CHECK(c.read().body == "POST " + std::to_string(i));
}

TEST_CASE("HTTP/1.0 and Connection: close end the connection after the answer") {
  test_server s;
  {
    client c(s.port());
    c.send("GET /ok HTTP/1.0\r\n\r\n");
    auto r = c.read();
    CHECK(r.status == 200);
    CHECK(r.headers["connection"] == "close");
    CHECK(c.at_eof());
  }
  {
    client c(s.port());
    c.send("GET /ok HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
    auto r = c.read();
    CHECK(r.headers["connection"] == "keep-alive");
    c.send("GET /ok HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
    CHECK(c.read().status == 200);
  }
  {
    client c(s.port());
    // Bytes after a Connection: close request are not served.
    c.send("GET /ok HTTP/1.1\r\nConnection: close\r\n\r\nGET /ok HTTP/1.1\r\n\r\n");
    CHECK(c.read().headers["connection"] == "close");
    CHECK(c.at_eof());
  }
}

TEST_CASE("HEAD answers without a body") {
  test_server s;
  client c(s.port());
  c.send("HEAD /ok HTTP/1.1\r\n\r\nGET /ok HTTP/1.1\r\n\r\n");
  auto r = c.read(true);
  CHECK(r.status == 200);
  CHECK(r.headers["content-length"] == "2");
  CHECK(c.read().body == "ok");  // the next response starts right after the head
}

TEST_CASE("Expect: 100-continue gets an interim answer before the body is sent") {
  test_server s;
  client c(s.port());
  c.send("POST /echo HTTP/1.1\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\n");
  auto interim = c.read(false, true);
  CHECK(interim.status == 100);
  c.send("body");
  auto r = c.read();
  CHECK(r.status == 200);
  CHECK(r.body == "POST body");
}

TEST_CASE("chunked request bodies") {
  test_server s;
  client c(s.port());
  c.send("POST /echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3;x=y\r\nabc\r\n");
  c.send("2\r\nde\r\n0\r\nTrailer-A: 1\r\n\r\n");
  CHECK(c.read().body == "POST abcde");
}

TEST_CASE("front errors carry the JSON envelope and close the connection") {
  server_config cfg;
  cfg.max_body_bytes = 100;
  cfg.max_header_bytes = 200;
  cfg.max_request_line = 100;
  test_server s(cfg);
  struct cse {
    std::string wire;
    int status;
    std::string code;
  } cases[] = {
      {"NOT HTTP\r\n\r\n", 400, "bad_request"},
      {"POST /echo HTTP/1.1\r\nContent-Length: 101\r\n\r\n", 413, "payload_too_large"},
      {"GET /" + std::string(200, 'u') + " HTTP/1.1\r\n\r\n", 414, "uri_too_long"},
      {"GET / HTTP/1.1\r\nX: " + std::string(300, 'h') + "\r\n\r\n", 431, "headers_too_large"},
  };
  for (const auto& k : cases) {
    client c(s.port());
    c.send(k.wire);
    auto r = c.read();
    CHECK(r.status == k.status);
    CHECK(r.headers["content-type"] == "application/json");
    CHECK(r.headers["connection"] == "close");
    std::string prefix = "{\"error\":{\"code\":\"" + k.code + "\",\"message\":\"";
    CHECK(r.body.compare(0, prefix.size(), prefix) == 0);
    CHECK(r.body.size() > prefix.size() + 4);
    CHECK(r.body.substr(r.body.size() - 4) == "\"}}\n");
    CHECK(c.at_eof());
  }
}

TEST_CASE("an answer after an error in a pipeline still comes first") {
  test_server s;
  client c(s.port());
  c.send("GET /hold-p HTTP/1.1\r\n\r\nBROKEN\r\n\r\n");
  responder h = s.hold.take("/hold-p");
  h.send(text(200, "held"));
  CHECK(c.read().body == "held");
  CHECK(c.read().status == 400);
  CHECK(c.at_eof());
}

TEST_CASE("request_timeout: a request that stops arriving gets 408; idle connections close") {
  server_config cfg;
  cfg.request_timeout = 200ms;
  cfg.idle_timeout = 300ms;
  test_server s(cfg);
  {
    client c(s.port());
    c.send("POST /echo HTTP/1.1\r\nContent-Length: 10\r\n\r\nabc");
    auto r = c.read();
    CHECK(r.status == 408);
    CHECK(r.body.find("request_timeout") != std::string::npos);
    CHECK(c.at_eof());
  }
  {
    client c(s.port());
    c.send("GET /ok HTTP/1.1\r\n\r\n");
    CHECK(c.read().status == 200);
    CHECK(c.at_eof());  // then idle: closed without a response
  }
  {
    // A held request (long-poll) outlives both timeouts.
    client c(s.port());
    c.send("GET /hold-long HTTP/1.1\r\n\r\n");
    responder h = s.hold.take("/hold-long");
    std::this_thread::sleep_for(700ms);
    CHECK(h.connected());
    h.send(text(200, "late"));
    CHECK(c.read().body == "late");
  }
}

TEST_CASE("a responder dropped unanswered gives 500 internal_error; a throwing handler too") {
  test_server s;
  client c(s.port());
  c.send("GET /drop HTTP/1.1\r\n\r\nGET /throw HTTP/1.1\r\n\r\nGET /ok HTTP/1.1\r\n\r\n");
  auto r = c.read();
  CHECK(r.status == 500);
  CHECK(r.body.find("\"internal_error\"") != std::string::npos);
  CHECK(c.read().status == 500);
  CHECK(c.read().status == 200);  // the connection is still usable

  // Dropped from another thread.
  c.send("GET /hold-d HTTP/1.1\r\n\r\n");
  { std::thread([r = s.hold.take("/hold-d")]() mutable { r = responder{}; }).join(); }
  CHECK(c.read().status == 500);
}

TEST_CASE("the first answer wins") {
  test_server s;
  client c(s.port());
  c.send("GET /hold-w HTTP/1.1\r\n\r\nGET /ok HTTP/1.1\r\n\r\n");
  responder h = s.hold.take("/hold-w");
  h.send(text(201, "one"));
  h.send(text(202, "two"));
  h.start_stream(response{}, [] {});
  auto r = c.read();
  CHECK(r.status == 201);
  CHECK(r.body == "one");
  CHECK(c.read().body == "ok");
}

TEST_CASE("an answer for a client that left is discarded safely") {
  test_server s;
  responder h;
  {
    client c(s.port());
    c.send("GET /hold-gone HTTP/1.1\r\n\r\n");
    h = s.hold.take("/hold-gone");
  }
  // connected() turns false once the loop has seen the close; answer either way.
  for (int i = 0; i < 2000 && h.connected(); ++i) std::this_thread::sleep_for(5ms);
  CHECK(!h.connected());
  h.send(text(200, "nobody"));
  client c2(s.port());
  c2.send("GET /ok HTTP/1.1\r\n\r\n");
  CHECK(c2.read().status == 200);
}

TEST_CASE("streaming with trailers and back-pressure") {
  test_server s;
  client c(s.port());
  c.send("GET /stream?64 HTTP/1.1\r\n\r\n");  // 4 MiB in 64 KiB chunks
  auto r = c.read();
  CHECK(r.status == 200);
  CHECK(r.complete);
  CHECK(r.headers["transfer-encoding"] == "chunked");
  CHECK(r.headers["trailer"] == "X-Count");
  CHECK(r.body.size() == 64u * (64u << 10));
  CHECK(r.body[0] == 'a');
  CHECK(r.body[r.body.size() - 1] == static_cast<char>('a' + 63 % 26));
  CHECK(r.trailers["x-count"] == "64");
  CHECK(s.drains.load() == 65);  // once after the head, then once per flushed chunk
  // The connection stays usable after a stream.
  c.send("GET /ok HTTP/1.1\r\n\r\n");
  CHECK(c.read().body == "ok");
}

TEST_CASE("HTTP/1.0 streams are delimited by the connection end") {
  test_server s;
  client c(s.port());
  c.send("GET /stream?2 HTTP/1.0\r\n\r\n");
  auto r = c.read(true);  // head only; the body runs to EOF
  CHECK(r.status == 200);
  CHECK(r.headers.count("transfer-encoding") == 0);
  CHECK(r.headers["connection"] == "close");
  std::string body = c.rest();
  CHECK(body == std::string(64 << 10, 'a') + std::string(64 << 10, 'b'));
}

TEST_CASE("abort drops the connection without the terminating chunk") {
  test_server s;
  client c(s.port());
  c.send("GET /abort HTTP/1.1\r\n\r\n");
  auto r = c.read();
  CHECK(r.status == 200);
  CHECK(!r.complete);
  CHECK(r.body == "partial");
  CHECK(c.at_eof());
}

TEST_CASE("200 concurrent connections") {
  test_server s;
  std::vector<std::unique_ptr<client>> cs;
  for (int i = 0; i < 200; ++i) cs.push_back(std::make_unique<client>(s.port()));
  for (int i = 0; i < 200; ++i)
    cs[i]->send("POST /echo HTTP/1.1\r\nContent-Length: " +
                std::to_string(std::to_string(i).size()) + "\r\n\r\n" + std::to_string(i));
  int ok = 0;
  for (int i = 0; i < 200; ++i) ok += cs[i]->read().body == "POST " + std::to_string(i);
  CHECK(ok == 200);
}

TEST_CASE("graceful shutdown lets an in-flight request finish, then run() returns") {
  test_server s;
  client busy(s.port());
  client idle(s.port());
  idle.send("GET /ok HTTP/1.1\r\n\r\n");
  CHECK(idle.read().status == 200);
  busy.send("GET /hold-s HTTP/1.1\r\n\r\n");
  responder h = s.hold.take("/hold-s");
  s.stop();
  CHECK(idle.at_eof());  // idle connections are closed at once
  CHECK(!s.returned());
  std::thread([h] { h.send(text(200, "finished")); }).join();
  auto r = busy.read();
  CHECK(r.body == "finished");
  CHECK(r.headers["connection"] == "close");
  CHECK(busy.at_eof());
  s.join();
  CHECK(s.returned());
}

TEST_CASE("shutdown_grace bounds a request that never finishes") {
  server_config cfg;
  cfg.shutdown_grace = 100ms;
  test_server s(cfg);
  client busy(s.port());
  busy.send("GET /hold-forever HTTP/1.1\r\n\r\n");
  responder h = s.hold.take("/hold-forever");
  s.stop();
  s.join();
  CHECK(s.returned());
  CHECK(!h.connected());
  h.send(text(200, "too late"));  // discarded, no crash
}

TEST_CASE("listen errors are one line") {
  test_server s;
  server_config cfg;
  cfg.port = s.port();
  cfg.handle_signals = false;
  server other(cfg, [](request&&, responder) {});
  try {
    other.listen();
    FAIL("listen should have failed");
  } catch (const std::runtime_error& e) {
    CHECK(std::string(e.what()) ==
          "listen tcp 127.0.0.1:" + std::to_string(s.port()) + ": address already in use");
  }
  server_config bad;
  bad.host = "no-such-host.invalid";
  server third(bad, [](request&&, responder) {});
  CHECK_THROWS_AS(third.listen(), std::runtime_error);
}

TEST_CASE("IPv6 loopback and host names") {
  for (const char* host : {"[::1]", "localhost", "0.0.0.0"}) {
    server_config cfg;
    cfg.host = host;
    cfg.port = 0;
    cfg.handle_signals = false;
    server srv(cfg, [](request&&, responder r) { r.send(text(200, "v6")); });
    bool ok = true;
    try {
      srv.listen();
    } catch (const std::exception&) {
      ok = false;  // no IPv6 on this machine
    }
    if (!ok) continue;
    CHECK(srv.port() != 0);
    std::thread t([&] { srv.run(); });
    srv.stop();
    t.join();
  }
}

namespace {
server_config streaming_config() {
  server_config cfg;
  cfg.max_body_bytes = 1u << 20;  // collected bodies: 1 MiB; streamed ones have no limit
  cfg.head_check = [](request& head) -> std::optional<response> {
    if (head.path.rfind("/upload", 0) == 0) head.stream_body = true;
    return std::nullopt;
  };
  return cfg;
}
}  // namespace

TEST_CASE("a streamed request body: beyond the body limit, piecewise, in a bounded window") {
  test_server s(streaming_config());
  client c(s.port());
  const std::size_t total = 48u << 20;  // more than loopback's socket buffers hold
  std::thread sender([&] {
    c.send("POST /upload HTTP/1.1\r\nContent-Length: " + std::to_string(total) + "\r\n\r\n");
    const std::string block(1u << 20, 'z');
    for (std::size_t i = 0; i < total / block.size(); ++i) c.send(block);
  });
  auto r = c.read();
  sender.join();
  CHECK(r.status == 200);
  CHECK(r.body.rfind(std::to_string(total) + " ", 0) == 0);
  std::lock_guard<std::mutex> lk(s.up_mu);
  // Each piece is what had queued since the last: never more than the window plus a read.
  CHECK(s.up_max_piece <= (256u << 10) + (256u << 10));  // the window plus one read buffer
  // The connection carries on after a streamed body.
  c.send("GET /ok HTTP/1.1\r\n\r\n");
  CHECK(c.read().body == "ok");
  // A collected body is still limited.
  client big(s.port());
  big.send("POST /echo HTTP/1.1\r\nContent-Length: 2000000\r\n\r\n");
  CHECK(big.read().status == 413);
}

TEST_CASE("a streamed body that ends while reading is paused for its window: the next request is read") {
  // Nobody takes the body yet: it fills the window, and its last bytes complete the message
  // in the read that leaves reading paused. Reading must resume for the request that follows
  // on the same connection (it used to stay paused, and that request was never read).
  test_server s(streaming_config());
  for (const std::size_t total : {300000u, 600000u}) {
    CAPTURE(total);
    client c(s.port());
    c.send("POST /upload-late HTTP/1.1\r\nContent-Length: " + std::to_string(total) + "\r\n\r\n" +
           std::string(total, 'q'));
    auto r = c.read();
    CHECK(r.status == 200);
    CHECK(r.body.rfind(std::to_string(total) + " ", 0) == 0);
    c.send("GET /ok HTTP/1.1\r\n\r\n");
    CHECK(c.read().body == "ok");
  }
}

TEST_CASE("a streamed chunked body with Expect: 100-continue") {
  test_server s(streaming_config());
  client c(s.port());
  c.send("POST /upload HTTP/1.1\r\nTransfer-Encoding: chunked\r\nExpect: 100-continue\r\n\r\n");
  auto interim = c.read(false, true);
  CHECK(interim.status == 100);
  c.send("5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n");
  auto r = c.read();
  CHECK(r.status == 200);
  CHECK(r.body.rfind("11 ", 0) == 0);
}

TEST_CASE("a streamed body cut off by the client is a failed piece; an early answer closes") {
  test_server s(streaming_config());
  {
    client c(s.port());
    c.send("POST /upload HTTP/1.1\r\nContent-Length: 1000000\r\n\r\n" + std::string(5000, 'x'));
    {
      // The handler has the first piece: the cut comes in the middle of the body.
      std::unique_lock<std::mutex> lk(s.up_mu);
      REQUIRE(s.up_cv.wait_for(lk, 20s, [&] { return s.up_pieces > 0; }));
    }
    c.close();
  }
  {
    std::unique_lock<std::mutex> lk(s.up_mu);
    REQUIRE(s.up_cv.wait_for(lk, 20s, [&] { return !s.up_failure.empty(); }));
    CHECK(s.up_failure == "the client closed the connection before the body ended");
  }
  client e(s.port());
  e.send("POST /upload-early HTTP/1.1\r\nContent-Length: 1000000\r\n\r\n" + std::string(5000, 'x'));
  auto r = e.read();
  CHECK(r.body == "early");
  CHECK(r.headers["connection"] == "close");
}

TEST_CASE("stream_acked counts the stream's bytes written") {
  test_server s;
  client c(s.port());
  c.send("GET /hold-acked HTTP/1.1\r\n\r\n");
  responder h = s.hold.take("/hold-acked");
  std::atomic<int> woken{0};
  h.start_stream(response{}, [&woken] { ++woken; });
  h.send_chunk(std::string(100000, 'q'));
  h.send_chunk(std::string(50000, 'r'));
  for (int i = 0; i < 4000 && h.stream_acked() < 150000; ++i) std::this_thread::sleep_for(5ms);
  CHECK(h.stream_acked() == 150000);
  CHECK(woken.load() >= 1);
  h.end_stream({});
  auto r = c.read();
  CHECK(r.body.size() == 150000);
}
