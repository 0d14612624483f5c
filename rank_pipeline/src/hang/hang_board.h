// What hang detection shares between threads of one rank: on rank 0 the episodes its watch saw
// (hang_watch.h, on the transport thread), for report.json (written by the analysis thread);
// on every rank the hang notices it heard (rank 0 suspects a hang), for the stack dump that the
// Python package makes from a thread of its own (STRAGGLER_PROBE_HANG_DUMP). Bounded: the last
// kMaxEpisodes episodes are kept, the rest counted. On rank 0 it also holds the open episode as
// the watch saw it at its last look, for /metrics, /status and the textfile (http/hang_metrics.h):
// the server's thread reads it when a scrape comes; the transport's writes it; never the
// training thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace sp::rank_pipeline {

struct HangEpisode {
  uint64_t id = 0;
  int64_t step = -1;               // the step that did not complete on every rank
  double bound_s = 0;              // the bound it was held against
  double detected_after_s = 0;     // no step for this long when it was first said
  double duration_s = -1;          // until steps completed again; -1: still open
  bool resumed = false;
  int lines = 0;                   // lines printed for it
  nlohmann::ordered_json named;    // the ranks the first line named (silent, behind, unseen)
  int waiting = 0;                 // ranks alive and waiting, in the first line
  std::string first_line, last_line;
};

// One rank an open episode names (or of those waiting), as rank 0 saw it at a look.
struct HangRank {
  std::string state;     // "silent", "behind", "unseen" or "waiting"
  int rank = -1;
  std::string host;      // from the rank table ("": not known)
  int gpu = -1;          // its device, else its local rank; -1: not known
  std::string last;      // its last op ("unknown": nothing heard of it)
  int64_t step = -1;     // that op's step; -1: none
  double ago_s = -1;     // since that op finished; -1: none
  double silent_s = -1;  // since its heartbeat last reached anyone; -1: never
};

// The open episode, once its first line was said, until it closes.
struct OpenHang {
  using Clock = std::chrono::steady_clock;

  uint64_t id = 0;
  int64_t step = -1;
  double bound_s = 0;
  int lines = 0;
  Clock::time_point stalled_since;  // no step has completed everywhere since
  Clock::time_point looked;         // when `ranks` were seen (their ages grow from there)
  std::vector<HangRank> ranks;      // as many of each state as the line names, silent first
  size_t silent = 0, behind = 0, unseen = 0, waiting = 0;  // all of them
};

class HangBoard {
 public:
  static constexpr size_t kMaxEpisodes = 64;

  // Rank 0: an episode was opened, said again or closed (upserted by id).
  void record(const HangEpisode& episode);
  // report.json's "hangs": the bound's settings, every kept episode, how many there were.
  nlohmann::ordered_json section() const;
  void set_settings(double after_s, double multiple);
  uint64_t episodes() const;
  // The latest episode's id and the ranks its first line named silent (the step's verdict takes
  // them where its events cannot tell which rank stopped: online/src/hang_rule.h); {0, {}}: none.
  std::pair<uint64_t, std::vector<int>> latest_silent() const;

  // Rank 0's watch, at each look while an episode it said is open, and when it closes.
  void show_open(OpenHang open);
  void clear_open();
  struct Snapshot {
    std::optional<OpenHang> open;
    uint64_t episodes = 0;  // since the job started (each once its first line was said)
  };
  Snapshot snapshot() const;
  // Changes whenever an episode is recorded, shown or closed (the textfile is rewritten then).
  uint64_t generation() const;

  // Called when an episode is recorded (rank 0 rewrites its report then, so that a job killed
  // during the hang keeps it). Set before the transport starts.
  std::function<void()> on_record;

  // Any rank: rank 0 suspects hang `episode` (each once).
  void notice(uint64_t episode);
  // Waits up to `timeout` for a notice newer than `seen`: its episode, or 0 (timeout, closed).
  uint64_t wait_notice(uint64_t seen, std::chrono::milliseconds timeout);
  // The pipeline stops: waiters return 0 from now on.
  void close();

 private:
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<HangEpisode> episodes_;
  uint64_t total_ = 0;
  std::optional<OpenHang> open_;
  uint64_t generation_ = 0;
  double after_s_ = 0, multiple_ = 0;
  uint64_t noticed_ = 0;
  bool closed_ = false;
};

}  // namespace sp::rank_pipeline
