#include "control.h"

#include <algorithm>

#include <nlohmann/json.hpp>

namespace sp::rank_pipeline::http {
namespace {

bool is_probability(const nlohmann::json& v) {
  if (!v.is_number()) return false;
  const double p = v.get<double>();
  return p > 0.0 && p < 1.0;
}

// The body's change, or a 400 with why (never the body's bytes).
std::optional<ControlChange> parse_change(const std::string& body, std::pair<double, double> current,
                                          Response* refused) {
  const nlohmann::json j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) {
    *refused = error_response(400, "body must be a JSON object with an \"action\"");
    return std::nullopt;
  }
  const auto action = j.find("action");
  if (action == j.end() || !action->is_string()) {
    *refused = error_response(400, "\"action\" must be one of pause, resume, report, significance");
    return std::nullopt;
  }
  const std::string& a = action->get_ref<const std::string&>();
  ControlChange c;
  if (a == "pause" || a == "resume") {
    c.paused = a == "pause";
  } else if (a == "report") {
    c.write_report = true;
  } else if (a == "significance") {
    const auto step = j.find("significance"), alarm = j.find("alarm_significance");
    if ((step == j.end() && alarm == j.end()) || (step != j.end() && !is_probability(*step)) ||
        (alarm != j.end() && !is_probability(*alarm))) {
      *refused = error_response(400, "significance and alarm_significance must be numbers strictly "
                                     "between 0 and 1 (at least one of them)");
      return std::nullopt;
    }
    c.significance = std::make_pair(step != j.end() ? step->get<double>() : current.first,
                                    alarm != j.end() ? alarm->get<double>() : current.second);
  } else {
    *refused = error_response(400, "\"action\" must be one of pause, resume, report, significance");
    return std::nullopt;
  }
  return c;
}

}  // namespace

Response error_response(int status, std::string_view reason) {
  Response r;
  r.status = status;
  r.content_type = "application/json";
  r.body = nlohmann::json{{"error", std::string(reason)}}.dump() + "\n";
  return r;
}

void ControlState::ask(const ControlChange& change) {
  if (change.paused && recording_) recording_->ask(*change.paused);
  std::lock_guard<std::mutex> lock(mutex_);
  if (change.paused) pending_.paused = change.paused;
  if (change.significance) pending_.significance = change.significance;
  pending_.write_report = pending_.write_report || change.write_report;
  ++requests_;
}

ControlChange ControlState::take() {
  std::lock_guard<std::mutex> lock(mutex_);
  return std::exchange(pending_, ControlChange{});
}

uint64_t ControlState::requests() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return requests_;
}

bool equal_constant_time(std::string_view a, std::string_view b) {
  // Every byte of the longer one is looked at; a length difference counts as a difference.
  const size_t n = std::max(a.size(), b.size());
  unsigned diff = a.size() == b.size() ? 0U : 1U;
  for (size_t i = 0; i < n; ++i) {
    const auto x = static_cast<unsigned char>(i < a.size() ? a[i] : 0);
    const auto y = static_cast<unsigned char>(i < b.size() ? b[i] : 0);
    diff |= static_cast<unsigned>(x ^ y);
  }
  return diff == 0;
}

Response handle_control(const Request& request, const std::string& token, ControlState* state,
                        std::pair<double, double> current) {
  if (request.method != "POST") return error_response(405, "use POST for /control");
  if (token.empty()) {
    return error_response(403, "control is off: STRAGGLER_PROBE_CONTROL_TOKEN is not set on rank 0");
  }
  const std::string auth = request.header("authorization");
  constexpr std::string_view kBearer = "Bearer ";
  if (auth.rfind(kBearer, 0) != 0) {
    return error_response(403, "missing token: send Authorization: Bearer <STRAGGLER_PROBE_CONTROL_TOKEN>");
  }
  if (!equal_constant_time(std::string_view(auth).substr(kBearer.size()), token)) {
    return error_response(403, "wrong token");
  }
  Response refused;
  const std::optional<ControlChange> change = parse_change(request.body, current, &refused);
  if (!change) return refused;
  state->ask(*change);
  Response ok;
  ok.status = 202;
  ok.content_type = "application/json";
  ok.body = "{\"accepted\":true,\"takes_effect\":\"at the next step boundary (rank 0's analysis), "
             "within two steps on every rank (recording)\"}\n";
  return ok;
}

}  // namespace sp::rank_pipeline::http
