// POST /control: pause and resume the analysis, change the significance levels, write the report
// now. Only with STRAGGLER_PROBE_CONTROL_TOKEN set and the request carrying it
// (`Authorization: Bearer TOKEN`, compared in constant time); 403 otherwise with one line saying
// why. The server thread only records what was asked (ControlState); rank 0's analysis thread
// takes it at its next step boundary, applies it and logs it once. A pause or resume also goes
// at once to the RecordingSwitch, which the transport carries to every rank's recording.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "transport/transport.h"
#include "http_request.h"

namespace sp::rank_pipeline::http {

struct Response {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
};

// A reply of one line (errors, refusals): JSON {"error": reason} so that scripts can read it.
Response error_response(int status, std::string_view reason);

struct ControlChange {
  std::optional<bool> paused;
  std::optional<std::pair<double, double>> significance;  // step, alarm
  bool write_report = false;
  bool empty() const { return !paused && !significance && !write_report; }
};

// What /control asked, waiting for the next step boundary. Thread-safe; never blocks long.
class ControlState {
 public:
  // recording: where a pause or resume also goes at once, for the transport to carry to every
  // rank (transport.h); null: the analysis alone pauses.
  explicit ControlState(std::shared_ptr<RecordingSwitch> recording = nullptr)
      : recording_(std::move(recording)) {}
  void ask(const ControlChange& change);  // merged with what is still pending
  ControlChange take();                   // the analysis thread, at a step boundary
  uint64_t requests() const;

 private:
  std::shared_ptr<RecordingSwitch> recording_;
  mutable std::mutex mutex_;
  ControlChange pending_;
  uint64_t requests_ = 0;
};

// Equal in time independent of where they differ (the token must not leak through timing).
bool equal_constant_time(std::string_view a, std::string_view b);

// The whole of POST /control: token, body {"action": "pause" | "resume" | "report" |
// "significance", "significance": p, "alarm_significance": p}, and the reply (202 accepted).
// current: the levels in force, for a change that gives only one of them.
Response handle_control(const Request& request, const std::string& token, ControlState* state,
                        std::pair<double, double> current);

}  // namespace sp::rank_pipeline::http
