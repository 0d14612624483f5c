#include "step_model_builder.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <map>
#include <string_view>
#include <unordered_map>

#include "comm_groups.h"
#include "model_input.h"
#include "rank_chain.h"
#include "source_selection.h"

namespace sp::online {
namespace {

int64_t adjusted(uint64_t t_ns, int64_t offset_ns) { return static_cast<int64_t>(t_ns) + offset_ns; }

// A rank's timestamp in seconds since the model's time zero, on rank 0's clock.
double since_t0(const StepModel& m, uint64_t t_ns, int64_t offset_ns) {
  return static_cast<double>(adjusted(t_ns, offset_ns) - static_cast<int64_t>(m.t0_ns)) * 1e-9;
}

// Index of s in table, appended at its first appearance (so indices follow the order ops are
// read in, whatever the index's own order). Looks up without copying s.
int intern(std::vector<std::string>* table, std::unordered_map<std::string, int>* index,
           const std::string& s) {
  const auto found = index->find(s);
  if (found != index->end()) return found->second;
  const int id = static_cast<int>(table->size());
  index->emplace(s, id);
  table->push_back(s);
  return id;
}

using Summaries = std::vector<const runtime::StepSummary*>;

// Time zero: the earliest step start (or first op) over all ranks, on rank 0's clock.
bool find_time_zero(StepModel* m, const Summaries& by_rank, const SourceSelection& selected,
                    std::string* error) {
  int64_t t0 = std::numeric_limits<int64_t>::max();
  int64_t t_end = std::numeric_limits<int64_t>::min();
  for (size_t r = 0; r < by_rank.size(); ++r) {
    const runtime::StepSummary* s = by_rank[r];
    if (s->step_start_ns > 0) t0 = std::min(t0, adjusted(s->step_start_ns, s->clock_offset_ns));
    for (size_t i = 0; i < s->ops.size(); ++i) {
      const sp_event& ev = s->ops[i];
      if (op_role(ev.kind) == OpRole::kIgnored || !selected.keep[r][i]) continue;
      t0 = std::min(t0, adjusted(ev.start_ns, s->clock_offset_ns));
      t_end = std::max(t_end, adjusted(ev.end_ns, s->clock_offset_ns));
    }
    if (s->step_end_ns > 0) t_end = std::max(t_end, adjusted(s->step_end_ns, s->clock_offset_ns));
  }
  if (t_end == std::numeric_limits<int64_t>::min() || t0 == std::numeric_limits<int64_t>::max()) {
    *error = "no rank recorded any op";
    return false;
  }
  m->t0_ns = static_cast<uint64_t>(t0);
  return true;
}

// The logical ops of every rank, with their type and comparison keys, split into compute ops and
// communication (with the stream each runs on).
struct RankOps {
  std::vector<std::vector<int>> compute;        // per rank: logical indices
  std::vector<std::vector<CommStreamOp>> comm;  // per rank
  std::vector<CommRecord> records;              // every comm op, for matching across ranks
};

class OpReader {
 public:
  OpReader(StepModel* m, const Summaries& by_rank) : m_(*m), by_rank_(by_rank) {}

  RankOps read(const SourceSelection& selected) {
    RankOps out;
    out.compute.resize(static_cast<size_t>(m_.world));
    out.comm.resize(static_cast<size_t>(m_.world));
    size_t total = 0;
    for (const runtime::StepSummary* s : by_rank_) total += s->ops.size();
    m_.ops.reserve(total);
    out.records.reserve(total);
    std::vector<size_t> order;
    for (int r = 0; r < m_.world; ++r) {
      const runtime::StepSummary& s = *by_rank_[r];
      start_rank();
      out.compute[r].reserve(s.ops.size());
      out.comm[r].reserve(s.ops.size());
      order.resize(s.ops.size());
      for (size_t i = 0; i < order.size(); ++i) order[i] = i;
      const auto by_start = [&s](size_t a, size_t b) { return s.ops[a].start_ns < s.ops[b].start_ns; };
      // Where a rank's ops already come in start order (the synthetic jobs' do) the stable sort
      // would leave them as they are: one pass to check instead (~11 M instructions a step at
      // 4096 ranks dp x pp).
      if (!std::is_sorted(order.begin(), order.end(), by_start)) std::stable_sort(order.begin(), order.end(), by_start);
      for (size_t i : order) {
        if (!selected.keep[r][i]) continue;
        const sp_event& ev = s.ops[i];
        const OpRole role = op_role(ev.kind);
        if (role == OpRole::kIgnored) {
          ++m_.ignored;
          continue;
        }
        const int logical = add_op(r, ev);
        if (role == OpRole::kCompute) {
          out.compute[r].push_back(logical);
        } else {
          const uint64_t stream =
              ev.kind == SP_OP_COLLECTIVE
                  ? ev.group_id
                  : (uint64_t{1} << 63) | (uint64_t{ev.kind} << 32) | static_cast<uint32_t>(ev.peer);
          out.comm[r].push_back({logical, stream});
          out.records.push_back({logical, &ev});
        }
      }
      read_costs(r, s);
    }
    return out;
  }

 private:
  // The ordinals count per rank: an op's place among the rank's ops of its type / key.
  void start_rank() {
    type_count_.assign(m_.type_names.size(), 0);
    for (size_t i : pieces_touched_) piece_table_[i] = 0;
    pieces_touched_.clear();
    piece_count_.clear();
    for (int k : keys_counted_) key_count_[static_cast<size_t>(k)] = 0;
    keys_counted_.clear();
  }

  // The op's type (an index into m_.type_names), op_type_name's string computed once per
  // distinct (kind, collective, p2p direction): all that op_type_name reads of an op.
  int type_of(const sp_event& ev, int my_stage, int peer_stage) {
    int direction = 0;
    if ((ev.kind == SP_OP_SEND || ev.kind == SP_OP_RECV) && my_stage >= 0 && peer_stage >= 0 &&
        my_stage != peer_stage) {
      direction = peer_stage > my_stage ? 1 : 2;
    }
    const TypeCode code{ev.kind, ev.kind == SP_OP_COLLECTIVE ? ev.coll : 0u, direction};
    const auto found = std::find_if(type_of_code_.begin(), type_of_code_.end(),
                                    [&code](const std::pair<TypeCode, int>& e) { return e.first == code; });
    if (found != type_of_code_.end()) return found->second;
    const int type = intern(&m_.type_names, &type_index_, op_type_name(ev, my_stage, peer_stage));
    type_of_code_.emplace_back(code, type);
    if (type_count_.size() < m_.type_names.size()) type_count_.resize(m_.type_names.size(), 0);
    return type;
  }

  int add_op(int r, const sp_event& ev) {
    const runtime::StepSummary& s = *by_rank_[r];
    const int peer_stage =
        (ev.kind == SP_OP_SEND || ev.kind == SP_OP_RECV) && by_rank_[ev.peer]->pp_stage >= 0
            ? by_rank_[ev.peer]->pp_stage
            : -1;
    const int type = type_of(ev, s.pp_stage, peer_stage);
    const std::string_view name =
        ev.name_id ? std::string_view(s.names[ev.name_id]) : std::string_view();
    // The op's index among the rank's ops of its type and micro-batch (a cut forward's pieces).
    const int piece = next_piece(type, ev.microbatch);
    const int ordinal = type_count_[static_cast<size_t>(type)]++;
    LogicalOp op;
    op.rank = r;
    op.kind = ev.kind;
    op.type = type;
    op.key = key_of(ev, type, name, ordinal, m_.rank_stage[r], piece);
    op.delay_key = delay_key(op.key);
    op.rule = ideal_rule(ev.kind);
    op.microbatch = ev.microbatch;
    op.start = since_t0(m_, ev.start_ns, s.clock_offset_ns);
    op.end = since_t0(m_, ev.end_ns, s.clock_offset_ns);
    m_.ops.push_back(op);
    return static_cast<int>(m_.ops.size()) - 1;
  }

  // The op's ideal key (an index into m_.ideal_keys). The key's text is a function of what
  // KeyCode holds (ideal_key_into reads nothing else of a non-region op): looked up by the code,
  // the text is written and interned only at a code's first appearance, so the indices are the
  // ones interning every op's text gives (~213 k texts built and hashed a step at 4096 ranks).
  // Named user regions keep the text lookup (their name is part of the key).
  int key_of(const sp_event& ev, int type, std::string_view name, int ordinal, int stage, int piece) {
    const bool named_region = ev.kind == SP_OP_OTHER && !name.empty();
    const std::string_view type_name = m_.type_names[static_cast<size_t>(type)];
    if (named_region) {
      ideal_key_into(&key_, ev, type_name, name, ordinal, stage, piece);
      return intern(&m_.ideal_keys, &key_index_, key_);
    }
    const KeyCode code = key_code(ev, type, ordinal, stage, piece);
    const auto found = key_of_code_.find(code);
    if (found != key_of_code_.end()) return found->second;
    ideal_key_into(&key_, ev, type_name, name, ordinal, stage, piece);
    const int key = intern(&m_.ideal_keys, &key_index_, key_);
    key_of_code_.emplace(code, key);
    return key;
  }

  // What ideal_key_into's text depends on for an op that is no named region; the inputs it
  // ignores for the op's kind are left zero, so that ops with one text share one code.
  struct KeyCode {
    uint32_t kind = 0;
    int type = 0;
    int stage = 0, ordinal = 0, piece = 0;
    uint64_t bytes = 0;
    bool operator==(const KeyCode&) const = default;
  };
  struct KeyCodeHash {
    size_t operator()(const KeyCode& c) const {
      uint64_t h = (uint64_t{c.kind} << 56) ^ (uint64_t{static_cast<uint32_t>(c.type)} << 40) ^
                   (uint64_t{static_cast<uint32_t>(c.stage)} << 24) ^ static_cast<uint32_t>(c.ordinal) ^
                   (uint64_t{static_cast<uint32_t>(c.piece)} << 48);
      h ^= c.bytes * 0x9E3779B97F4A7C15ull;
      return static_cast<size_t>(h ^ (h >> 29));
    }
  };
  static KeyCode key_code(const sp_event& ev, int type, int ordinal, int stage, int piece) {
    KeyCode c;
    c.kind = ev.kind;
    c.type = type;
    const OpRole role = op_role(ev.kind);
    if (role == OpRole::kCompute) {
      c.piece = piece;
    } else if (ev.kind == SP_OP_SEND || ev.kind == SP_OP_RECV) {
      c.stage = stage;
      c.ordinal = ordinal;
      c.bytes = ev.bytes;
    } else if (role == OpRole::kComm) {
      if (ev.bytes > 0) {
        c.bytes = ev.bytes;
      } else {
        c.ordinal = ordinal;
      }
    }
    return c;
  }

  // This rank's count so far of ops of one (type, micro-batch), then one more. A rank has a few
  // dozen such pairs: counted in a table indexed by the pair (reset where the rank touched it),
  // not a hash map cleared per rank (a node per pair and rank, ~200k a step at 4096 ranks) nor
  // a list searched per op (~25 M instructions a step); pairs beyond the table, in the map.
  int next_piece(int type, int microbatch) {
    if (type < kPieceTypes && microbatch >= -1 && microbatch < kPieceMicrobatches - 1) {
      const size_t i = static_cast<size_t>(type) * kPieceMicrobatches + static_cast<size_t>(microbatch + 1);
      if (piece_table_[i] == 0) pieces_touched_.push_back(i);
      return piece_table_[i]++;
    }
    const uint64_t code = (static_cast<uint64_t>(static_cast<uint32_t>(type)) << 32) | static_cast<uint32_t>(microbatch);
    return piece_count_[code]++;
  }

  // "key@ordinal", the ordinal-th op of this key on the rank. Looked up by (key, ordinal):
  // the text is unique to the pair (the ordinal after the last '@'), so the indices are the
  // ones interning the text would give.
  int delay_key(int key) {
    if (static_cast<size_t>(key) >= key_count_.size()) key_count_.resize(static_cast<size_t>(key) + 1, 0);
    const int ordinal = key_count_[static_cast<size_t>(key)]++;
    if (ordinal == 0) keys_counted_.push_back(key);
    const uint64_t code = (uint64_t{static_cast<uint32_t>(key)} << 32) | static_cast<uint32_t>(ordinal);
    // find first: emplace would allocate a node for every op and free it for the seen ones.
    const auto found = delay_index_.find(code);
    if (found != delay_index_.end()) return found->second;
    const int id = static_cast<int>(m_.delay_keys.size());
    delay_index_.emplace(code, id);
    m_.delay_keys.push_back(m_.ideal_keys[static_cast<size_t>(key)] + "@" + std::to_string(ordinal));
    return id;
  }

// Sequence-length annotations: the cost of each micro-batch (seq_evidence.h).
  void read_costs(int r, const runtime::StepSummary& s) {
    for (const runtime::Annotation& a : s.annotations) {
      if (a.key != "seq_lens" && a.key != "seq_len") continue;
      MicrobatchCost c{r, a.microbatch, 0, 0};
      if (parse_seq_lens(a.value, &c.sum_len, &c.sum_len_sq)) {
        m_.costs.push_back(c);
      } else {
        m_.notes.push_back("rank " + std::to_string(r) + ": annotation " + a.key + "=\"" + a.value +
                           "\" is not a list of lengths; ignored");
      }
    }
  }

  struct TypeCode {
    uint32_t kind, coll;
    int direction;
    bool operator==(const TypeCode&) const = default;
  };

  StepModel& m_;
  const Summaries& by_rank_;
  std::unordered_map<std::string, int> type_index_, key_index_;
  std::unordered_map<KeyCode, int, KeyCodeHash> key_of_code_;  // ideal key by code (key_of)
  // (code, type) per distinct code: a few (kinds x collectives x directions), searched in order
  // (a std::map's walk cost more).
  std::vector<std::pair<TypeCode, int>> type_of_code_;
  std::unordered_map<uint64_t, int> delay_index_;  // (key, ordinal) -> delay key
  std::vector<int> type_count_, key_count_;        // this rank's ops so far per type / key
  std::vector<int> keys_counted_;                  // keys with a non-zero count on this rank
  // This rank's ops so far per (type, micro-batch): types below kPieceTypes and micro-batches
  // -1 .. kPieceMicrobatches - 2 in the table, the others in the map.
  static constexpr int kPieceTypes = 64, kPieceMicrobatches = 130;
  std::vector<int> piece_table_ = std::vector<int>(static_cast<size_t>(kPieceTypes) * kPieceMicrobatches, 0);
  std::vector<size_t> pieces_touched_;
  std::unordered_map<uint64_t, int> piece_count_;
  std::string key_;                                // the op's ideal key, its buffer reused
};

// Each rank's chain between its step start and its step mark; the step time is the longest
// rank's (step mark - step start).
void build_chains(StepModel* m, const Summaries& by_rank, const RankOps& ops, double eps) {
  // Nodes: about one per op, plus each rank's start and mark (compute ops cut at launches and
  // nested ops add a few); reserved so that the nodes are not moved as they are added.
  m->nodes.reserve(m->ops.size() + m->ops.size() / 4 + 2 * static_cast<size_t>(m->world));
  m->markers.assign(m->world, -1);
  m->starts.assign(m->world, -1);
  m->marker_delay_key = static_cast<int>(m->delay_keys.size());
  m->delay_keys.push_back("step-end");  // the ops' delay keys all end in "@ordinal": no clash
  RankChainScratch scratch;
  for (int r = 0; r < m->world; ++r) {
    const runtime::StepSummary& s = *by_rank[r];
    const double step_end = s.step_end_ns > 0 ? since_t0(*m, s.step_end_ns, s.clock_offset_ns) : -1.0;
    // A rank's step starts at its previous step mark, or at its first op if that is earlier
    // or the mark is unknown.
    double step_start = std::numeric_limits<double>::infinity();
    if (s.step_start_ns > 0) step_start = since_t0(*m, s.step_start_ns, s.clock_offset_ns);
    for (int op : ops.compute[r]) step_start = std::min(step_start, m->ops[op].start);
    for (const CommStreamOp& c : ops.comm[r]) step_start = std::min(step_start, m->ops[c.logical].start);
    if (!std::isfinite(step_start)) step_start = 0;
    build_rank_chain(m, &scratch, r, ops.compute[r], ops.comm[r], step_start, step_end, eps);
  }
  m->time_s = 0;
  for (int r = 0; r < m->world; ++r) {
    m->time_s = std::max(m->time_s, m->nodes[m->markers[r]].end - m->nodes[m->starts[r]].start);
  }
}

// Launch delay: how long after its dependencies ended each node actually started.
void set_launch_delays(StepModel* m, double eps) {
  for (Node& n : m->nodes) {
    double ready = 0;
    for (int d : n.deps) ready = std::max(ready, m->nodes[d].end);
    double delay = n.start - ready;
    if (delay < 0) {
      if (delay < -eps) ++m->clamped;
      delay = 0;
    }
    n.launch_delay = delay;
  }
}

}  // namespace

std::optional<StepModel> build_step_model(const Summaries& by_rank, const ModelOptions& options,
                                          std::string* error) {
  if (!check_summaries(by_rank, error)) return std::nullopt;
  StepModel m;
  m.world = static_cast<int>(by_rank.size());
  m.step = by_rank[0]->step;
  m.rank_cpu_s.reserve(by_rank.size());
  for (const auto* s : by_rank) {
    // A rank's CPU time is its work only where its work is timed on the CPU: a device's kernels
    // are not in it, and a thread waiting for a device may spin.
    const bool on_cpu = std::all_of(s->ops.begin(), s->ops.end(),
                                    [](const runtime::OpRecord& op) { return op.time_source == SP_TIME_CPU; });
    m.rank_cpu_s.push_back(on_cpu ? static_cast<double>(s->step_cpu_ns) * 1e-9 : 0.0);
  }
  const SourceSelection selected = select_sources(by_rank);
  m.superseded = selected.superseded;
  m.kept_alone = selected.kept_alone;
  m.superseded_by = selected.superseded_by;
  if (!read_layout(&m, by_rank, error) || !find_time_zero(&m, by_rank, selected, error)) {
    return std::nullopt;
  }
  const RankOps ops = OpReader(&m, by_rank).read(selected);
  build_chains(&m, by_rank, ops, options.eps_s);
  if (!match_comm_groups(&m, ops.records, options.eps_s, error)) return std::nullopt;
  set_launch_delays(&m, options.eps_s);
  return m;
}

}  // namespace sp::online
