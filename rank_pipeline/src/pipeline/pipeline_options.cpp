// The running pipeline's options from the public settings (rank_pipeline.h: to_pipeline_options).
#include <stdexcept>

#include "rank_pipeline.h"
#include "straggler_probe/rank_pipeline/seconds.h"

namespace sp::rank_pipeline {
namespace {

FaultInjection analysis_fault(const std::string& fault) {
  if (fault == "throw") return FaultInjection::kThrow;
  if (fault == "stall") return FaultInjection::kStall;
  if (fault == "slow") return FaultInjection::kSlow;
  // "record" is a fault of the Python recording (straggler_probe/_probe.py), "socket" and
  // "delay" of the transport (TransportFault), not of the analysis.
  if (fault == "none" || fault == "record" || fault == "socket" || fault == "delay" ||
      fault.empty()) {
    return FaultInjection::kNone;
  }
  throw std::invalid_argument("fault_inject must be none, throw, stall, slow, record, socket or "
                              "delay, not '" + fault + "'");
}

TransportFault transport_fault(const std::string& fault) {
  if (fault == "socket") return TransportFault::kCloseSocket;
  if (fault == "delay") return TransportFault::kDelay;
  return TransportFault::kNone;
}

TransportProtocol protocol_of(const std::string& protocol) {
  if (protocol == "host") return TransportProtocol::kHostAggregated;
  if (protocol == "rank") return TransportProtocol::kPerRank;
  if (protocol == "auto" || protocol.empty()) return TransportProtocol::kAuto;
  throw std::invalid_argument("transport_protocol must be auto, host or rank, not '" + protocol +
                              "'");
}

}  // namespace

void check_pipeline_settings(const PipelineSettings& settings) {
  (void)analysis_fault(settings.fault_inject);
  (void)protocol_of(settings.transport_protocol);
}

RankPipelineOptions to_pipeline_options(const PipelineSettings& s) {
  RankPipelineOptions o;
  auto& t = o.transport;
  t.rank = s.rank;
  t.world_size = s.world_size;
  t.prefix = s.prefix;
  t.max_lag = s.max_lag;
  t.first_step = s.warmup_steps;
  t.step_timeout = seconds_to_ms(s.step_timeout);
  t.identity.host = s.hostname;  // "": the system's host name
  t.identity.local_rank = s.local_rank;
  t.identity.device = s.device;
  t.local_world_size = s.local_world_size;
  t.protocol = protocol_of(s.transport_protocol);
  t.fault = transport_fault(s.fault_inject);
  t.hang_after = seconds_to_ms(s.hang_after_s);
  t.hang_multiple = s.hang_multiple;
  auto& a = o.analysis;
  a.max_lag = s.max_lag;
  a.fault = analysis_fault(s.fault_inject);
  auto& as = a.settings;
  as.world_size = s.world_size;
  as.out_dir = s.out_dir;
  as.log_lines = s.log_lines;
  as.slowdown_threshold = s.slowdown_threshold;
  as.significance = s.significance;
  as.alarm_significance = s.alarm_significance;
  as.window_steps = s.window_steps;
  as.recap_interval = s.recap_interval;
  as.hang_after_s = s.hang_after_s;  // the step's verdict holds the step to the same bound
  as.hang_multiple = s.hang_multiple;
  as.timeline_ranks = s.timeline_ranks;
  o.analysis_timeout = seconds_to_ms(s.analysis_timeout);
  o.discard = s.discard;
  o.clock_sync = s.clock_sync;
  o.clock_sync_period = seconds_to_ms(s.clock_sync_period);
  o.metrics.port = s.metrics_port;
  o.metrics.addr = s.metrics_addr;
  o.metrics.textfile = s.metrics_file;
  o.metrics.token = s.control_token;
  o.metrics.job = s.job;
  o.config = nlohmann::ordered_json::parse(s.config_json, nullptr, /*allow_exceptions=*/false);
  if (o.config.is_discarded()) o.config = nlohmann::ordered_json::object();
  return o;
}

}  // namespace sp::rank_pipeline
