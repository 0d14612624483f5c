#include "pipeline_settings.h"

#include <chrono>

#include "base/seconds.h"

namespace py = pybind11;

namespace sp::pyext {
namespace {

using rank_pipeline::FaultInjection;
using rank_pipeline::TransportFault;
using rank_pipeline::TransportProtocol;

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
  throw py::value_error("fault_inject must be none, throw, stall, slow, record, socket or delay");
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
  throw py::value_error("transport_protocol must be auto, host or rank");
}

}  // namespace

rank_pipeline::RankPipelineOptions to_pipeline_options(const PipelineSettings& s) {
  rank_pipeline::RankPipelineOptions o;
  auto& t = o.transport;
  t.rank = s.rank;
  t.world_size = s.world_size;
  t.prefix = s.prefix;
  t.max_lag = s.max_lag;
  t.first_step = s.warmup_steps;
  t.step_timeout = rank_pipeline::seconds_to_ms(s.step_timeout);
  t.identity.host = s.hostname;  // "": the system's host name
  t.identity.local_rank = s.local_rank;
  t.identity.device = s.device;
  t.local_world_size = s.local_world_size;
  t.protocol = protocol_of(s.transport_protocol);
  t.fault = transport_fault(s.fault_inject);
  t.hang_after = rank_pipeline::seconds_to_ms(s.hang_after_s);
  t.hang_multiple = s.hang_multiple;
  auto& a = o.analysis;
  a.world_size = s.world_size;
  a.max_lag = s.max_lag;
  a.out_dir = s.out_dir;
  a.log_lines = s.log_lines;
  a.slowdown_threshold = s.slowdown_threshold;
  a.significance = s.significance;
  a.alarm_significance = s.alarm_significance;
  a.window_steps = s.window_steps;
  a.summary_interval = s.summary_interval;
  a.fault = analysis_fault(s.fault_inject);
  a.hang_after_s = s.hang_after_s;  // the step's verdict holds the step to the same bound
  a.hang_multiple = s.hang_multiple;
  a.timeline_ranks = s.timeline_ranks;
  o.analysis_timeout = rank_pipeline::seconds_to_ms(s.analysis_timeout);
  o.discard = s.discard;
  o.clock_sync = s.clock_sync;
  o.clock_sync_period = rank_pipeline::seconds_to_ms(s.clock_sync_period);
  o.metrics.port = s.metrics_port;
  o.metrics.addr = s.metrics_addr;
  o.metrics.textfile = s.metrics_file;
  o.metrics.token = s.control_token;
  o.metrics.job = s.job;
  o.config = nlohmann::ordered_json::parse(s.config_json, nullptr, /*allow_exceptions=*/false);
  if (o.config.is_discarded()) o.config = nlohmann::ordered_json::object();
  return o;
}

void bind_pipeline_settings(py::module_& m) {
  py::class_<PipelineSettings> cls(m, "PipelineSettings",
                                   "What start_pipeline takes; the settings' defaults are the "
                                   "settings table's (docs/CONFIG.md).");
  cls.def(py::init<>());
#define SP_BIND_FIELD(name) cls.def_readwrite(#name, &PipelineSettings::name);
  SP_PIPELINE_SETTING_FIELDS(SP_BIND_FIELD)
  SP_PIPELINE_PLACE_FIELDS(SP_BIND_FIELD)
#undef SP_BIND_FIELD
  py::list names;  // the fields that are rows of the settings table, in its order
#define SP_FIELD_NAME(name) names.append(#name);
  SP_PIPELINE_SETTING_FIELDS(SP_FIELD_NAME)
#undef SP_FIELD_NAME
  cls.attr("SETTING_NAMES") = py::tuple(names);
}

}  // namespace sp::pyext
