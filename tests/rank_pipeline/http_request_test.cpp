// The metrics server's request parser (rank_pipeline/src/http/http_request.h): whole requests,
// requests still coming, and every refusal with its 4xx, never echoing the refused bytes.
#include <gtest/gtest.h>

#include <string>

#include "http/http_request.h"

namespace sp::rank_pipeline::http {
namespace {

TEST(HttpRequest, ParsesAGetWithHeadersAndQuery) {
  const std::string raw = "GET /metrics?x=1 HTTP/1.1\r\nHost: a\r\nAccept: text/plain\r\n\r\n";
  const ParseResult r = parse_request(raw);
  ASSERT_EQ(r.state, ParseState::kDone);
  EXPECT_EQ(r.request.method, "GET");
  EXPECT_EQ(r.request.path, "/metrics");
  EXPECT_EQ(r.request.header("host"), "a");
  EXPECT_EQ(r.request.header("accept"), "text/plain");
  EXPECT_EQ(r.consumed, raw.size());
}

TEST(HttpRequest, TakesABodyByContentLengthAndWaitsForItsRest) {
  const std::string head = "POST /control HTTP/1.1\r\nContent-Length: 17\r\nAuthorization: Bearer t\r\n\r\n";
  EXPECT_EQ(parse_request(head).state, ParseState::kNeedMore);
  EXPECT_EQ(parse_request(head + "{\"action\":").state, ParseState::kNeedMore);
  const ParseResult r = parse_request(head + "{\"action\":\"stop\"}");
  ASSERT_EQ(r.state, ParseState::kDone);
  EXPECT_EQ(r.request.body, "{\"action\":\"stop\"}");
  EXPECT_EQ(r.request.header("authorization"), "Bearer t");
}

TEST(HttpRequest, AHeadNotYetWholeNeedsMore) {
  EXPECT_EQ(parse_request("").state, ParseState::kNeedMore);
  EXPECT_EQ(parse_request("GET /metrics HTTP/1.1\r\nHost:").state, ParseState::kNeedMore);
}

struct Refusal {
  std::string raw;
  int status;
};

TEST(HttpRequest, RefusesMalformedRequestsWithA4xxThatNeverEchoesThem) {
  const std::string secret = "SECRET<script>";
  const Refusal cases[] = {
      {"GARBAGE\r\n\r\n", 400},
      {"GET  /metrics HTTP/1.1\r\n\r\n", 400},
      {"GET metrics HTTP/1.1\r\n\r\n", 400},
      {"GET http://x/metrics HTTP/1.1\r\n\r\n", 400},
      {"G(T /metrics HTTP/1.1\r\n\r\n", 400},
      {"GET /metrics HTTP/2.0\r\n\r\n", 400},
      {"GET /metrics FTP/1.0\r\n\r\n", 400},
      {"GET /m HTTP/1.1\r\nNoColon\r\n\r\n", 400},
      {"GET /m HTTP/1.1\r\nBad Name: v\r\n\r\n", 400},
      {"GET /m HTTP/1.1\r\nX: a\x01b\r\n\r\n", 400},
      {"POST /control HTTP/1.1\r\nContent-Length: -1\r\n\r\n", 400},
      {"POST /control HTTP/1.1\r\nContent-Length: 12abc\r\n\r\n", 400},
      {"POST /control HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nx", 400},
      {"POST /control HTTP/1.1\r\nContent-Length: 99999999999999999999999\r\n\r\n", 400},
      {"POST /control HTTP/1.1\r\nContent-Length: 5000\r\n\r\n", 413},
      {"POST /control HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", 411},
      {"GET /" + std::string(9000, 'a') + " HTTP/1.1\r\n\r\n", 431},
      {"GET /" + std::string(9000, 'a'), 431},
  };
  for (const Refusal& c : cases) {
    const ParseResult r = parse_request(c.raw + secret);
    ASSERT_EQ(r.state, ParseState::kRefused) << c.raw.substr(0, 60);
    EXPECT_EQ(r.status, c.status) << c.raw.substr(0, 60);
    EXPECT_EQ(r.reason.find("SECRET"), std::string::npos);
    EXPECT_EQ(r.reason.find('\n'), std::string::npos);
  }
}

TEST(HttpRequest, TooManyHeaderLinesAre431) {
  std::string raw = "GET /m HTTP/1.1\r\n";
  for (int i = 0; i < 70; ++i) raw += "X-" + std::to_string(i) + ": v\r\n";
  const ParseResult r = parse_request(raw + "\r\n");
  ASSERT_EQ(r.state, ParseState::kRefused);
  EXPECT_EQ(r.status, 431);
}

}  // namespace
}  // namespace sp::rank_pipeline::http
