// Launch brackets: the flush-thread half of region attribution (launch_markers.h launches the
// markers). Pure: markers and activities in, a region id per activity out; tested without a GPU.
//
// Each region instance is a bracket [begin marker's correlation id, end marker's]. An activity
// belongs to the innermost bracket around its correlation id: the one begun last among those that
// hold it (brackets of one thread nest; an NCCL launch inside a backward is the NCCL operation's).
// An activity can be decided only once a marker launched after it has been seen (the markers run
// in launch order on one stream, so every marker before it has been seen too); until then it is
// held by the caller.
#pragma once

#include <cstdint>
#include <map>
#include <unordered_map>

#include "launch_markers.h"

namespace sp::cupti {

struct LaunchBracketStats {
  uint64_t markers = 0;           // marker records seen
  uint64_t brackets_closed = 0;
  uint64_t open_expired = 0;      // begun, never ended within the limit (end marker lost)
  uint64_t evicted = 0;           // dropped because the table was full
  uint64_t correlation_wraps = 0; // the 32-bit correlation counter wrapped: brackets restarted
};

class LaunchBrackets {
 public:
  enum class Decision { kInside, kOutside, kUndecided };

  struct Options {
    uint64_t keep_closed_windows = 4;   // flush windows a closed bracket is kept for late records
    uint64_t open_limit_windows = 120;  // an unended bracket is dropped after this (~60 s)
    size_t max_brackets = 1u << 16;
  };

  LaunchBrackets() = default;
  explicit LaunchBrackets(Options opts) : opts_(opts) {}

  void add_marker(uint32_t correlation, const LaunchMarkers::Marker& m, uint64_t window);
  // The region (or NCCL) id of the innermost bracket around `correlation`. `best_known` answers
  // even when no later marker has been seen (an activity held long enough: a bracket still open
  // around it holds it, though an inner one may not have been seen).
  Decision assign(uint32_t correlation, uint64_t* external_id, bool best_known = false) const;
  // At the end of a window: forget what no late record can need any more.
  void prune(uint64_t window);
  // Capture handed to another client: no bracket survives (their end markers are not recorded).
  void clear();

  const LaunchBracketStats& stats() const { return stats_; }
  size_t size() const { return by_begin_.size(); }

 private:
  struct Bracket {
    uint64_t external_id = 0;
    uint32_t end = 0;
    bool closed = false;
    uint64_t window = 0;  // when begun, or when closed
  };
  static constexpr int kMaxWalk = 256;

  void close(uint32_t begin_correlation, uint32_t end_correlation, uint64_t window);

  Options opts_;
  LaunchBracketStats stats_;
  std::map<uint32_t, Bracket> by_begin_;                  // by the begin marker's correlation id
  std::unordered_map<uint64_t, uint32_t> open_by_seq_;    // begin seq -> begin correlation
  std::unordered_map<uint64_t, uint32_t> early_ends_;     // end seen before its begin: seq -> end
  uint32_t max_correlation_ = 0;
  bool any_marker_ = false;
};

}  // namespace sp::cupti
