// How the ranks of one host find their leader (host-aggregated protocol, transport.h), once at
// start: each rank opens a listening socket and offers "<rank> <socket>" with compare_set on
// host/<host key>; the first offer stays, so every rank of the host reads the same leader. Then
// it counts itself in host/<host key>/n (the leader waits for that many members at start) and
// appends its row to the rank table. Three store operations per rank, once.
#pragma once

#include <memory>
#include <string>

#include "local_channel.h"
#include "transport/transport_loop.h"

namespace sp::rank_pipeline {

struct Election {
  bool leader = true;
  int leader_rank = -1;
  std::string leader_socket;                // members: where to connect ("-": the leader has none)
  std::unique_ptr<FrameListener> listener;  // the leader's (null for a host of one)
  std::string host_key;
};

// Never throws; a store that fails makes this rank a host of its own (with one warning).
Election elect_host_leader(const TransportContext& c, TransportWarning* warning);

}  // namespace sp::rank_pipeline
