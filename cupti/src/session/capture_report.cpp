// What the CUPTI capture tells: its counters (stats) and its report of top kernels per region
// type, with the first line saying whether capture is on.
#include <sstream>
#include <string>
#include <string_view>

#include "capture_state.h"
#include "straggler_probe/op_kinds.h"

namespace sp::gpu {
namespace {

// The report's name of a region type: the kind's (straggler_probe/op_kinds.h); kernels outside
// every region are under type 0, those of CUDA graph replays outside every region under their
// graph.
std::string_view region_type_name(uint32_t kind) {
  if (kind == 0) return "outside-regions";
  if (kind == cupti::kCudaGraphType) return "cuda-graph";  // "#<graph id>" follows
  return op_kind_name(kind, "kind");
}

// How kernels reach their regions, with what it lost.
std::string attribution_words(RegionAttributionMode mode, const cupti::LaunchMarkers* markers,
                              uint64_t seen) {
  switch (mode) {
    case RegionAttributionMode::kExternalCorrelation:
      return "external correlation (API records)";
    case RegionAttributionMode::kOff:
      return "off";
    case RegionAttributionMode::kMarkers:
      break;
  }
  if (markers == nullptr) return "off (no CUDA driver entry points)";
  const cupti::LaunchMarkerStats m = markers->stats();
  std::string out = "launch markers (" + std::to_string(m.issued) + " launched, " +
                    std::to_string(m.lost) + " lost";
  if (m.issued > 0 && seen == 0) out += ", none seen in CUPTI's records";
  if (m.failed > 0) out += ", stopped: " + markers->last_error();
  return out + ")";
}

}  // namespace

CuptiCaptureStats CuptiCapture::stats() const {
  Impl& s = *impl_;
  std::lock_guard<std::mutex> lock(s.state_mutex);
  CuptiCaptureStats out;
  out.available = s.available.load();
  out.active = s.active.load() && !s.paused.load();
  out.paused = s.paused.load();
  out.cupti_major = s.major;
  out.cupti_version = s.version;
  out.windows = s.windows;
#define SP_COPY(name) out.name = from.name;
  if (s.parser) {
    const cupti::ParserStats& from = s.parser->stats();
    SP_CUPTI_PARSER_COUNTERS(SP_COPY)
  }
  if (s.activity) {
    const cupti::ActivityApiStats from = s.activity->stats();
    SP_CUPTI_ACTIVITY_COUNTERS(SP_COPY)
  }
#undef SP_COPY
  out.tagged_activities = s.regions.stats().tagged;
  out.untagged_activities = s.regions.stats().untagged;
  out.nccl_kernels = s.regions.stats().nccl_tagged;
  out.events_emitted = s.events_emitted;
  out.emit_failures = s.emit_failures;
  out.pauses = s.pauses;
  out.clock_skew_ppm = s.clock.skew_ppm();
  out.clock_offset_ns = s.clock.offset_ns();
  out.clock_uncertainty_ns = s.clock.uncertainty_ns();
  out.time_base_changes = s.clock.time_base_changes();
  out.time_base = static_cast<int32_t>(s.clock.time_base());
  out.ns_per_unit = s.clock.ns_per_unit();
  out.attribution = static_cast<int32_t>(s.opts.attribution);
  if (s.markers) {
    const cupti::LaunchMarkerStats m = s.markers->stats();
    out.markers_issued = m.issued;
    out.marker_failures = m.failed;
    out.markers_lost = m.lost;
    out.markers_no_context = m.no_context;
    out.marker_stream_driver = m.stream_id;
  }
  out.markers_seen = s.brackets.stats().markers;
  out.marker_stream_cupti = s.marker_stream_cupti;
  out.zero_correlation_activities = s.zero_correlation;
  out.brackets_open_expired = s.brackets.stats().open_expired;
  out.undecided_released = s.undecided_released;
  return out;
}

std::string CuptiCapture::report(size_t top_k) const {
  Impl& s = *impl_;
  std::lock_guard<std::mutex> lock(s.state_mutex);
  std::ostringstream os;
  if (s.active.load() && !s.paused.load()) {
    const cupti::RegionAttributionStats& r = s.regions.stats();
    os << "GPU capture active: CUPTI " << s.major << ", "
       << (s.parser ? s.parser->stats().kernels : 0) << " kernels, " << r.tagged
       << " activities in regions, " << r.untagged << " outside, " << r.nccl_tagged
       << " in NCCL operations, attribution: "
       << attribution_words(s.opts.attribution, s.markers.get(), s.brackets.stats().markers);
    // Losses belong next to the figures they make incomplete.
    if (s.activity) {
      const cupti::ActivityApiStats a = s.activity->stats();
      os << ", " << a.dropped_records << " records dropped, " << a.buffers_refused
         << " buffers refused";
    }
    os << "\n";
  } else {
    os << "GPU capture inactive: " << s.inactive_reason << "\n";
  }
  for (const auto& [kind, name_id] : s.regions.region_types()) {
    os << region_type_name(kind);
    if (name_id != 0) os << "#" << name_id;
    os << ":\n";
    for (const cupti::TopKernel& k : s.regions.top_kernels(kind, name_id, top_k)) {
      os << "  " << k.name << " count=" << k.count << " total_us=" << k.total_ns / 1000
         << " max_us=" << k.max_ns / 1000 << "\n";
    }
  }
  return os.str();
}

}  // namespace sp::gpu
