#include "activity_parser.h"

#include <cstring>

#include "cupti_records.h"

namespace sp::cupti {
namespace {

template <typename T>
T load(const uint8_t* rec) {
  T out;
  std::memcpy(&out, rec, sizeof(T));
  return out;
}

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
  switch (kind) {
    case kKindKernel:
    case kKindConcurrentKernel: {
      const auto r = load<KernelRecord>(rec);
      a->type = GpuActivity::Type::kKernel;
      a->start = r.start;
      a->end = r.end;
      a->device = r.device_id;
      a->context = r.context_id;
      a->stream = r.stream_id;
      a->correlation = r.correlation_id;
      a->name = r.name;
      a->graph_id = r.graph_id;
      ++stats_.kernels;
      return true;
    }
    case kKindMemcpy: {
      const auto r = load<MemcpyRecord>(rec);
      a->type = GpuActivity::Type::kMemcpy;
      a->start = r.start;
      a->end = r.end;
      a->device = r.device_id;
      a->context = r.context_id;
      a->stream = r.stream_id;
      a->correlation = r.correlation_id;
      a->bytes = r.bytes;
      a->subtype = r.copy_kind;
      a->graph_id = r.graph_id;
      ++stats_.memcpys;
      return true;
    }
    case kKindMemset: {
      const auto r = load<MemsetRecord>(rec);
      a->type = GpuActivity::Type::kMemset;
      a->start = r.start;
      a->end = r.end;
      a->device = r.device_id;
      a->context = r.context_id;
      a->stream = r.stream_id;
      a->correlation = r.correlation_id;
      a->bytes = r.bytes;
      a->graph_id = r.graph_id;
      ++stats_.memsets;
      return true;
    }
    case kKindSynchronization: {
      const auto r = load<SynchronizationRecord>(rec);
      a->type = GpuActivity::Type::kSync;
      a->start = r.start;
      a->end = r.end;
      a->context = r.context_id;
      a->stream = r.stream_id;
      a->correlation = r.correlation_id;
      a->subtype = r.type;
      a->event_id = r.cuda_event_id;
      ++stats_.syncs;
      return true;
    }
    case kKindCudaEvent: {
      const auto r = load<CudaEventRecord>(rec);
      a->type = GpuActivity::Type::kCudaEvent;
      const uint64_t t = opts_.cuda_event_has_device_timestamp ? r.device_timestamp : 0;
      a->start = t;
      a->end = t;
      a->device = r.device_id;
      a->context = r.context_id;
      a->stream = r.stream_id;
      a->correlation = r.correlation_id;
      a->event_id = r.event_id;
      ++stats_.cuda_events;
      return true;
    }
    case kKindDriver:
    case kKindRuntime:
    case kKindInternalLaunchApi:
      ++stats_.api_records;  // only there to carry external correlations; nothing to emit
      return false;
    default:
      ++stats_.other_records;
      return false;
  }
}

bool ActivityParser::try_tag(GpuActivity& a) {
  auto it = correlations_.find(a.correlation);
  if (it == correlations_.end()) return false;
  a.external_id = it->second.external_id;
  correlations_.erase(it);  // one correlation id launches exactly one activity
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
