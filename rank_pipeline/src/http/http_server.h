// A small HTTP/1.1 server on a thread of its own (`sp_metrics`), never the training thread's and
// without the GIL: one connection at a time (a scrape every few seconds and an operator's
// request now and then), each read and written within a deadline, the request bounded
// (http_request.h), the connection closed after the reply. A client that stalls or sends junk
// costs one connection's deadline, never the job.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "control.h"
#include "http_request.h"
#include "base/loop_thread.h"

namespace sp::rank_pipeline::http {

struct ServerOptions {
  std::string addr = "127.0.0.1";  // loopback unless told otherwise (STRAGGLER_PROBE_METRICS_ADDR)
  int port = 0;                    // 0: no socket (the thread still ticks, for the textfile)
  std::chrono::milliseconds io_timeout{2000};  // per connection: whole request read, reply written
  RequestLimits limits;
  std::chrono::milliseconds tick_every{1000};
};

using Handler = std::function<Response(const Request&)>;

class HttpServer {
 public:
  // Binds and starts the thread. nullptr with *error set (one line) when the address cannot be
  // used (taken port, bad address): the caller warns once and the job runs on without it.
  // tick: called on the server thread about every tick_every (the textfile).
  static std::unique_ptr<HttpServer> start(const ServerOptions& options, Handler handler,
                                           std::function<void()> tick, std::string* error);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Joins (bounded: every wait in the loop is). false: the thread is still running (stuck in a
  // tick's file write); the owner must then never destroy this object.
  bool stop();
  int port() const { return port_; }
  uint64_t requests() const { return requests_.load(); }
  uint64_t refused() const { return refused_.load(); }

 private:
  HttpServer() = default;
  void run();
  void serve_one(int fd);

  ServerOptions o_;
  Handler handler_;
  std::function<void()> tick_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  bool joined_ = false;
  std::atomic<uint64_t> requests_{0}, refused_{0};
  LoopThread thread_;
};

// The reply's bytes: status line, Content-Type, Content-Length, Connection: close.
std::string serialize_response(const Response& response);

}  // namespace sp::rank_pipeline::http
