#include "http_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace sp::rank_pipeline::http {
namespace {

using Clock = std::chrono::steady_clock;

const char* status_text(int status) {
  switch (status) {
    case 200: return "OK";
    case 202: return "Accepted";
    case 400: return "Bad Request";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 411: return "Length Required";
    case 413: return "Content Too Large";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 505: return "HTTP Version Not Supported";
    default: return "Unknown";
  }
}

int remaining_ms(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return static_cast<int>(std::max<int64_t>(0, left.count()));
}

bool wait_fd(int fd, short events, Clock::time_point deadline) {
  pollfd p{fd, events, 0};
  return ::poll(&p, 1, remaining_ms(deadline)) > 0;
}

// Writes all of `bytes` before the deadline (the socket is non-blocking; MSG_NOSIGNAL: a client
// that went away is no SIGPIPE in the training process).
void write_all(int fd, const std::string& bytes, Clock::time_point deadline) {
  size_t off = 0;
  while (off < bytes.size()) {
    const ssize_t n = ::send(fd, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
    if (n > 0) {
      off += static_cast<size_t>(n);
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
      if (!wait_fd(fd, POLLOUT, deadline)) return;
    } else {
      return;
    }
  }
}

int open_listener(const ServerOptions& o, int* port, std::string* error) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(o.port));
  if (::inet_pton(AF_INET, o.addr.c_str(), &addr.sin_addr) != 1) {
    *error = "the metrics address is not an IPv4 address (STRAGGLER_PROBE_METRICS_ADDR)";
    return -1;
  }
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) {
    *error = std::string("socket: ") + std::strerror(errno);
    return -1;
  }
  const int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0 || ::listen(fd, 8) != 0) {
    *error = "cannot listen on " + o.addr + ":" + std::to_string(o.port) + ": " + std::strerror(errno);
    ::close(fd);
    return -1;
  }
  socklen_t len = sizeof(addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  *port = ntohs(addr.sin_port);
  return fd;
}

// Closing with unread bytes in the socket makes the kernel send a reset, which can destroy the
// reply before the client reads it (a refused oversized request is answered before it is all
// read). So: end our side, then read and drop what the client still sends, up to 64 KiB or
// 200 ms, and close.
void linger_close(int fd) {
  ::shutdown(fd, SHUT_WR);
  const auto deadline = Clock::now() + std::chrono::milliseconds(200);
  char sink[4096];
  size_t dropped = 0;
  while (dropped < 65536 && wait_fd(fd, POLLIN, deadline)) {
    const ssize_t n = ::recv(fd, sink, sizeof(sink), 0);
    if (n <= 0) break;
    dropped += static_cast<size_t>(n);
  }
  ::close(fd);
}

}  // namespace

std::string serialize_response(const Response& r) {
  std::string out = "HTTP/1.1 " + std::to_string(r.status) + " " + status_text(r.status) + "\r\n";
  out += "Content-Type: " + r.content_type + "\r\n";
  out += "Content-Length: " + std::to_string(r.body.size()) + "\r\n";
  out += "Cache-Control: no-store\r\nConnection: close\r\n\r\n";
  return out + r.body;
}

std::unique_ptr<HttpServer> HttpServer::start(const ServerOptions& options, Handler handler,
                                              std::function<void()> tick, std::string* error) {
  std::unique_ptr<HttpServer> s(new HttpServer());
  s->o_ = options;
  s->handler_ = std::move(handler);
  s->tick_ = std::move(tick);
  if (options.port > 0) {
    s->listen_fd_ = open_listener(options, &s->port_, error);
    if (s->listen_fd_ < 0) return nullptr;
  }
  HttpServer* self = s.get();
  s->thread_.start("sp_metrics", [self] { self->run(); });
  return s;
}

HttpServer::~HttpServer() { (void)stop(); }

bool HttpServer::stop() {
  if (stopping_.exchange(true)) return joined_;
  joined_ = thread_.join_for(o_.io_timeout + std::chrono::milliseconds(1000));
  if (joined_ && listen_fd_ >= 0) ::close(listen_fd_);
  if (joined_) listen_fd_ = -1;
  return joined_;
}

void HttpServer::run() {
  auto next_tick = Clock::now();
  while (!stopping_.load()) {
    if (tick_ && Clock::now() >= next_tick) {
      try {
        tick_();
      } catch (const std::exception&) {  // the tick warns itself; the server goes on
      }
      next_tick = Clock::now() + o_.tick_every;
    }
    if (listen_fd_ < 0) {
      pollfd none{-1, 0, 0};
      ::poll(&none, 0, 200);
      continue;
    }
    pollfd p{listen_fd_, POLLIN, 0};
    if (::poll(&p, 1, 200) <= 0) continue;  // wakes 5 times a second to see a stop
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) continue;
    serve_one(fd);
    linger_close(fd);
  }
  try {
    if (tick_) tick_();  // the textfile's last state
  } catch (const std::exception&) {
  }
}

void HttpServer::serve_one(int fd) {
  const auto deadline = Clock::now() + o_.io_timeout;
  std::string buffer;
  char chunk[4096];
  ParseResult parsed;
  while (true) {
    parsed = parse_request(buffer, o_.limits);
    if (parsed.state != ParseState::kNeedMore) break;
    if (!wait_fd(fd, POLLIN, deadline)) {
      refused_++;
      return write_all(fd, serialize_response(error_response(408, "request not received in time")), deadline);
    }
    const ssize_t n = ::recv(fd, chunk, sizeof(chunk), 0);
    if (n == 0) {  // the client finished sending before a whole request
      if (buffer.empty()) return;  // nothing was asked
      refused_++;
      return write_all(fd, serialize_response(error_response(400, "request incomplete: the "
                                                                  "connection ended before its end")),
                       deadline);
    }
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) continue;
      return;
    }
    buffer.append(chunk, static_cast<size_t>(n));
  }
  requests_++;
  Response response;
  if (parsed.state == ParseState::kRefused) {
    refused_++;
    response = error_response(parsed.status, parsed.reason);
  } else {
    try {
      response = handler_(parsed.request);
    } catch (const std::exception&) {  // e.g. a host name that is not UTF-8 in a JSON dump
      response = error_response(500, "the probe could not build this reply");
    }
    if (response.status >= 400) refused_++;
  }
  write_all(fd, serialize_response(response), deadline);
}

}  // namespace sp::rank_pipeline::http
