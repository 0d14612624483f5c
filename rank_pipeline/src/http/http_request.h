// One HTTP/1.1 request, parsed from bytes that anyone on the network may have sent: strict,
// bounded, and never echoing what it refuses (the reason names the rule broken, not the bytes).
// The server (http_server.h) feeds it what it has read so far; it says whether the request is
// whole, needs more bytes, or is refused with a 4xx status and a one-line reason.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sp::rank_pipeline::http {

struct RequestLimits {
  size_t max_head = 8192;   // request line + headers
  size_t max_body = 4096;   // control bodies are a few dozen bytes
  size_t max_headers = 64;
};

struct Request {
  std::string method;  // "GET", "POST", ...
  std::string path;    // without the query string
  std::vector<std::pair<std::string, std::string>> headers;  // names lowercased
  std::string body;
  // The value of header `name` (lowercase), or "" when absent.
  std::string header(std::string_view name) const;
};

enum class ParseState { kNeedMore, kDone, kRefused };

struct ParseResult {
  ParseState state = ParseState::kNeedMore;
  int status = 0;         // kRefused: the 4xx to answer with
  std::string reason;     // kRefused: one line, printable, without request bytes
  size_t consumed = 0;    // kDone: bytes of the buffer the request took
  Request request;        // kDone
};

// Parses the request at the start of `bytes`. Refuses: a head over max_head (431), a body over
// max_body (413), a malformed request line or header (400), a version other than HTTP/1.0 or 1.1
// (400), Transfer-Encoding (411: only Content-Length bodies are taken), a malformed or repeated
// Content-Length (400), a target that is not an origin path (400). Every refusal is a 4xx.
ParseResult parse_request(std::string_view bytes, const RequestLimits& limits = {});

}  // namespace sp::rank_pipeline::http
