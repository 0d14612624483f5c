#include "http_request.h"

#include <algorithm>
#include <cctype>
#include <charconv>

namespace sp::rank_pipeline::http {
namespace {

ParseResult refuse(int status, std::string reason) {
  ParseResult r;
  r.state = ParseState::kRefused;
  r.status = status;
  r.reason = std::move(reason);
  return r;
}

// RFC 9110 token characters (methods, header names).
bool is_tchar(char c) {
  const auto u = static_cast<unsigned char>(c);
  if (std::isalnum(u) != 0) return true;
  return std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

bool is_token(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), is_tchar);
}

// Visible ASCII, space and tab: what a header value and a request target may hold here.
bool is_field_text(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return u == '\t' || (u >= 0x20 && u < 0x7f);
  });
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// "METHOD SP target SP HTTP/1.x"
bool parse_request_line(std::string_view line, Request* out, ParseResult* refused) {
  const size_t a = line.find(' ');
  const size_t b = a == std::string_view::npos ? a : line.find(' ', a + 1);
  if (b == std::string_view::npos || line.find(' ', b + 1) != std::string_view::npos) {
    *refused = refuse(400, "malformed request line");
    return false;
  }
  const std::string_view method = line.substr(0, a), target = line.substr(a + 1, b - a - 1),
                         version = line.substr(b + 1);
  if (!is_token(method)) {
    *refused = refuse(400, "malformed method");
    return false;
  }
  if (version != "HTTP/1.1" && version != "HTTP/1.0") {
    *refused = refuse(400, "unsupported HTTP version: HTTP/1.1 or HTTP/1.0");
    return false;
  }
  if (target.empty() || target.front() != '/' || !is_field_text(target) ||
      target.find_first_of(" \t") != std::string_view::npos) {
    *refused = refuse(400, "request target must be a path starting with /");
    return false;
  }
  out->method = std::string(method);
  out->path = std::string(target.substr(0, target.find('?')));
  return true;
}

bool parse_headers(std::string_view head, const RequestLimits& limits, Request* out,
                   ParseResult* refused) {
  size_t pos = 0;
  while (pos < head.size()) {
    const size_t end = head.find("\r\n", pos);
    const std::string_view line = head.substr(pos, end == std::string_view::npos ? end : end - pos);
    pos = end == std::string_view::npos ? head.size() : end + 2;
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos || !is_token(line.substr(0, colon))) {
      *refused = refuse(400, "malformed header line");
      return false;
    }
    const std::string_view value = trim(line.substr(colon + 1));
    if (!is_field_text(value)) {
      *refused = refuse(400, "header value with control characters");
      return false;
    }
    if (out->headers.size() >= limits.max_headers) {
      *refused = refuse(431, "too many header lines");
      return false;
    }
    out->headers.emplace_back(lower(line.substr(0, colon)), std::string(value));
  }
  return true;
}

// The body's length: 0 without Content-Length; refused when repeated, malformed or too large.
bool body_length(const Request& r, const RequestLimits& limits, size_t* length,
                 ParseResult* refused) {
  int seen = 0;
  *length = 0;
  for (const auto& [name, value] : r.headers) {
    if (name == "transfer-encoding") {
      *refused = refuse(411, "Transfer-Encoding is not supported; send Content-Length");
      return false;
    }
    if (name != "content-length") continue;
    if (++seen > 1) {
      *refused = refuse(400, "Content-Length given more than once");
      return false;
    }
    uint64_t n = 0;
    const auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
    if (value.empty() || ec != std::errc() || ptr != value.data() + value.size()) {
      *refused = refuse(400, "Content-Length is not a decimal number");
      return false;
    }
    if (n > limits.max_body) {
      *refused = refuse(413, "body larger than " + std::to_string(limits.max_body) + " bytes");
      return false;
    }
    *length = static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

std::string Request::header(std::string_view name) const {
  for (const auto& [k, v] : headers) {
    if (k == name) return v;
  }
  return {};
}

ParseResult parse_request(std::string_view bytes, const RequestLimits& limits) {
  const size_t head_end = bytes.find("\r\n\r\n");
  if (head_end == std::string_view::npos) {
    if (bytes.size() > limits.max_head) return refuse(431, "request head too large");
    return {};
  }
  if (head_end > limits.max_head) return refuse(431, "request head too large");
  const std::string_view head = bytes.substr(0, head_end);
  const size_t line_end = head.find("\r\n");
  ParseResult result;
  Request request;
  if (!parse_request_line(head.substr(0, line_end), &request, &result)) return result;
  if (line_end != std::string_view::npos &&
      !parse_headers(head.substr(line_end + 2), limits, &request, &result)) {
    return result;
  }
  size_t length = 0;
  if (!body_length(request, limits, &length, &result)) return result;
  const size_t body_start = head_end + 4;
  if (bytes.size() - body_start < length) return {};  // the body is still coming
  request.body = std::string(bytes.substr(body_start, length));
  result.state = ParseState::kDone;
  result.consumed = body_start + length;
  result.request = std::move(request);
  return result;
}

}  // namespace sp::rank_pipeline::http
