// Cross-row validation of a parsed trace. Both checks find their earliest offending row; the
// earlier of the two is reported, so the message does not depend on which check runs first.
#include "trace_loader_checks.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

#include "trace_loader_schema.h"

namespace sp::whatif::detail {
namespace {

struct Finding {
  size_t row;
  std::string column;
  std::string message;
};

std::optional<Finding> duplicate_finding(const TraceTable& t, size_t row, size_t first_row) {
  return Finding{row, "seq_id",
                 "duplicate of line " + std::to_string(line_of_row(first_row)) + " (rank " + std::to_string(t.rank[row]) +
                     ", step " + std::to_string(t.step[row]) + ", optype " + std::string(op_type_name(t.optype[row])) +
                     ", seq_id " + std::to_string(t.seq_id[row]) + ")"};
}

// Sorts (key, row) pairs; in each run of equal keys the first pair is the original and every
// later one a duplicate. Returns the duplicate on the earliest line.
template <typename Key>
std::optional<Finding> first_duplicate_by_sort(const TraceTable& t, std::vector<std::pair<Key, uint32_t>>& keys) {
  std::sort(keys.begin(), keys.end());
  std::optional<size_t> best_row;
  size_t best_first = 0;
  size_t run_start = 0;
  for (size_t i = 1; i < keys.size(); ++i) {
    if (keys[i].first != keys[run_start].first) {
      run_start = i;
    } else if (!best_row || keys[i].second < *best_row) {
      best_row = keys[i].second;
      best_first = keys[run_start].second;
    }
  }
  if (!best_row) return std::nullopt;
  return duplicate_finding(t, *best_row, best_first);
}

// Real traces have small ranks, steps and sequence numbers: the four fields then pack into one
// 64-bit key.
bool packable(const TraceTable& t) {
  bool ok = t.size() < UINT32_MAX;
  for (size_t i = 0; i < t.size() && ok; ++i) {
    ok = t.rank[i] < (1 << 20) && t.step[i] < (int64_t{1} << 24) && t.seq_id[i] < (1 << 16);
  }
  return ok;
}

uint64_t packed_key(const TraceTable& t, size_t i) {
  return uint64_t(uint32_t(t.rank[i])) << 44 | uint64_t(t.step[i]) << 20 |
         uint64_t(static_cast<uint8_t>(t.optype[i])) << 16 | uint64_t(uint32_t(t.seq_id[i]));
}

// One pass in row order over an open-addressing table of packed keys (several times faster
// than sorting them): the first repeat met is the duplicate on the earliest line, and the
// table holds its key's first row.
std::optional<Finding> first_duplicate_packed(const TraceTable& t) {
  size_t capacity = 16;
  int bits = 4;
  for (; capacity < 2 * t.size(); capacity <<= 1) ++bits;
  std::vector<uint64_t> keys(capacity);
  std::vector<uint32_t> row_plus_one(capacity, 0);  // 0: empty slot
  for (size_t i = 0; i < t.size(); ++i) {
    const uint64_t key = packed_key(t, i);
    size_t slot = (key * 0x9E3779B97F4A7C15ull) >> (64 - bits);  // Fibonacci hashing: the top bits
    for (; row_plus_one[slot] != 0; slot = (slot + 1) & (capacity - 1)) {
      if (keys[slot] == key) return duplicate_finding(t, i, row_plus_one[slot] - 1);
    }
    keys[slot] = key;
    row_plus_one[slot] = static_cast<uint32_t>(i + 1);
  }
  return std::nullopt;
}

std::optional<Finding> first_duplicate(const TraceTable& t) {
  if (packable(t)) return first_duplicate_packed(t);
  // Anything larger: sort the general keys.
  using Wide = std::tuple<int32_t, int64_t, uint8_t, int32_t>;
  std::vector<std::pair<Wide, uint32_t>> keys(t.size());
  for (size_t i = 0; i < t.size(); ++i) {
    keys[i] = {Wide{t.rank[i], t.step[i], static_cast<uint8_t>(t.optype[i]), t.seq_id[i]}, static_cast<uint32_t>(i)};
  }
  return first_duplicate_by_sort(t, keys);
}

// Rows are scanned in file order, so the first contradiction found is the earliest one.
std::optional<Finding> first_misplaced_rank(const TraceTable& t, const JobMeta& meta) {
  constexpr size_t kUnseen = std::numeric_limits<size_t>::max();
  std::vector<size_t> first_row(static_cast<size_t>(meta.world_size), kUnseen);
  for (size_t i = 0; i < t.size(); ++i) {
    size_t& first = first_row[static_cast<size_t>(t.rank[i])];
    if (first == kUnseen) {
      first = i;
      continue;
    }
    if (t.dp_rank[i] == t.dp_rank[first] && t.stage[i] == t.stage[first]) continue;
    const std::string where = " on line " + std::to_string(line_of_row(first));
    if (t.dp_rank[i] != t.dp_rank[first]) {
      return Finding{i, "dp_rank",
                     "rank " + std::to_string(t.rank[i]) + " has dp_rank " + std::to_string(t.dp_rank[i]) +
                         " here but dp_rank " + std::to_string(t.dp_rank[first]) + where};
    }
    return Finding{i, "stage",
                   "rank " + std::to_string(t.rank[i]) + " has stage " + std::to_string(t.stage[i]) +
                       " here but stage " + std::to_string(t.stage[first]) + where};
  }
  return std::nullopt;
}

}  // namespace

void check_cross_row(const TraceTable& t, const JobMeta& meta, const std::string& file_label) {
  std::optional<Finding> dup = first_duplicate(t);
  std::optional<Finding> misplaced = first_misplaced_rank(t, meta);
  const Finding* first = nullptr;
  if (dup) first = &*dup;
  if (misplaced && (!first || misplaced->row < first->row)) first = &*misplaced;
  if (first) throw TraceError(file_label, line_of_row(first->row), first->column, first->message);
}

}  // namespace sp::whatif::detail
