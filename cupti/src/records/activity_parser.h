// The CUPTI record parser: bytes in, GPU activities out. Pure: no CUPTI calls, no clocks, no
// globals, so it is tested with synthetic buffers laid out as CUDA 13 writes them.
//
// CUPTI gives no ordering between records: the EXTERNAL_CORRELATION record of a launch may come
// before or after the kernel it tags, even in a later buffer or flush window. So each window is
// processed in two passes (Kineto does the same): pass 1 collects external correlations, pass 2
// joins kernels/memcpys/memsets to them. An activity with no match is held until it has been
// offered the correlations of `hold_windows` more windows, then released untagged; an external
// correlation with no activity yet is kept as long. Both tables are bounded.
//
// CUDA graphs: every activity of one graph launch (cudaGraphLaunch) carries that launch's
// correlation id, so a correlation that tagged a graph activity (graphId != 0) stays for the rest
// of the replay (it expires `hold_windows` after its last match); one that tagged a plain launch
// is used up.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "record_iterator.h"
#include "straggler_probe/gpu/cupti_capture.h"

namespace sp::cupti {

struct GpuActivity {
  enum class Type : uint8_t { kKernel, kMemcpy, kMemset, kSync, kCudaEvent };
  Type type = Type::kKernel;
  uint64_t start = 0;        // CUPTI time base; a CUDA event has start == end == device time
  uint64_t end = 0;
  uint32_t device = 0;
  uint32_t context = 0;
  uint32_t stream = 0;
  uint32_t correlation = 0;
  uint64_t external_id = 0;  // the probe's CUSTOM2 id, 0 when untagged
  const char* name = nullptr;  // kernel name (owned by CUPTI, stable for the process)
  uint64_t bytes = 0;          // memcpy / memset
  uint32_t subtype = 0;        // memcpy copyKind, synchronization type, memset value
  uint32_t event_id = 0;       // CUDA event id (sync on event, CUDA event record)
  uint32_t graph_id = 0;       // non-zero when launched by a CUDA graph replay
};

struct ParserOptions {
  uint32_t external_kind = 5;          // CUSTOM2
  uint32_t hold_windows = 1;           // windows an unmatched activity / correlation waits
  size_t max_pending_activities = 1u << 16;
  size_t max_pending_correlations = 1u << 17;
  bool cuda_event_has_device_timestamp = true;  // CUpti_ActivityCudaEvent2 (CUDA >= 12.8)
};

struct ParserStats {
  // records, kernels, memcpys, memsets, syncs, cuda_events, external_correlations,
  // zero_timestamps (start == end == 0: CUPTI could not time it), graph_activities (launched by a
  // CUDA graph replay: graphId != 0)
#define SP_DECLARE(name) uint64_t name = 0;
  SP_CUPTI_PARSER_COUNTERS(SP_DECLARE)
#undef SP_DECLARE
  uint64_t foreign_external_correlations = 0;  // other kinds (PyTorch's CUSTOM0/1)
  uint64_t api_records = 0;
  uint64_t other_records = 0;
  uint64_t matched_late = 0;           // joined to a correlation of a later window
  uint64_t released_untagged = 0;      // held, never matched
  uint64_t expired_correlations = 0;   // correlation whose activity never came
  uint64_t evicted = 0;                // dropped because a pending table was full
  uint64_t buffers_stopped_early = 0;  // unknown kind / truncated record
};

struct BufferView {
  uint8_t* data = nullptr;
  size_t valid = 0;
};

class ActivityParser {
 public:
  explicit ActivityParser(ParserOptions opts = {}) : opts_(opts) {}

  // Parses one flush window (all buffers completed since the previous call) and appends the
  // activities that are ready: this window's matched or untaggable ones, and earlier held ones that
  // matched now or ran out of time.
  void parse_window(std::span<const BufferView> buffers, RecordIterator& it,
                    std::vector<GpuActivity>& out);

  // Releases everything still held (at shutdown or before a pause).
  void drain(std::vector<GpuActivity>& out);

  const ParserStats& stats() const { return stats_; }
  size_t pending_activities() const { return held_.size(); }
  size_t pending_correlations() const { return correlations_.size(); }

 private:
  struct Held {
    GpuActivity activity;
    uint64_t window = 0;
  };
  struct Correlation {
    uint64_t external_id = 0;
    uint64_t window = 0;
  };

  void collect_correlation(const uint8_t* rec);
  bool decode_activity(const uint8_t* rec, uint32_t kind, GpuActivity* a);
  bool try_tag(GpuActivity& a);

  ParserOptions opts_;
  ParserStats stats_;
  uint64_t window_ = 0;
  std::unordered_map<uint32_t, Correlation> correlations_;
  std::vector<Held> held_;
};

}  // namespace sp::cupti
