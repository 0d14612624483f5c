// The rank's heartbeat (sp_get_heartbeat): the last event it finished and its last step mark.
//
// Where it is kept, and why there: the consumer thread already takes every mark and drains every
// event each pass (every drain interval, 5 ms), so it tracks them (HeartbeatTracker) and
// publishes once per pass when something changed. The recording path gains nothing, not even a
// relaxed store. The cost is the consumer's period: a heartbeat is at most one pass late.
//
// HeartbeatCell is a seqlock of relaxed atomics: one writer (the consumer), readers on any
// thread (the transport), no lock. A reader that keeps colliding with writes gives up after a
// few tries and says so; the transport asks again at its next period.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "step_cutter.h"
#include "straggler_probe/probe.h"

namespace sp::runtime {

class NameTable;

class HeartbeatCell {
 public:
  void publish(const sp_heartbeat& hb) noexcept;
  // false: no heartbeat published yet, or the writer kept interfering.
  bool read(sp_heartbeat* out) const noexcept;

 private:
  static constexpr int kNameWords = SP_HEARTBEAT_NAME_BYTES / 8;
  std::atomic<uint64_t> seq_{0};  // odd while a write is under way; 0: never written
  std::atomic<uint64_t> kind_coll_{0}, microbatch_{0}, event_step_{0}, event_end_{0};
  std::atomic<uint64_t> marked_{0}, mark_ns_{0}, events_in_step_{0}, published_{0};
  std::atomic<uint64_t> name_[kNameWords] = {};
};

// The consumer's side: what it saw this pass, folded into the heartbeat it publishes.
class HeartbeatTracker {
 public:
  HeartbeatTracker();
  void mark(const StepMark& mark) noexcept;
  void event(const sp_event& ev) noexcept;
  // Publishes when something changed since the last publication (or once a second, so that
  // published_ns shows the consumer alive). `names` resolves a new name id (a lock, but only when
  // the last event's name changes).
  void publish(HeartbeatCell& cell, const NameTable& names, uint64_t now_ns);

 private:
  sp_heartbeat hb_{};
  uint32_t name_id_ = 0, published_name_id_ = 0;
  std::string name_;
  bool changed_ = true;
  uint64_t last_publish_ns_ = 0;
};

}  // namespace sp::runtime
