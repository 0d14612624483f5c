// The metrics server's socket side (rank_pipeline/src/http/http_server.h) over real loopback
// sockets: a request answered, a cut request answered 400, a silent client 408 after the
// deadline, an oversized head 431 without losing the reply to a reset, and the textfile tick.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <string>

#include "http/http_server.h"

namespace sp::rank_pipeline::http {
namespace {

int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  socklen_t len = sizeof(a);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

// Sends `raw`, optionally ends the sending side, returns everything the server said.
std::string exchange(int port, const std::string& raw, bool end_sending) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    ::close(fd);
    return "connect failed";
  }
  if (!raw.empty()) (void)::send(fd, raw.data(), raw.size(), MSG_NOSIGNAL);
  if (end_sending) ::shutdown(fd, SHUT_WR);
  std::string reply;
  char buf[4096];
  ssize_t n = 0;
  while ((n = ::recv(fd, buf, sizeof(buf), 0)) > 0) reply.append(buf, static_cast<size_t>(n));
  ::close(fd);
  return reply;
}

class HttpServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ServerOptions o;
    o.port = free_port();
    o.io_timeout = std::chrono::milliseconds(300);
    o.tick_every = std::chrono::milliseconds(20);
    std::string error;
    server_ = HttpServer::start(
        o,
        [](const Request& r) {
          Response out;
          out.body = r.method + " " + r.path + " " + r.body;
          return out;
        },
        [this] { ticks_++; }, &error);
    ASSERT_TRUE(server_) << error;
  }
  std::unique_ptr<HttpServer> server_;
  std::atomic<int> ticks_{0};
};

TEST_F(HttpServerTest, AnswersARequestAndClosesTheConnection) {
  const std::string reply =
      exchange(server_->port(), "POST /control HTTP/1.1\r\nContent-Length: 2\r\n\r\nhi", false);
  EXPECT_EQ(reply.rfind("HTTP/1.1 200 OK\r\n", 0), 0U) << reply;
  EXPECT_NE(reply.find("Content-Length: 16\r\n"), std::string::npos) << reply;
  EXPECT_NE(reply.find("Connection: close\r\n\r\nPOST /control hi"), std::string::npos) << reply;
}

TEST_F(HttpServerTest, ACutRequestIs400AndASilentClient408) {
  EXPECT_EQ(exchange(server_->port(), "GET /metr", true).rfind("HTTP/1.1 400 ", 0), 0U);
  EXPECT_EQ(exchange(server_->port(), "", false).rfind("HTTP/1.1 408 ", 0), 0U);
  EXPECT_EQ(exchange(server_->port(), "GET /m HTTP/1.1\r\n\r\n", false).rfind("HTTP/1.1 200 ", 0), 0U);
  EXPECT_EQ(server_->refused(), 2U);
}

TEST_F(HttpServerTest, AnOversizedHeadIs431AndTheReplyArrives) {
  const std::string raw = "GET /" + std::string(40000, 'a') + " HTTP/1.1\r\n\r\n";
  const std::string reply = exchange(server_->port(), raw, true);
  EXPECT_EQ(reply.rfind("HTTP/1.1 431 ", 0), 0U) << reply.substr(0, 80);
  EXPECT_EQ(reply.find("aaaa"), std::string::npos);
}

TEST_F(HttpServerTest, TicksOnItsThreadAndStopsWithinItsBound) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (ticks_.load() < 3 && std::chrono::steady_clock::now() < deadline) {
    ::usleep(10000);
  }
  EXPECT_GE(ticks_.load(), 3);
  EXPECT_TRUE(server_->stop());
}

TEST(HttpServer, AnAddressItCannotUseIsAnErrorNotACrash) {
  ServerOptions o;
  o.addr = "not-an-address";
  o.port = free_port();
  std::string error;
  EXPECT_FALSE(HttpServer::start(o, [](const Request&) { return Response{}; }, nullptr, &error));
  EXPECT_NE(error.find("IPv4"), std::string::npos);
}

}  // namespace
}  // namespace sp::rank_pipeline::http
