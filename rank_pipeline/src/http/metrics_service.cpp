#include "metrics_service.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "straggler_probe/output_line.h"

namespace sp::rank_pipeline::http {

bool write_file_atomically(const std::string& path, const std::string& text, std::string* error) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  std::FILE* f = std::fopen(tmp.c_str(), "we");
  if (f == nullptr) {
    *error = "cannot write " + tmp + ": " + std::strerror(errno);
    return false;
  }
  const bool written = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  const bool closed = std::fclose(f) == 0;
  if (!written || !closed || std::rename(tmp.c_str(), path.c_str()) != 0) {
    *error = "cannot write " + path + ": " + std::strerror(errno);
    std::remove(tmp.c_str());
    return false;
  }
  return true;
}

std::unique_ptr<MetricsService> MetricsService::start(const MetricsOptions& options,
                                                      std::shared_ptr<MetricsBoard> board,
                                                      std::shared_ptr<ControlState> control,
                                                      std::function<ProbeHealth()> health,
                                                      std::function<void(const std::string&)> warn) {
  std::unique_ptr<MetricsService> s(new MetricsService());
  s->o_ = options;
  s->board_ = std::move(board);
  s->control_ = std::move(control);
  s->health_ = std::move(health);
  s->warn_ = std::move(warn);
  ServerOptions so;
  so.addr = options.addr;
  so.port = options.port;
  MetricsService* self = s.get();
  std::string error;
  s->server_ = HttpServer::start(
      so, [self](const Request& r) { return self->route(r); },
      options.textfile.empty() ? std::function<void()>() : [self] { self->write_textfile(); },
      &error);
  if (!s->server_) {
    s->warn_(std::string(runtime::kWarningLinePrefix) + "the metrics server is off: " + error +
             "; training and the analysis go on without it");
    return nullptr;
  }
  return s;
}

MetricsService::~MetricsService() { stop(); }

void MetricsService::stop() {
  // A server thread stuck in the textfile's write keeps using it: leaked, never destroyed.
  if (server_ && !server_->stop()) (void)server_.release();
}

Response MetricsService::route(const Request& request) const {
  const bool get = request.method == "GET";
  if (request.path == "/metrics" || request.path == "/status") {
    if (!get) return error_response(405, "use GET for " + request.path);
    Response r;
    if (request.path == "/metrics") {
      r.content_type = "text/plain; version=0.0.4; charset=utf-8";
      r.body = board_->metrics_text(health_());
    } else {
      r.content_type = "application/json";
      r.body = board_->status(health_()).dump(-1, ' ', false,
                                              nlohmann::ordered_json::error_handler_t::replace) + "\n";
    }
    return r;
  }
  if (request.path == "/control") {
    return handle_control(request, o_.token, control_.get(), board_->significance());
  }
  return error_response(404, "not found: the probe serves /metrics, /status and POST /control");
}

void MetricsService::write_textfile() {
  const uint64_t generation = board_->generation();
  if (generation == written_generation_) return;
  std::string error;
  if (write_file_atomically(o_.textfile, board_->metrics_text(health_()), &error)) {
    written_generation_ = generation;
  } else if (!textfile_warned_) {
    textfile_warned_ = true;
    warn_(std::string(runtime::kWarningLinePrefix) + "the metrics textfile is not written: " + error);
  }
}

}  // namespace sp::rank_pipeline::http
