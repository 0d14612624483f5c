// Rank 0's metrics server wired together: the board the analysis fills, the control state it
// takes changes from, the HTTP routes (/metrics, /status, POST /control) and the textfile for
// node_exporter's textfile collector (rewritten whole through a rename, about once a second when
// something changed). Everything here runs on the server's thread; nothing on the training
// thread's path.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "control.h"
#include "http_server.h"
#include "metrics_board.h"

namespace sp::rank_pipeline::http {

struct MetricsOptions {
  int port = 0;                    // STRAGGLER_PROBE_METRICS_PORT (0: no server)
  std::string addr = "127.0.0.1";  // STRAGGLER_PROBE_METRICS_ADDR
  std::string textfile;            // STRAGGLER_PROBE_METRICS_FILE ("": none)
  std::string token;               // STRAGGLER_PROBE_CONTROL_TOKEN ("": control refused)
  std::string job;                 // SLURM_JOB_ID / TORCHELASTIC_RUN_ID
  bool enabled() const { return port > 0 || !textfile.empty(); }
};

class MetricsService {
 public:
  // nullptr after one warning when the server cannot listen (the job goes on without it).
  static std::unique_ptr<MetricsService> start(const MetricsOptions& options,
                                               std::shared_ptr<MetricsBoard> board,
                                               std::shared_ptr<ControlState> control,
                                               std::function<ProbeHealth()> health,
                                               std::function<void(const std::string&)> warn);
  ~MetricsService();
  void stop();
  int port() const { return server_ ? server_->port() : 0; }

 private:
  MetricsService() = default;
  Response route(const Request& request) const;
  void write_textfile();

  MetricsOptions o_;
  std::shared_ptr<MetricsBoard> board_;
  std::shared_ptr<ControlState> control_;
  std::function<ProbeHealth()> health_;
  std::function<void(const std::string&)> warn_;
  uint64_t written_generation_ = ~uint64_t{0};
  bool textfile_warned_ = false;
  std::unique_ptr<HttpServer> server_;
};

// Writes `text` to `path` through `path`.tmp and a rename (readers never see half a file).
bool write_file_atomically(const std::string& path, const std::string& text, std::string* error);

}  // namespace sp::rank_pipeline::http
