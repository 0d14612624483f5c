// Cuts the stream of events from all recording threads into steps. The training thread only
// publishes "step N ended at t" (sp_mark_step); here, on the consumer thread, every event goes to
// the step whose marks enclose its start time (or to the step it is explicitly tagged with), and a
// marked step is closed once its mark is `grace` old, so that events published late (another
// thread's region still open at the mark, GPU records flushed after it) still land in it.
// Memory is bounded: per-step and total caps, beyond which events are discarded and counted.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <vector>

#include "straggler_probe/step_summary.h"

namespace sp::runtime {

struct StepMark {
  int64_t step = 0;
  uint64_t t_ns = 0;
  bool paused = false;  // the step ending at this mark was not recorded (sp_set_recording_paused)
  // The marking thread's CPU clock at the mark, and which thread that was (0: unknown): a
  // step's CPU time is the difference from the previous mark's, when one thread made both.
  uint64_t thread_cpu_ns = 0;
  uint64_t thread_id = 0;
};

class StepCutter {
 public:
  struct Limits {
    uint32_t max_events_per_step = 1u << 18;
    uint32_t max_annotations_per_step = 4096;
    uint32_t max_pending_steps = 64;  // marked, not yet closed; beyond, the oldest closes early
  };
  using Emit = std::function<void(StepSummary&&)>;

  // origin_ns: when recording began; reported as the first step's start.
  StepCutter(Limits limits, uint64_t origin_ns);

  void add_mark(StepMark mark);
  void add_event(const sp_event& ev);
  void add_annotation(uint64_t t_ns, Annotation annotation);
  // Events lost in the rings since the last call: they were being recorded in the open step.
  void add_ring_drops(uint64_t count);

  // Closes, in mark order, every marked step whose mark is at least grace_ns older than now_ns
  // (every marked step when force), passing each to emit with ops sorted by start time. Name ids
  // are still the process-wide ones; rank fields are left for the caller.
  void close_ready(uint64_t now_ns, uint64_t grace_ns, bool force, const Emit& emit);
  // Shutdown: forget the events after the last mark (an unfinished step), counting them.
  void discard_open();

  uint64_t discarded() const { return discarded_; }
  uint64_t annotations_dropped() const { return annotations_dropped_; }
  size_t pending_steps() const { return pending_.size(); }

 private:
  struct TimedAnnotation {
    uint64_t t_ns;
    Annotation annotation;
  };
  struct Bucket {
    StepMark mark;
    uint64_t start_ns = 0;
    uint64_t cpu_ns = 0;  // the marking thread's CPU time over the step (0: unknown)
    std::vector<sp_event> ops;
    std::vector<TimedAnnotation> annotations;
    uint64_t dropped = 0;
  };

  void add_to(Bucket* bucket, const sp_event& ev);
  void close_front(const Emit& emit);
  void enforce_total_cap(const Emit& emit);
  uint64_t pending_event_count() const;

  Limits limits_;
  std::deque<Bucket> pending_;  // marked steps, oldest first
  Bucket open_;                 // events after the last mark
  std::vector<sp_event> tagged_waiting_;  // tagged for a step not marked yet
  bool closed_any_ = false;
  int64_t last_closed_step_ = 0;
  uint64_t closed_until_ns_ = 0;  // untagged events starting at or before this are late
  // The previous mark (its time clamped, never before the one before it; at first the origin):
  // the next step's start, and the CPU clock its CPU time is measured from.
  StepMark last_mark_;
  uint64_t discarded_ = 0;
  uint64_t annotations_dropped_ = 0;
};

}  // namespace sp::runtime
