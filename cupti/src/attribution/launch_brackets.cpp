#include "launch_brackets.h"

#include <iterator>

namespace sp::cupti {

void LaunchBrackets::add_marker(uint32_t correlation, const LaunchMarkers::Marker& m,
                                uint64_t window) {
  ++stats_.markers;
  if (any_marker_ && correlation + (1u << 31) < max_correlation_) {
    // Far below the newest: the counter wrapped (2^32 launches). Start over rather than mix.
    ++stats_.correlation_wraps;
    clear();
  }
  if (!any_marker_ || correlation > max_correlation_) max_correlation_ = correlation;
  any_marker_ = true;
  if (m.is_begin) {
    if (by_begin_.size() >= opts_.max_brackets) {
      ++stats_.evicted;
      open_by_seq_.erase(m.seq);  // (a no-op unless ids repeat)
      by_begin_.erase(by_begin_.begin());
    }
    by_begin_[correlation] = Bracket{m.external_id, 0, false, window};
    if (auto e = early_ends_.find(m.seq); e != early_ends_.end()) {
      close(correlation, e->second, window);
      early_ends_.erase(e);
    } else {
      open_by_seq_[m.seq] = correlation;
    }
    return;
  }
  auto open = open_by_seq_.find(m.begin_seq);
  if (open == open_by_seq_.end()) {
    if (early_ends_.size() < opts_.max_brackets) early_ends_[m.begin_seq] = correlation;
    return;
  }
  close(open->second, correlation, window);
  open_by_seq_.erase(open);
}

void LaunchBrackets::close(uint32_t begin_correlation, uint32_t end_correlation, uint64_t window) {
  auto b = by_begin_.find(begin_correlation);
  if (b == by_begin_.end()) return;  // evicted meanwhile
  b->second.end = end_correlation;
  b->second.closed = true;
  b->second.window = window;
  ++stats_.brackets_closed;
}

LaunchBrackets::Decision LaunchBrackets::assign(uint32_t correlation, uint64_t* external_id,
                                                bool best_known) const {
  if (!best_known && (!any_marker_ || correlation > max_correlation_)) {
    return Decision::kUndecided;
  }
  auto it = by_begin_.lower_bound(correlation);  // first bracket begun at or after it
  int walked = 0;
  while (it != by_begin_.begin() && walked++ < kMaxWalk) {
    it = std::prev(it);
    const Bracket& b = it->second;
    if (!b.closed || b.end > correlation) {
      *external_id = b.external_id;
      return Decision::kInside;
    }
  }
  return Decision::kOutside;
}

void LaunchBrackets::prune(uint64_t window) {
  for (auto it = by_begin_.begin(); it != by_begin_.end();) {
    const Bracket& b = it->second;
    const bool stale_closed = b.closed && window > b.window + opts_.keep_closed_windows;
    const bool stale_open = !b.closed && window > b.window + opts_.open_limit_windows;
    if (!stale_closed && !stale_open) {
      ++it;
      continue;
    }
    if (stale_open) {
      ++stats_.open_expired;
      for (auto o = open_by_seq_.begin(); o != open_by_seq_.end(); ++o) {
        if (o->second == it->first) {
          open_by_seq_.erase(o);
          break;
        }
      }
    }
    it = by_begin_.erase(it);
  }
  if (early_ends_.size() > 4096) early_ends_.clear();  // ends whose begin was lost
}

void LaunchBrackets::clear() {
  by_begin_.clear();
  open_by_seq_.clear();
  early_ends_.clear();
  max_correlation_ = 0;
  any_marker_ = false;
}

}  // namespace sp::cupti
