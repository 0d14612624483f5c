#include "step_cutter.h"

#include <algorithm>
#include <utility>

namespace sp::runtime {
namespace {

int64_t tagged_step(const sp_event& ev) { return static_cast<int64_t>(ev.step_plus_one - 1); }

}  // namespace

StepCutter::StepCutter(Limits limits, uint64_t origin_ns)
    : limits_(limits), last_mark_{0, origin_ns} {}

void StepCutter::add_to(Bucket* bucket, const sp_event& ev) {
  if (bucket->ops.size() >= limits_.max_events_per_step) {
    ++bucket->dropped;
    ++discarded_;
    return;
  }
  bucket->ops.push_back(ev);
}

void StepCutter::add_event(const sp_event& ev) {
  if (ev.step_plus_one != 0) {
    const int64_t step = tagged_step(ev);
    if (closed_any_ && step <= last_closed_step_) {
      ++discarded_;  // its step is already on its way to rank 0
      return;
    }
    for (Bucket& b : pending_) {
      if (b.mark.step == step) {
        add_to(&b, ev);
        return;
      }
    }
    if (tagged_waiting_.size() >= limits_.max_events_per_step) {
      ++open_.dropped;
      ++discarded_;
      return;
    }
    tagged_waiting_.push_back(ev);
    return;
  }
  if (closed_any_ && ev.start_ns <= closed_until_ns_) {
    ++discarded_;  // started in a step that is closed: published after the grace period
    return;
  }
  // A step covers (previous mark, its mark]; marks are in time order.
  auto it = std::lower_bound(pending_.begin(), pending_.end(), ev.start_ns,
                             [](const Bucket& b, uint64_t t) { return b.mark.t_ns < t; });
  add_to(it != pending_.end() ? &*it : &open_, ev);
}

void StepCutter::add_annotation(uint64_t t_ns, Annotation annotation) {
  if (closed_any_ && t_ns <= closed_until_ns_) {
    ++annotations_dropped_;
    return;
  }
  auto it = std::lower_bound(pending_.begin(), pending_.end(), t_ns,
                             [](const Bucket& b, uint64_t t) { return b.mark.t_ns < t; });
  Bucket& bucket = it != pending_.end() ? *it : open_;
  if (bucket.annotations.size() >= limits_.max_annotations_per_step) {
    ++annotations_dropped_;
    return;
  }
  bucket.annotations.push_back({t_ns, std::move(annotation)});
}

void StepCutter::add_ring_drops(uint64_t count) {
  open_.dropped += count;
}

void StepCutter::add_mark(StepMark mark) {
  // CLOCK_REALTIME may be stepped back (NTP); a mark never moves before the previous one.
  mark.t_ns = std::max(mark.t_ns, last_mark_.t_ns);
  Bucket b;
  b.mark = mark;
  b.start_ns = last_mark_.t_ns;
  b.dropped = std::exchange(open_.dropped, 0);
  if (mark.thread_id != 0 && mark.thread_id == last_mark_.thread_id &&
      mark.thread_cpu_ns >= last_mark_.thread_cpu_ns && last_mark_.thread_cpu_ns != 0) {
    b.cpu_ns = mark.thread_cpu_ns - last_mark_.thread_cpu_ns;
  }
  last_mark_ = mark;

  auto ops_end = std::stable_partition(open_.ops.begin(), open_.ops.end(),
                                       [&](const sp_event& ev) { return ev.start_ns <= mark.t_ns; });
  b.ops.assign(std::make_move_iterator(open_.ops.begin()), std::make_move_iterator(ops_end));
  open_.ops.erase(open_.ops.begin(), ops_end);

  auto ann_end = std::stable_partition(open_.annotations.begin(), open_.annotations.end(),
                                       [&](const TimedAnnotation& a) { return a.t_ns <= mark.t_ns; });
  b.annotations.assign(std::make_move_iterator(open_.annotations.begin()),
                       std::make_move_iterator(ann_end));
  open_.annotations.erase(open_.annotations.begin(), ann_end);

  auto waiting_end = std::stable_partition(
      tagged_waiting_.begin(), tagged_waiting_.end(),
      [&](const sp_event& ev) { return tagged_step(ev) != mark.step; });
  for (auto it = waiting_end; it != tagged_waiting_.end(); ++it) add_to(&b, *it);
  tagged_waiting_.erase(waiting_end, tagged_waiting_.end());

  pending_.push_back(std::move(b));
}

uint64_t StepCutter::pending_event_count() const {
  uint64_t n = open_.ops.size() + tagged_waiting_.size();
  for (const Bucket& b : pending_) n += b.ops.size();
  return n;
}

void StepCutter::close_front(const Emit& emit) {
  Bucket b = std::move(pending_.front());
  pending_.pop_front();

  StepSummary s;
  s.step = b.mark.step;
  s.step_start_ns = b.start_ns;
  s.step_end_ns = b.mark.t_ns;
  s.dropped_events = b.dropped;
  s.step_cpu_ns = b.cpu_ns;
  std::sort(b.ops.begin(), b.ops.end(), [](const sp_event& x, const sp_event& y) {
    return x.start_ns != y.start_ns ? x.start_ns < y.start_ns : x.end_ns < y.end_ns;
  });
  for (sp_event& ev : b.ops) ev.step_plus_one = 0;  // resolved: the summary is the step
  s.ops = std::move(b.ops);
  if (b.mark.paused) {  // only events in flight at the pause: none of them is the step's
    discarded_ += s.ops.size();
    s.ops.clear();
    b.annotations.clear();
    b.annotations.push_back({b.mark.t_ns, Annotation{-1, std::string(kPausedAnnotation), "1"}});
  }
  std::stable_sort(b.annotations.begin(), b.annotations.end(),
                   [](const TimedAnnotation& x, const TimedAnnotation& y) { return x.t_ns < y.t_ns; });
  s.annotations.reserve(b.annotations.size());
  for (TimedAnnotation& a : b.annotations) s.annotations.push_back(std::move(a.annotation));

  closed_any_ = true;
  last_closed_step_ = b.mark.step;
  closed_until_ns_ = b.mark.t_ns;
  // Events tagged for a step at or before this one will never find their step now.
  auto late = std::remove_if(tagged_waiting_.begin(), tagged_waiting_.end(),
                             [&](const sp_event& ev) { return tagged_step(ev) <= last_closed_step_; });
  discarded_ += static_cast<uint64_t>(tagged_waiting_.end() - late);
  tagged_waiting_.erase(late, tagged_waiting_.end());

  emit(std::move(s));
}

void StepCutter::close_ready(uint64_t now_ns, uint64_t grace_ns, bool force, const Emit& emit) {
  // Bounded memory first: too many steps, or too many events waiting, close the oldest early.
  const uint64_t total_cap = 4ull * limits_.max_events_per_step;
  while (!pending_.empty() &&
         (pending_.size() > limits_.max_pending_steps || pending_event_count() > total_cap)) {
    close_front(emit);
  }
  while (!pending_.empty()) {
    const Bucket& front = pending_.front();
    if (!force && now_ns < front.mark.t_ns + grace_ns) break;
    close_front(emit);
  }
}

void StepCutter::discard_open() {
  discarded_ += open_.ops.size() + tagged_waiting_.size();
  annotations_dropped_ += open_.annotations.size();
  open_ = Bucket{};
  tagged_waiting_.clear();
}

}  // namespace sp::runtime
