#include "straggler_probe/preload/step_detector.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "nccl_op_names.h"

namespace sp::preload {
namespace {

uint64_t signature_of(sp_coll_type type, uint64_t group_id, uint64_t bytes) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a over the three fields
  for (uint64_t v : {static_cast<uint64_t>(type), group_id, bytes}) {
    for (int i = 0; i < 8; ++i) {
      h ^= (v >> (8 * i)) & 0xff;
      h *= 1099511628211ull;
    }
  }
  return h;
}

bool parse_u64(const char* s, uint64_t* out) {
  if (s == nullptr || *s == '\0' || *s == '-') return false;
  errno = 0;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(s, &end, 10);
  if (errno != 0 || *end != '\0') return false;
  *out = v;
  return true;
}

}  // namespace

bool parse_step_marker(const char* spec, StepMarker* out, std::string* error) {
  StepMarker m;
  const std::string s = spec != nullptr ? spec : "";
  if (s.empty() || s == "auto") {
    *out = m;
    return true;
  }
  if (s == "off") {
    m.mode = StepMarker::Mode::kOff;
    *out = m;
    return true;
  }
  if (s.rfind("every:", 0) == 0) {
    uint64_t n = 0;
    if (!parse_u64(s.c_str() + 6, &n) || n == 0) {
      *error = "STRAGGLER_PROBE_STEP_MARKER='" + s + "': every:N needs a positive integer N";
      return false;
    }
    m.mode = StepMarker::Mode::kEveryN;
    m.every = n;
    *out = m;
    return true;
  }
  const auto colon = s.find(':');
  const std::string op = s.substr(0, colon);
  m.op = nccl::coll_type_by_name(op.c_str());
  if (m.op == SP_COLL_NONE) {
    *error = "STRAGGLER_PROBE_STEP_MARKER='" + s +
             "': expected auto, off, every:N or an NCCL operation (AllReduce, AllGather, "
             "ReduceScatter, Broadcast, Reduce, AlltoAll, Send, Recv) with an optional :bytes";
    return false;
  }
  if (colon != std::string::npos && !parse_u64(s.c_str() + colon + 1, &m.bytes)) {
    *error = "STRAGGLER_PROBE_STEP_MARKER='" + s + "': the size after ':' must be a byte count";
    return false;
  }
  m.mode = StepMarker::Mode::kOp;
  *out = m;
  return true;
}

StepDetector::StepDetector(StepMarker marker, StepDetectorOptions opts)
    : marker_(marker), opts_(opts) {
  ring_.resize(opts_.history);
}

StepDetector::Entry StepDetector::at(size_t back) const {
  return ring_[(head_ + ring_.size() - 1 - back) % ring_.size()];
}

StepDetector::Boundary StepDetector::on_op(sp_coll_type type, uint64_t group_id, uint64_t bytes,
                                           uint64_t cpu_start_ns, uint64_t cpu_end_ns) {
  switch (marker_.mode) {
    case StepMarker::Mode::kOff: return Boundary::kNone;
    case StepMarker::Mode::kEveryN:
      if (++count_ % marker_.every == 0) {
        ++boundaries_;
        return Boundary::kAfter;
      }
      return Boundary::kNone;
    case StepMarker::Mode::kOp:
      if (type == marker_.op && (marker_.bytes == 0 || bytes == marker_.bytes)) {
        ++boundaries_;
        return Boundary::kAfter;
      }
      return Boundary::kNone;
    case StepMarker::Mode::kAuto: break;
  }

  const uint64_t gap =
      count_ > 0 && cpu_start_ns > last_end_ns_ ? cpu_start_ns - last_end_ns_ : 0;
  last_end_ns_ = cpu_end_ns;
  ring_[head_] = Entry{signature_of(type, group_id, bytes), gap};
  head_ = (head_ + 1) % ring_.size();
  const uint64_t index = count_++;

  if (period_ == 0) {
    if (++since_detect_ >= 16) {
      since_detect_ = 0;
      try_detect();
    }
    return Boundary::kNone;
  }
  // Still the learnt pattern? (Compared with the pattern, not with the previous period: a new
  // pattern that happens to be periodic itself must not pass for the old one.)
  if (at(0).signature != pattern_[index % period_]) {
    if (++mismatches_ > opts_.max_mismatches) {
      period_ = 0;  // the job changed its pattern: find it again
      mismatches_ = 0;
    }
    return Boundary::kNone;
  }
  mismatches_ = 0;
  if (index % period_ == phase_) {
    ++boundaries_;
    return Boundary::kBefore;
  }
  return Boundary::kNone;
}

void StepDetector::try_detect() {
  const uint64_t have = count_ < ring_.size() ? count_ : ring_.size();
  for (size_t p = 1; p <= opts_.max_period; ++p) {
    const size_t need = std::max(p * opts_.min_repeats, opts_.min_window);
    if (need > have) break;
    bool periodic = true;
    for (size_t i = 0; i + p < need && periodic; ++i) {
      periodic = at(i).signature == at(i + p).signature;
    }
    if (!periodic) continue;
    // Phase: the position in the cycle with the largest mean gap before it.
    std::vector<uint64_t> gap_sum(p, 0);
    for (size_t i = 0; i < need; ++i) {
      const uint64_t index = count_ - 1 - i;  // absolute index of at(i)
      gap_sum[index % p] += at(i).gap_before_ns;
    }
    size_t best = 0;
    for (size_t k = 1; k < p; ++k) {
      if (gap_sum[k] > gap_sum[best]) best = k;
    }
    pattern_.assign(p, 0);
    for (size_t i = 0; i < p; ++i) pattern_[(count_ - 1 - i) % p] = at(i).signature;
    period_ = p;
    phase_ = best;
    mismatches_ = 0;
    return;
  }
}

}  // namespace sp::preload
