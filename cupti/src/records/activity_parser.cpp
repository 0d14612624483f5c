#include "activity_parser.h"

#include <array>
#include <cstring>

#include "loader/cupti_records.h"

namespace sp::cupti {
namespace {

template <typename T>
T load(const uint8_t* rec) {
  T out;
  std::memcpy(&out, rec, sizeof(T));
  return out;
}

// Reads a record of layout R into `a`: the fields every timed record has, wherever R puts them,
// then (by R's own fields) device, bytes and CUDA graph. Returns the record for what is its own.
template <typename R>
R read_common(const uint8_t* rec, GpuActivity* a) {
  const auto r = load<R>(rec);
  if constexpr (requires { r.start; }) {
    a->start = r.start;
    a->end = r.end;
  }
  if constexpr (requires { r.device_id; }) a->device = r.device_id;
  a->context = r.context_id;
  a->stream = r.stream_id;
  a->correlation = r.correlation_id;
  if constexpr (requires { r.bytes; }) a->bytes = r.bytes;
  if constexpr (requires { r.graph_id; }) a->graph_id = r.graph_id;
  return r;
}

// How each record kind is read: into which activity type, counted where, and the fields that
// only its layout has. No `read`: the record carries nothing to emit (API records are there only
// for the external correlations they carry).
struct KindHandler {
  uint32_t kind;
  GpuActivity::Type type;
  uint64_t ParserStats::*counter;
  void (*read)(const uint8_t* rec, const ParserOptions& opts, GpuActivity* a);
};

void read_kernel(const uint8_t* rec, const ParserOptions&, GpuActivity* a) {
  a->name = read_common<KernelRecord>(rec, a).name;
}
void read_memcpy(const uint8_t* rec, const ParserOptions&, GpuActivity* a) {
  a->subtype = read_common<MemcpyRecord>(rec, a).copy_kind;
}
void read_memset(const uint8_t* rec, const ParserOptions&, GpuActivity* a) {
  a->subtype = read_common<MemsetRecord>(rec, a).value;  // launch markers carry their id in it
}
void read_sync(const uint8_t* rec, const ParserOptions&, GpuActivity* a) {
  const auto r = read_common<SynchronizationRecord>(rec, a);
  a->subtype = r.type;
  a->event_id = r.cuda_event_id;
}
void read_cuda_event(const uint8_t* rec, const ParserOptions& opts, GpuActivity* a) {
  const auto r = read_common<CudaEventRecord>(rec, a);
  // One device timestamp (CudaEvent2); without it the record is untimed.
  a->start = a->end = opts.cuda_event_has_device_timestamp ? r.device_timestamp : 0;
  a->event_id = r.event_id;
}

using Type = GpuActivity::Type;
constexpr KindHandler kHandlers[] = {
    {kKindKernel, Type::kKernel, &ParserStats::kernels, read_kernel},
    {kKindConcurrentKernel, Type::kKernel, &ParserStats::kernels, read_kernel},
    {kKindMemcpy, Type::kMemcpy, &ParserStats::memcpys, read_memcpy},
    {kKindMemset, Type::kMemset, &ParserStats::memsets, read_memset},
    {kKindSynchronization, Type::kSync, &ParserStats::syncs, read_sync},
    {kKindCudaEvent, Type::kCudaEvent, &ParserStats::cuda_events, read_cuda_event},
    {kKindDriver, Type::kKernel, &ParserStats::api_records, nullptr},
    {kKindRuntime, Type::kKernel, &ParserStats::api_records, nullptr},
    {kKindInternalLaunchApi, Type::kKernel, &ParserStats::api_records, nullptr},
};

// kind -> handler, nullptr for kinds the parser does not read.
constexpr size_t kMaxKind = 64;
constexpr std::array<const KindHandler*, kMaxKind> kHandlerByKind = [] {
  std::array<const KindHandler*, kMaxKind> t{};
  for (const KindHandler& h : kHandlers) t[h.kind] = &h;
  return t;
}();

}  // namespace

void ActivityParser::collect_correlation(const uint8_t* rec) {
  const auto r = load<ExternalCorrelationRecord>(rec);
  if (r.external_kind != opts_.external_kind) {
    ++stats_.foreign_external_correlations;
    return;
  }
  ++stats_.external_correlations;
  if (correlations_.size() >= opts_.max_pending_correlations &&
      correlations_.find(r.correlation_id) == correlations_.end()) {
    ++stats_.evicted;  // table full: this launch will come out untagged
    return;
  }
  correlations_[r.correlation_id] = Correlation{r.external_id, window_};
}

bool ActivityParser::decode_activity(const uint8_t* rec, uint32_t kind, GpuActivity* a) {
  const KindHandler* h = kind < kMaxKind ? kHandlerByKind[kind] : nullptr;
  if (h == nullptr) {
    ++stats_.other_records;
    return false;
  }
  ++(stats_.*h->counter);
  if (h->read == nullptr) return false;
  a->type = h->type;
  h->read(rec, opts_, a);
  return true;
}

bool ActivityParser::try_tag(GpuActivity& a) {
  auto it = correlations_.find(a.correlation);
  if (it == correlations_.end()) return false;
  a.external_id = it->second.external_id;
  if (a.graph_id == 0) {
    correlations_.erase(it);  // a plain launch or copy: one correlation id, one activity
  } else {
    // Every kernel, memcpy and memset of a CUDA graph launch carries the launch's one
    // correlation id: keep it while the replay's activities keep coming, so each is tagged.
    it->second.window = window_;
  }
  return true;
}

void ActivityParser::parse_window(std::span<const BufferView> buffers, RecordIterator& it,
                                  std::vector<GpuActivity>& out) {
  ++window_;

  // Pass 1: external correlations of the whole window, and the records to decode afterwards.
  std::vector<const uint8_t*> records;
  for (const BufferView& b : buffers) {
    if (b.data == nullptr || b.valid == 0) continue;
    uint8_t* rec = nullptr;
    it.reset();
    while (it.next(b.data, b.valid, &rec)) {
      ++stats_.records;
      uint32_t kind = 0;
      std::memcpy(&kind, rec, sizeof(kind));
      if (kind == kKindExternalCorrelation) {
        collect_correlation(rec);
      } else {
        records.push_back(rec);
      }
    }
    if (it.stopped_early()) ++stats_.buffers_stopped_early;
  }

  // Activities held from earlier windows: matched now, or released once their time is up.
  std::vector<Held> still_held;
  for (Held& h : held_) {
    if (try_tag(h.activity)) {
      ++stats_.matched_late;
      out.push_back(h.activity);
    } else if (window_ - h.window >= opts_.hold_windows) {
      ++stats_.released_untagged;
      out.push_back(h.activity);
    } else {
      still_held.push_back(h);
    }
  }
  held_.swap(still_held);

  // Pass 2: decode and join.
  for (const uint8_t* rec : records) {
    uint32_t kind = 0;
    std::memcpy(&kind, rec, sizeof(kind));
    GpuActivity a;
    if (!decode_activity(rec, kind, &a)) continue;
    if (a.start == 0 && a.end == 0) {
      ++stats_.zero_timestamps;
      continue;
    }
    if (a.graph_id != 0) ++stats_.graph_activities;
    const bool taggable = a.type == GpuActivity::Type::kKernel ||
                          a.type == GpuActivity::Type::kMemcpy ||
                          a.type == GpuActivity::Type::kMemset;
    if (!taggable || try_tag(a) || opts_.hold_windows == 0) {
      out.push_back(a);
      continue;
    }
    if (held_.size() >= opts_.max_pending_activities) {
      ++stats_.evicted;
      ++stats_.released_untagged;
      out.push_back(a);
      continue;
    }
    held_.push_back(Held{a, window_});
  }

  // Correlations whose activity never came within the hold time.
  for (auto c = correlations_.begin(); c != correlations_.end();) {
    if (window_ - c->second.window >= opts_.hold_windows) {
      ++stats_.expired_correlations;
      c = correlations_.erase(c);
    } else {
      ++c;
    }
  }
}

void ActivityParser::drain(std::vector<GpuActivity>& out) {
  for (Held& h : held_) {
    if (!try_tag(h.activity)) ++stats_.released_untagged;
    out.push_back(h.activity);
  }
  held_.clear();
  stats_.expired_correlations += correlations_.size();
  correlations_.clear();
}

}  // namespace sp::cupti
