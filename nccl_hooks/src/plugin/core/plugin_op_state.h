// The life of one operation handle of the profiler plugin in one atomic word, so that NCCL's
// user thread (the operation's own stop), its proxy thread (channel starts and stops) and the
// sweep agree, without a lock, on who completes the operation, exactly once.
//
// Whoever retires the operation (sets kRetired) owns it from then on: it emits the operation and
// gives the handle back. A channel never attaches to a retired operation, and the sweep retires
// only an operation that NCCL has stopped and that has no channel in flight, so once retired, no
// NCCL event of its own can touch the handle again while it is reused (a channel in flight means
// a kernel is running the operation: it completes at that channel's stop, however late; a v4
// graph replay naming a reused handle is profiler_plugin_core.h's stale channel). The generation
// makes a sweep that read the word of an earlier use of the handle fail its compare-and-swap.
#pragma once

#include <atomic>
#include <cstdint>

namespace sp::nccl::plugin {

class OpState {
 public:
  // What the thread that delivered an event must do next.
  enum class Outcome : uint8_t {
    kWait,      // nothing: more events are due
    kComplete,  // it retired the operation: emit it, give the handle back
    kReplay,    // a graph-captured operation's replay ended: emit the replay; the handle stays
    kDrop,      // it retired a captured operation without channels (nothing reports its
                // replays): give the handle back without emitting
  };

  // start_op, before the handle is published: a new generation, no channel, not stopped.
  void begin(bool captured) {
    const uint64_t gen = (word_.load(std::memory_order_relaxed) >> kGenShift) + 1;
    word_.store(gen << kGenShift | (captured ? kCaptured : 0), std::memory_order_release);
  }

  uint64_t load() const { return word_.load(); }
  static uint32_t started(uint64_t s) { return static_cast<uint32_t>(s & kCountMask); }
  static uint32_t stopped(uint64_t s) {
    return static_cast<uint32_t>(s >> kStoppedShift & kCountMask);
  }

  // A KernelCh start: false when the operation is retired (the channel is not its own).
  // *first: the first channel of this execution (a replay takes its step from it).
  bool attach_channel(bool* first) {
    uint64_t s = word_.load();
    do {
      if ((s & kRetired) != 0 || started(s) == kCountMask) return false;
    } while (!word_.compare_exchange_weak(s, s + 1));
    *first = started(s) == 0;
    return true;
  }

  // A KernelCh stop of an attached channel.
  Outcome detach_channel(uint32_t expected) {
    uint64_t s = word_.load(), n = 0;
    Outcome out = Outcome::kWait;
    do {
      n = s + kStoppedOne;
      out = Outcome::kWait;
      // Not finished yet (or, defensively, retired already): only count the stop. `continue`
      // goes to the compare-and-swap below.
      if ((n & kRetired) != 0 || !finished(n, expected)) continue;
      if ((n & kCaptured) != 0) {
        n &= ~(kCountMask | kCountMask << kStoppedShift);  // ready for the next replay
        out = Outcome::kReplay;
      } else if ((n & kOpStopped) != 0) {
        n |= kRetired;
        out = Outcome::kComplete;
      }
    } while (!word_.compare_exchange_weak(s, n));
    return out;
  }

  // NCCL's stop of the Coll / P2p / CeColl event (enqueue done). An operation awaiting no channel
  // completes here unless a channel is in flight; one whose channels all ended already, too.
  Outcome stop_op(uint32_t expected) {
    uint64_t s = word_.load(), n = 0;
    Outcome out = Outcome::kWait;
    do {
      n = s | kOpStopped;
      out = Outcome::kWait;
      if ((n & kCaptured) != 0) {
        if (expected == 0 && started(n) == 0) out = Outcome::kDrop;
      } else if (finished(n, expected)) {
        out = Outcome::kComplete;
      }
      if (out != Outcome::kWait) n |= kRetired;
    } while (!word_.compare_exchange_weak(s, n));
    return out;
  }

  static bool captured(uint64_t s) { return (s & kCaptured) != 0; }
  // NCCL stopped it, no channel is in flight, nobody retired it: the sweep (uncaptured ones) and
  // finalize may give it up. One with a channel in flight is running: its stop completes it.
  static bool idle(uint64_t s) {
    return (s & (kOpStopped | kRetired)) == kOpStopped && started(s) == stopped(s);
  }
  // Retires the operation if its word is still `seen` (same use of the handle, nothing arrived
  // since) and idle: true = the caller owns it.
  bool retire_if_idle(uint64_t seen) {
    return idle(seen) && word_.compare_exchange_strong(seen, seen | kRetired);
  }

 private:
  // All expected channels stopped and none in flight.
  static bool finished(uint64_t s, uint32_t expected) {
    return stopped(s) >= expected && started(s) == stopped(s);
  }

  static constexpr uint64_t kCountMask = 0xFFFF;  // channels started: bits 0-15
  static constexpr int kStoppedShift = 16;        // channels stopped: bits 16-31
  static constexpr uint64_t kStoppedOne = uint64_t{1} << kStoppedShift;
  static constexpr uint64_t kOpStopped = uint64_t{1} << 32;
  static constexpr uint64_t kRetired = uint64_t{1} << 33;
  static constexpr uint64_t kCaptured = uint64_t{1} << 34;
  static constexpr int kGenShift = 40;  // generation: bits 40-63

  std::atomic<uint64_t> word_{0};
};

}  // namespace sp::nccl::plugin
