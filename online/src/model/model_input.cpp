#include "model_input.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <string_view>

#include "op_classes.h"

namespace sp::online {
namespace {

// Checks what one summary can be checked for on its own. (The error texts are built only when
// there is an error: this runs for every op of every rank each step.)
bool check_summary(const runtime::StepSummary& s, int index, int world, std::string* error) {
  const auto who = [index] { return "rank " + std::to_string(index); };
  if (s.rank != index) {
    *error = who() + ": summary says rank " + std::to_string(s.rank);
    return false;
  }
  if (s.world_size != world) {
    *error = who() + ": summary says world size " + std::to_string(s.world_size) + ", expected " +
             std::to_string(world);
    return false;
  }
  // Times are ns since the epoch (2^62: the year 2116) and clock offsets a few seconds at most
  // (2^60: 36 years): within these, a time plus an offset and the difference of two such stay
  // inside int64 (the model's arithmetic), whatever bytes another rank sent.
  constexpr uint64_t kMaxTimeNs = uint64_t{1} << 62;
  constexpr int64_t kMaxOffsetNs = int64_t{1} << 60;
  if (s.step_start_ns >= kMaxTimeNs || s.step_end_ns >= kMaxTimeNs || s.clock_offset_ns >= kMaxOffsetNs ||
      s.clock_offset_ns <= -kMaxOffsetNs) {
    *error = who() + ": step time or clock offset out of range";
    return false;
  }
  for (size_t i = 0; i < s.ops.size(); ++i) {
    const sp_event& ev = s.ops[i];
    const auto op = [&who, i] { return who() + ": op " + std::to_string(i); };
    if (ev.start_ns >= kMaxTimeNs || ev.end_ns >= kMaxTimeNs) {
      *error = op() + " has a time out of range";
      return false;
    }
    if (op_role(ev.kind) == OpRole::kInvalid) {
      *error = op() + " has unknown kind " + std::to_string(ev.kind);
      return false;
    }
    if (ev.end_ns < ev.start_ns) {
      *error = op() + " ends before it starts";
      return false;
    }
    if (ev.name_id != 0 && ev.name_id >= s.names.size()) {
      *error = op() + " names entry " + std::to_string(ev.name_id) + " but the summary has " +
               std::to_string(s.names.size()) + " names";
      return false;
    }
    if ((ev.kind == SP_OP_SEND || ev.kind == SP_OP_RECV) &&
        (ev.peer < 0 || ev.peer >= world || ev.peer == index)) {
      *error = op() + " is a p2p op with peer " + std::to_string(ev.peer);
      return false;
    }
  }
  return true;
}

}  // namespace

// Parses "512,1024,77" into the sum of lengths and of squared lengths.
bool parse_seq_lens(const std::string& value, double* sum, double* sum_sq) {
  *sum = *sum_sq = 0;
  const char* p = value.data();
  const char* end = p + value.size();
  int count = 0;
  while (p < end) {
    while (p < end && (*p == ' ' || *p == '[' || *p == ']')) ++p;
    if (p >= end) break;
    long long v = 0;
    auto [next, ec] = std::from_chars(p, end, v);
    if (ec != std::errc() || v < 0) return false;
    *sum += static_cast<double>(v);
    *sum_sq += static_cast<double>(v) * static_cast<double>(v);
    ++count;
    p = next;
    while (p < end && (*p == ' ' || *p == ']')) ++p;
    if (p < end) {
      if (*p != ',') return false;
      ++p;
    }
  }
  return count > 0;
}

// Every summary present and sound on its own.
bool check_summaries(const std::vector<const runtime::StepSummary*>& by_rank, std::string* error) {
  const int world = static_cast<int>(by_rank.size());
  if (world == 0) {
    *error = "no summaries";
    return false;
  }
  for (int r = 0; r < world; ++r) {
    if (by_rank[r] == nullptr) {
      *error = "rank " + std::to_string(r) + " sent no summary";
      return false;
    }
    if (!check_summary(*by_rank[r], r, world, error)) return false;
  }
  return true;
}

// Layout: unknown dp rank means the rank is its own dp rank; unknown stage means no pipeline.
bool read_layout(StepModel* m, const std::vector<const runtime::StepSummary*>& by_rank, std::string* error) {
  m->rank_dp.resize(m->world);
  m->rank_stage.resize(m->world);
  for (int r = 0; r < m->world; ++r) {
    m->rank_dp[r] = by_rank[r]->dp_rank >= 0 ? by_rank[r]->dp_rank : r;
    m->rank_stage[r] = by_rank[r]->pp_stage >= 0 ? by_rank[r]->pp_stage : 0;
    if (m->rank_dp[r] >= m->world || m->rank_stage[r] >= m->world) {
      *error = "rank " + std::to_string(r) + ": dp rank " + std::to_string(m->rank_dp[r]) +
               " / stage " + std::to_string(m->rank_stage[r]) + " out of range";
      return false;
    }
    m->dp_size = std::max(m->dp_size, m->rank_dp[r] + 1);
    m->pp_size = std::max(m->pp_size, m->rank_stage[r] + 1);
  }
  return true;
}

}  // namespace sp::online
