// One rank's part in the heartbeats (heartbeat.h) of the host-aggregated protocol, shared by its
// two possible roles (host_member.h sends its heartbeat to the leader; host_leader.h keeps its
// members' and passes the host's on): this rank's own heartbeat, the one warning for heartbeat
// bytes from another process that fail their checks (a warning of its own, so that an earlier
// transport warning cannot swallow it), and the hang notices this rank hears (rank 0 suspects a
// hang), passed once each to the hang board for the stack dump.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "hang/hang_board.h"
#include "hang/heartbeat.h"
#include "transport/transport.h"
#include "transport/transport_loop.h"

namespace sp::rank_pipeline {

class HeartbeatLink {
 public:
  HeartbeatLink(const TransportOptions& o, std::shared_ptr<TransportCounters> counters,
                std::function<void(const std::string&)> warn)
      : source_(o.heartbeat), board_(o.hang_board), counters_(std::move(counters)),
        warning_(o.rank, std::move(warn)) {}

  // This rank's heartbeat now; false when it has none (no runtime heartbeat).
  bool own(Heartbeat* out) const { return source_ && source_(out); }
  // Bytes from another process that are not a heartbeat: counted, said once, never echoed.
  void bad(const std::string& what) {
    counters_->bad_heartbeats++;
    warning_("a heartbeat was rejected: " + what);
  }
  // Rank 0 suspects hang `episode`; true the first time this rank hears of it.
  bool notice(uint64_t episode) {
    uint64_t seen = noticed_.load();
    while (episode > seen) {
      if (noticed_.compare_exchange_weak(seen, episode)) {
        if (board_) board_->notice(episode);
        return true;
      }
    }
    return false;
  }
  uint64_t noticed() const { return noticed_.load(); }

 private:
  HeartbeatSource source_;
  std::shared_ptr<HangBoard> board_;
  std::shared_ptr<TransportCounters> counters_;
  TransportWarning warning_;
  std::atomic<uint64_t> noticed_{0};
};

}  // namespace sp::rank_pipeline
