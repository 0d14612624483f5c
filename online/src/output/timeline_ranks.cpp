#include "timeline_ranks.h"

#include <algorithm>
#include <numeric>

#include "timeline_writer.h"

namespace sp::online {
namespace {

size_t digits(int64_t v) {
  size_t n = v < 0 ? 2 : 1;
  for (v = v < 0 ? -v : v; v >= 10; v /= 10) ++n;
  return n;
}

// What timeline_json_text writes per event beyond its name and numbers:
// {"ph":"X","name":,"pid":,"tid":0,"ts":,"dur":,"args":{"step":}} and the separating comma (64);
// ts and dur as microseconds with three decimals (a step of up to 10 s: 11 and 9 characters).
constexpr size_t kEventFixedBytes = 64 + 11 + 9;
// One lane's four metadata records (process name, sort index, two thread names), per real and ideal.
constexpr size_t kRankMetadataBytes = 2 * 340;

}  // namespace

std::vector<size_t> timeline_rank_bytes(const std::deque<TimelineStep>& steps, int world) {
  std::vector<size_t> bytes(static_cast<size_t>(std::max(0, world)), kRankMetadataBytes);
  const size_t pid_digits = digits(2 * static_cast<int64_t>(world));
  for (const TimelineStep& s : steps) {
    const size_t per_step = kEventFixedBytes + pid_digits + digits(s.step);
    for (const TimelineOp& op : s.ops) {
      if (op.rank < 0 || op.rank >= world) continue;
      const size_t name = op.type >= 0 && static_cast<size_t>(op.type) < s.type_names.size()
                              ? s.type_names[static_cast<size_t>(op.type)].size() + 2
                              : 2;
      bytes[static_cast<size_t>(op.rank)] += 2 * (per_step + name);
    }
  }
  return bytes;
}

std::vector<int> timeline_rank_priority(const std::deque<TimelineStep>& steps, int world) {
  const auto n = static_cast<size_t>(std::max(0, world));
  std::vector<int> order;
  order.reserve(n);
  std::vector<char> taken(n, 0);
  auto take = [&](int r) {
    if (r < 0 || static_cast<size_t>(r) >= n || taken[static_cast<size_t>(r)]) return;
    taken[static_cast<size_t>(r)] = 1;
    order.push_back(r);
  };
  // A rank's score: its highest S_w over the drawn steps.
  std::vector<double> score(n, 0.0);
  for (const TimelineStep& s : steps) {
    for (size_t r = 0; r < std::min(n, s.rank_score.size()); ++r) score[r] = std::max(score[r], s.rank_score[r]);
  }
  std::vector<int> by_score(n);
  std::iota(by_score.begin(), by_score.end(), 0);
  std::stable_sort(by_score.begin(), by_score.end(),
                   [&](int a, int b) { return score[static_cast<size_t>(a)] > score[static_cast<size_t>(b)]; });
  const std::vector<int> no_stages;
  const std::vector<int>& stage = steps.empty() ? no_stages : steps.back().rank_stage;
  auto slowest_of_stage = [&](int st) {
    for (int r : by_score) {
      if (static_cast<size_t>(r) < stage.size() && stage[static_cast<size_t>(r)] == st) return r;
    }
    return -1;
  };
  take(0);
  for (auto it = steps.rbegin(); it != steps.rend(); ++it) {  // newest first
    take(it->named_rank);
    if (it->named_stage >= 0) take(slowest_of_stage(it->named_stage));
  }
  const int stages = stage.empty() ? 0 : *std::max_element(stage.begin(), stage.end()) + 1;
  for (int st = 0; st < stages; ++st) take(slowest_of_stage(st));
  size_t hi = 0, lo = n;  // the slowest from the front of by_score, the fastest from its back
  for (int pick = 1; order.size() < n; ++pick) {
    if (pick % 4 == 0) {
      while (lo > 0 && taken[static_cast<size_t>(by_score[lo - 1])]) --lo;
      if (lo > 0) take(by_score[--lo]);
    } else {
      while (hi < n && taken[static_cast<size_t>(by_score[hi])]) ++hi;
      if (hi < n) take(by_score[hi++]);
    }
  }
  return order;
}

TimelineRanks choose_timeline_ranks(const std::deque<TimelineStep>& steps, int world,
                                    const TimelineRankLimit& limit) {
  TimelineRanks out;
  out.world = std::max(0, world);
  out.drawn.assign(static_cast<size_t>(out.world), 0);
  const std::vector<size_t> bytes = timeline_rank_bytes(steps, out.world);
  const size_t total = std::accumulate(bytes.begin(), bytes.end(), size_t{0});
  const bool all = limit.max_ranks > 0 ? limit.max_ranks >= out.world : total <= limit.byte_budget;
  if (all) {
    std::fill(out.drawn.begin(), out.drawn.end(), 1);
    out.shown = out.world;
    return out;
  }
  // Rank 0 and the named ranks are drawn whatever they cost: they are why the file is opened.
  std::vector<char> named(static_cast<size_t>(out.world), 0);
  if (out.world > 0) named[0] = 1;
  for (const TimelineStep& s : steps) {
    if (s.named_rank >= 0 && s.named_rank < out.world) named[static_cast<size_t>(s.named_rank)] = 1;
  }
  size_t used = 0;
  for (int r : timeline_rank_priority(steps, out.world)) {
    const auto i = static_cast<size_t>(r);
    const bool fits = limit.max_ranks > 0 ? out.shown < limit.max_ranks : used + bytes[i] <= limit.byte_budget;
    if (!fits && !named[i]) break;
    out.drawn[i] = 1;
    used += bytes[i];
    ++out.shown;
  }
  return out;
}

}  // namespace sp::online
