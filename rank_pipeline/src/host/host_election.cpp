#include "host_election.h"

#include "host_identity.h"
#include "host_keys.h"

namespace sp::rank_pipeline {
namespace {

// "<rank> <socket name>" as offered; false when it does not parse or names a rank outside
// the job (another job's key under the same prefix, or bytes no rank wrote).
bool parse_offer(const std::string& value, int world_size, int* rank, std::string* socket) {
  const size_t space = value.find(' ');
  if (space == std::string::npos || space + 1 >= value.size()) return false;
  const auto r = parse_store_int(value.substr(0, space));
  if (!r || *r < 0 || *r >= world_size) return false;
  *rank = static_cast<int>(*r);
  *socket = value.substr(space + 1);
  return true;
}

}  // namespace

Election elect_host_leader(const TransportContext& c, TransportWarning* warning) {
  Election e;
  e.leader_rank = c.o.rank;
  const HostIdentity host = this_host(c.o.identity.host);
  e.host_key = host.key;
  std::string error;
  if (c.o.world_size > 1) {
    e.listener = FrameListener::open(&error);
    if (!e.listener) (*warning)("cannot listen for this host's ranks: " + error);
    const std::string offer =
        std::to_string(c.o.rank) + " " + (e.listener ? e.listener->name() : std::string("-"));
    const auto winner = c.store->compare_set(host::leader_key(c.o, host.key), "", offer, &error);
    if (!winner) {
      (*warning)("store: " + error + "; this rank sends as a host of its own");
      e.host_key.clear();
    } else if (*winner != offer) {
      int rank = -1;
      if (parse_offer(*winner, c.o.world_size, &rank, &e.leader_socket)) {
        e.leader = false;
        e.leader_rank = rank;
        e.listener.reset();
      } else {
        (*warning)("this host's leader key holds something else; this rank sends as a host of "
                   "its own");
        e.host_key.clear();
      }
    }
    if (!e.host_key.empty() && !c.store->add(host::members_key(c.o, host.key), 1, &error)) {
      (*warning)("store: " + error);
    }
  }
  RankInfo row = c.o.identity;
  row.rank = c.o.rank;
  row.leader = e.leader_rank;
  row.host = host.name;
  if (!c.store->append(host::ranks_key(c.o), encode_rank_row(row), &error)) {
    (*warning)("store: " + error);
  }
  return e;
}

}  // namespace sp::rank_pipeline
