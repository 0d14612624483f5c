#include "comm_groups.h"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <map>
#include <set>
#include <tuple>

namespace sp::online {
namespace {

std::string hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "%llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string rank_list(const std::vector<int>& ranks) {
  std::string out;
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (i) out += ',';
    out += std::to_string(ranks[i]);
  }
  return out;
}

// Collectives whose members all finish when the data is complete everywhere. (A broadcast root
// or a reduce's non-root may finish early.) A send and its receive are matched as a pair and
// finish together too (see match_comm_groups).
bool symmetric(uint32_t coll) {
  return coll == SP_COLL_ALL_REDUCE || coll == SP_COLL_ALL_GATHER ||
         coll == SP_COLL_REDUCE_SCATTER || coll == SP_COLL_ALL_TO_ALL || coll == SP_COLL_BARRIER;
}

bool match_collectives(StepModel* m, const std::vector<CommRecord>& comm, std::string* error,
                       std::vector<char>* is_symmetric) {
  // (group, seq) -> members; group -> ranks that took part in it during this step.
  std::map<std::pair<uint64_t, uint64_t>, std::vector<const CommRecord*>> by_key;
  std::map<uint64_t, std::set<int>> group_ranks;
  for (const CommRecord& c : comm) {
    if (c.ev->kind != SP_OP_COLLECTIVE) continue;
    by_key[{c.ev->group_id, c.ev->seq}].push_back(&c);
    group_ranks[c.ev->group_id].insert(m->ops[c.logical].rank);
  }
  for (const auto& [key, members] : by_key) {
    const auto& [gid, seq] = key;
    const std::string what = "collective (group " + hex(gid) + " seq " + std::to_string(seq) + ")";
    std::set<int> ranks;
    for (const CommRecord* c : members) {
      const int r = m->ops[c->logical].rank;
      if (!ranks.insert(r).second) {
        *error = what + " appears twice on rank " + std::to_string(r);
        return false;
      }
      if (c->ev->coll != members.front()->ev->coll) {
        *error = "ranks disagree on " + what + ": rank " +
                 std::to_string(m->ops[members.front()->logical].rank) + " says " +
                 m->type_names[m->ops[members.front()->logical].type] + ", rank " +
                 std::to_string(r) + " says " + m->type_names[m->ops[c->logical].type];
        return false;
      }
    }
    // Expected members: the group size every member reports, else every rank that used the
    // group in this step.
    int expected = members.front()->ev->group_size;
    for (const CommRecord* c : members) {
      if (c->ev->group_size != expected) {
        *error = "ranks disagree on the size of " + what;
        return false;
      }
    }
    if (expected <= 0) expected = static_cast<int>(group_ranks[gid].size());
    if (static_cast<int>(members.size()) != expected) {
      std::vector<int> missing;
      for (int r : group_ranks[gid]) {
        if (!ranks.count(r)) missing.push_back(r);
      }
      *error = what + " has " + std::to_string(members.size()) + " of " +
               std::to_string(expected) + " members" +
               (missing.empty() ? "" : " (missing on ranks " + rank_list(missing) + ")");
      return false;
    }
    NodeList group;
    for (const CommRecord* c : members) group.push_back(m->ops[c->logical].first_node);
    m->groups.push_back(std::move(group));
    is_symmetric->push_back(symmetric(members.front()->ev->coll) ? 1 : 0);
  }
  return true;
}

bool match_p2p(StepModel* m, const std::vector<CommRecord>& comm, std::string* error,
               std::vector<char>* is_symmetric) {
  // Each side's ops by (sender, receiver), then start (ties in record order): one sorted
  // array per side, not a map of vectors per pair.
  struct Side {
    std::pair<int, int> pair;  // (sender, receiver)
    double start;
    int logical;
  };
  std::vector<Side> sends, recvs;
  for (const CommRecord& c : comm) {
    const int r = m->ops[c.logical].rank;
    const double start = m->ops[c.logical].start;
    if (c.ev->kind == SP_OP_SEND) sends.push_back({{r, c.ev->peer}, start, c.logical});
    if (c.ev->kind == SP_OP_RECV) recvs.push_back({{c.ev->peer, r}, start, c.logical});
  }
  const auto order = [](const Side& a, const Side& b) {
    return a.pair != b.pair ? a.pair < b.pair : a.start < b.start;
  };
  // Stably by (pair, start). The records come rank by rank, each rank's in start order, so two
  // stable counting sorts (by receiver, then by sender) nearly always give that order already:
  // ties keep the records' order, as std::stable_sort keeps them. Checked; where the starts of
  // a pair were not in order, stable_sort finishes the job (equal keys are still in record
  // order, so the result is stable_sort's of the records). ~2 x 65 k sides a step at 4096
  // ranks dp x pp: the merge sorts cost ~35 M instructions.
  const int world = m->world;
  std::vector<Side> scratch;
  std::vector<size_t> next;
  const auto by_rank = [&](std::vector<Side>* v, auto rank_of) {
    next.assign(static_cast<size_t>(world) + 1, 0);
    for (const Side& x : *v) ++next[static_cast<size_t>(rank_of(x)) + 1];
    for (size_t r = 1; r < next.size(); ++r) next[r] += next[r - 1];
    scratch.resize(v->size());
    for (const Side& x : *v) scratch[next[static_cast<size_t>(rank_of(x))]++] = x;
    v->swap(scratch);
  };
  for (std::vector<Side>* v : {&sends, &recvs}) {
    by_rank(v, [](const Side& x) { return x.pair.second; });
    by_rank(v, [](const Side& x) { return x.pair.first; });
    if (!std::is_sorted(v->begin(), v->end(), order)) std::stable_sort(v->begin(), v->end(), order);
  }
  // Pairs in ascending order, as both sides have them.
  size_t i = 0, j = 0;
  while (i < sends.size() || j < recvs.size()) {
    const std::pair<int, int> pair =
        j >= recvs.size() || (i < sends.size() && sends[i].pair < recvs[j].pair) ? sends[i].pair
                                                                                  : recvs[j].pair;
    size_t s_end = i, r_end = j;
    while (s_end < sends.size() && sends[s_end].pair == pair) ++s_end;
    while (r_end < recvs.size() && recvs[r_end].pair == pair) ++r_end;
    if (s_end - i != r_end - j) {
      *error = "p2p " + std::to_string(pair.first) + "->" + std::to_string(pair.second) + ": " +
               std::to_string(s_end - i) + " sends but " + std::to_string(r_end - j) + " recvs";
      return false;
    }
    for (; i < s_end; ++i, ++j) {
      m->groups.push_back({m->ops[sends[i].logical].first_node, m->ops[recvs[j].logical].first_node});
      is_symmetric->push_back(1);
    }
  }
  return true;
}

}  // namespace

bool match_comm_groups(StepModel* m, const std::vector<CommRecord>& comm, double eps,
                       std::string* error) {
  m->groups.clear();
  std::vector<char> is_symmetric;
  if (!match_collectives(m, comm, error, &is_symmetric) || !match_p2p(m, comm, error, &is_symmetric)) {
    return false;
  }
  for (int g = 0; g < static_cast<int>(m->groups.size()); ++g) {
    double latest_start = -std::numeric_limits<double>::infinity();
    double earliest_end = std::numeric_limits<double>::infinity();
    for (int n : m->groups[g]) {
      latest_start = std::max(latest_start, m->nodes[n].start);
      earliest_end = std::min(earliest_end, m->nodes[n].end);
    }
    const bool together = is_symmetric[static_cast<size_t>(g)] != 0;
    for (int n : m->groups[g]) {
      Node& node = m->nodes[n];
      node.group = g;
      // The members of an all-reduce finish together; a member that recorded its end later only
      // noticed later (a completion callback waiting for its thread or the GIL). That lateness is
      // the rank's own CPU delay: the op ends with the earliest member and whatever waited for
      // it on this rank starts with a longer launch delay. The same holds for a send and its
      // receive (the transfer is over when the data has arrived): a pipeline schedule may wait
      // for an async send long after it completed (GPipe waits for its forward sends after the
      // last forward), and the time until that wait is not transfer. Counted as transfer it made
      // the ideal longer than the real step: each send got the median of such waits.
      if (together && earliest_end >= latest_start) node.end = earliest_end;
      double transfer = node.end - latest_start;
      if (transfer < 0) {
        // Clock skew between hosts can put a peer's start after this op's end.
        if (transfer < -eps) ++m->clamped;
        transfer = 0;
      }
      node.duration = transfer;
      m->ops[node.logical].own = transfer;
    }
  }
  return true;
}

}  // namespace sp::online
