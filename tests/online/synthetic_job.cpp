#include "synthetic_job.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>

namespace sp::online::testing {
namespace {

constexpr uint64_t kBaseNs = 1'000'000'000'000ULL;  // times start at 1000 s (0 means unknown)

uint64_t ns(double t) { return kBaseNs + static_cast<uint64_t>(std::llround(t * 1e9)); }

sp_event event(uint32_t kind, double start, double end, int mb) {
  sp_event e{};
  e.start_ns = ns(start);
  e.end_ns = ns(end);
  e.kind = kind;
  e.microbatch = mb;
  e.peer = -1;
  return e;
}

struct Instr {
  enum Type { kHost, kSend, kRecv, kWaitSends } type = kHost;
  uint32_t kind = SP_OP_FORWARD;
  int mb = -1;
  double dur = 0;
  double gc_pause = 0;
  int peer = -1;
  bool ddp = false;  // launch the bucket all-reduces inside this op and wait for them at its end
  bool async = false;  // a send posted without waiting for the receiver
};

struct Collective {
  std::vector<std::optional<double>> start;  // per dp member
  std::vector<int> ranks;
  int registered = 0;
  double end = -1;
};

struct Lens {
  double factor = 1;
  std::string text;
};

// (is forward, micro-batch) in the order the stage runs them.
std::vector<std::pair<bool, int>> stage_order(const SyntheticJob& job, int stage) {
  std::vector<std::pair<bool, int>> order;
  const int mb = job.microbatches;
  if (job.schedule == Schedule::kGPipe) {
    for (int i = 0; i < mb; ++i) order.emplace_back(true, i);
    for (int i = 0; i < mb; ++i) order.emplace_back(false, i);
    return order;
  }
  const int warmup = std::min(job.pp - stage - 1, mb);
  for (int i = 0; i < warmup; ++i) order.emplace_back(true, i);
  for (int i = 0; i < mb - warmup; ++i) {
    order.emplace_back(true, warmup + i);
    order.emplace_back(false, i);
  }
  for (int i = mb - warmup; i < mb; ++i) order.emplace_back(false, i);
  return order;
}

// The random parts of one rank's step, drawn in a fixed order (lengths, then forwards, then
// backwards), so that a job's draws do not depend on its schedule.
struct RankDraws {
  std::vector<double> forward, backward;
};

class Generator {
 public:
  explicit Generator(const SyntheticJob& job) : job_(job), rng_(job.seed) {}

  // The programs of every rank for one step, and their summaries' static parts.
  std::vector<std::vector<Instr>> programs(int step, const std::vector<double>& t,
                                           std::vector<runtime::StepSummary>* out);

 private:
  double speed(int rank, int step) const;
  double jittered(double d) {
    return job_.jitter > 0 ? d * std::max(0.5, 1.0 + job_.jitter * noise_(rng_)) : d;
  }
  Lens draw_lens();

  const SyntheticJob& job_;
  std::mt19937 rng_;
  std::normal_distribution<double> noise_{0.0, 1.0};
  std::uniform_real_distribution<double> unit_{1e-6, 1.0};
};

double Generator::speed(int rank, int step) const {
  const double r = rank < static_cast<int>(job_.rank_speed.size()) ? job_.rank_speed[rank] : 1.0;
  const int stage = rank / job_.dp;
  double s = r * (stage < static_cast<int>(job_.stage_speed.size()) ? job_.stage_speed[stage] : 1.0);
  for (const auto& [ss, mult] : job_.step_speed) {
    if (ss == step) s *= mult;
  }
  return s;
}

// Long-tailed lengths (Pareto, alpha 1.2, 128..2048); cost = sum(len) + sum(len^2)/1024,
// normalised so that a micro-batch of 256-token sequences costs 1.
Lens Generator::draw_lens() {
  Lens l;
  double cost = 0;
  for (int i = 0; i < job_.seqs_per_microbatch; ++i) {
    const double len = std::min(2048.0, std::floor(128.0 / std::pow(unit_(rng_), 1.0 / 1.2)));
    cost += len + len * len / 1024.0;
    if (i) l.text += ',';
    l.text += std::to_string(static_cast<int>(len));
  }
  l.factor = cost / (job_.seqs_per_microbatch * 320.0);
  return l;
}

std::vector<std::vector<Instr>> Generator::programs(int step, const std::vector<double>& t,
                                                    std::vector<runtime::StepSummary>* out) {
  const int world = job_.dp * job_.pp;
  const int mb_count = job_.microbatches;
  const bool one_f_one_b = job_.schedule == Schedule::kOneFOneB;
  std::vector<std::vector<Instr>> prog(static_cast<size_t>(world));
  for (int r = 0; r < world; ++r) {
    runtime::StepSummary& s = (*out)[static_cast<size_t>(r)];
    s.rank = r;
    s.world_size = world;
    s.dp_rank = r % job_.dp;
    s.pp_stage = job_.pp > 1 ? r / job_.dp : -1;
    s.step = step;
    s.step_start_ns = ns(t[static_cast<size_t>(r)]);
    s.names = {""};
    const int stage = r / job_.dp;
    const double sp = speed(r, step);
    std::vector<double> factor(static_cast<size_t>(mb_count), 1.0);
    for (int mb = 0; mb < mb_count && job_.seq_lens; ++mb) {
      const Lens l = draw_lens();
      factor[static_cast<size_t>(mb)] = l.factor;
      if (job_.annotate) s.annotations.push_back({mb, "seq_lens", l.text});
    }
    RankDraws d;
    for (int mb = 0; mb < mb_count; ++mb) d.forward.push_back(jittered(job_.forward_s * sp * factor[static_cast<size_t>(mb)]));
    for (int mb = 0; mb < mb_count; ++mb) d.backward.push_back(jittered(job_.backward_s * sp * factor[static_cast<size_t>(mb)]));
    double gc_pause = 0;
    for (const auto& [gs, gr, pause] : job_.gc) {
      if (gs == step && gr == r) gc_pause += pause;
    }
    std::vector<Instr>& p = prog[static_cast<size_t>(r)];
    p.push_back({Instr::kHost, SP_OP_DATA_WAIT, -1, job_.data_wait_s, 0, -1, false, false});
    const int up = r - job_.dp, down = r + job_.dp;  // previous and next stage
    for (const auto& [forward, mb] : stage_order(job_, stage)) {
      const bool has_before = forward ? stage > 0 : stage < job_.pp - 1;
      const bool has_after = forward ? stage < job_.pp - 1 : stage > 0;
      if (has_before) p.push_back({Instr::kRecv, SP_OP_RECV, mb, 0, 0, forward ? up : down, false, false});
      const size_t i = static_cast<size_t>(mb);
      p.push_back({Instr::kHost, forward ? SP_OP_FORWARD : SP_OP_BACKWARD, mb,
                   forward ? d.forward[i] : d.backward[i], forward && mb == 0 ? gc_pause : 0.0, -1,
                   !forward && job_.dp > 1 && mb == mb_count - 1, false});
      if (has_after) p.push_back({Instr::kSend, SP_OP_SEND, mb, 0, 0, forward ? down : up, false, one_f_one_b});
    }
    if (one_f_one_b) p.push_back({Instr::kWaitSends, SP_OP_OTHER, -1, 0, 0, -1, false, false});
    p.push_back({Instr::kHost, SP_OP_OPTIMIZER, -1, job_.optimizer_s, 0, -1, false, false});
  }
  return prog;
}

using P2pSlot = std::pair<std::optional<double>, std::optional<double>>;  // send, recv posted

// Runs one step's programs: each rank runs until it blocks on a peer, until every program is
// done. Collects each rank's ops into its summary.
class Execution {
 public:
  Execution(const SyntheticJob& job, std::vector<std::vector<Instr>> prog, std::vector<double>* t,
            std::vector<runtime::StepSummary>* out);
  void run();
  void emit_collectives(uint64_t seq);

 private:
  bool host(int r, const Instr& in);
  bool p2p(int r, const Instr& in);
  bool wait_sends(int r);

  const SyntheticJob& job_;
  std::vector<std::vector<Instr>> prog_;
  std::vector<double>& t_;
  std::vector<runtime::StepSummary>& out_;
  std::map<std::pair<int, int>, Collective> colls_;  // (stage, bucket) -> all-reduce
  std::map<std::tuple<int, int, int>, P2pSlot> p2p_;  // (from, to, index)
  std::map<std::pair<int, int>, int> sent_, received_;  // (from, to) -> count so far
  std::vector<size_t> pc_;
  std::vector<int> phase_, p2p_index_;
  std::vector<double> cur_start_, cur_compute_end_;
  std::vector<std::vector<std::pair<std::tuple<int, int, int>, int>>> pending_sends_;  // key, mb
};

Execution::Execution(const SyntheticJob& job, std::vector<std::vector<Instr>> prog,
                     std::vector<double>* t, std::vector<runtime::StepSummary>* out)
    : job_(job), prog_(std::move(prog)), t_(*t), out_(*out) {
  const size_t world = prog_.size();
  pc_.assign(world, 0);
  phase_.assign(world, 0);
  p2p_index_.assign(world, -1);
  cur_start_.assign(world, 0);
  cur_compute_end_.assign(world, 0);
  pending_sends_.resize(world);
  for (int stage = 0; stage < job.pp; ++stage) {
    for (int b = 0; b < job.buckets; ++b) {
      Collective& c = colls_[{stage, b}];
      c.start.assign(static_cast<size_t>(job.dp), std::nullopt);
      for (int d = 0; d < job.dp; ++d) c.ranks.push_back(stage * job.dp + d);
    }
  }
}

void Execution::run() {
  const int world = static_cast<int>(prog_.size());
  int done = 0;
  while (done < world) {
    bool progress = false;
    for (int r = 0; r < world; ++r) {
      const size_t ri = static_cast<size_t>(r);
      while (pc_[ri] < prog_[ri].size()) {
        const Instr& in = prog_[ri][pc_[ri]];
        const bool ran = in.type == Instr::kHost        ? host(r, in)
                         : in.type == Instr::kWaitSends ? wait_sends(r)
                                                        : p2p(r, in);
        if (!ran) break;
        phase_[ri] = 0;
        ++pc_[ri];
        progress = true;
        if (pc_[ri] == prog_[ri].size()) ++done;
      }
    }
    if (!progress && done < world) throw std::logic_error("synthetic job deadlocked");
  }
}

bool Execution::host(int r, const Instr& in) {
  const size_t ri = static_cast<size_t>(r);
  const int stage = r / job_.dp;
  if (phase_[ri] == 0) {
    cur_start_[ri] = t_[ri] + job_.gap_s;
    cur_compute_end_[ri] = cur_start_[ri] + in.dur + in.gc_pause;
    if (in.gc_pause > 0) {
      const double g = cur_start_[ri] + 0.3 * in.dur;
      out_[ri].ops.push_back(event(SP_OP_GC, g, g + in.gc_pause, -1));
    }
    for (int b = 0; in.ddp && b < job_.buckets; ++b) {
      Collective& c = colls_[{stage, b}];
      c.start[static_cast<size_t>(r % job_.dp)] = cur_start_[ri] + (in.dur + in.gc_pause) * (b + 1) / job_.buckets;
      if (++c.registered == job_.dp) {
        double latest = 0;
        for (const auto& st : c.start) latest = std::max(latest, *st);
        c.end = latest + job_.allreduce_s;
      }
    }
    phase_[ri] = 1;
  }
  double end = cur_compute_end_[ri];
  if (in.ddp) {
    double last = 0;
    for (int b = 0; b < job_.buckets; ++b) {
      const Collective& c = colls_[{stage, b}];
      if (c.end < 0) return false;
      last = std::max(last, c.end);
    }
    end = std::max(end, last) + job_.finalize_s;
  }
  out_[ri].ops.push_back(event(in.kind, cur_start_[ri], end, in.mb));
  t_[ri] = end;
  return true;
}

sp_event p2p_event(const Instr& in, const P2pSlot& slot, double p2p_s) {
  const bool send = in.type == Instr::kSend;
  sp_event e = event(in.kind, *(send ? slot.first : slot.second),
                     std::max(*slot.first, *slot.second) + p2p_s, in.mb);
  e.peer = in.peer;
  e.coll = send ? SP_COLL_SEND : SP_COLL_RECV;
  e.bytes = 1 << 20;
  return e;
}

bool Execution::p2p(int r, const Instr& in) {
  const size_t ri = static_cast<size_t>(r);
  const bool send = in.type == Instr::kSend;
  const std::pair<int, int> chan = send ? std::make_pair(r, in.peer) : std::make_pair(in.peer, r);
  if (p2p_index_[ri] < 0) {
    p2p_index_[ri] = send ? sent_[chan]++ : received_[chan]++;
    auto& slot = p2p_[{chan.first, chan.second, p2p_index_[ri]}];
    (send ? slot.first : slot.second) = t_[ri] + job_.gap_s;
  }
  const std::tuple<int, int, int> key{chan.first, chan.second, p2p_index_[ri]};
  const P2pSlot& slot = p2p_[key];
  if (in.async) {  // posted: the rank goes on; its op is recorded once the receiver is there
    pending_sends_[ri].emplace_back(key, in.mb);
    t_[ri] = *slot.first;
    p2p_index_[ri] = -1;
    return true;
  }
  if (!slot.first || !slot.second) return false;
  const sp_event e = p2p_event(in, slot, job_.p2p_s);
  out_[ri].ops.push_back(e);
  t_[ri] = std::max(*slot.first, *slot.second) + job_.p2p_s;
  p2p_index_[ri] = -1;
  return true;
}

bool Execution::wait_sends(int r) {
  const size_t ri = static_cast<size_t>(r);
  for (const auto& [key, mb] : pending_sends_[ri]) {
    if (!p2p_[key].second) return false;
  }
  for (const auto& [key, mb] : pending_sends_[ri]) {
    Instr send{Instr::kSend, SP_OP_SEND, mb, 0, 0, std::get<1>(key), false, true};
    const P2pSlot& slot = p2p_[key];
    out_[ri].ops.push_back(p2p_event(send, slot, job_.p2p_s));
    t_[ri] = std::max(t_[ri], std::max(*slot.first, *slot.second) + job_.p2p_s);
  }
  pending_sends_[ri].clear();
  return true;
}

// The bucket all-reduces, now that their ends are known.
void Execution::emit_collectives(uint64_t seq) {
  for (const auto& [key, c] : colls_) {
    if (c.registered != job_.dp) continue;
    for (int d = 0; d < job_.dp; ++d) {
      sp_event e = event(SP_OP_COLLECTIVE, *c.start[static_cast<size_t>(d)], c.end, -1);
      e.coll = SP_COLL_ALL_REDUCE;
      e.group_id = 0x1000 + static_cast<uint64_t>(key.first);
      e.seq = seq + static_cast<uint64_t>(key.second);
      e.group_size = job_.dp;
      e.bytes = static_cast<uint64_t>(key.second + 1) * 1000;
      out_[static_cast<size_t>(c.ranks[static_cast<size_t>(d)])].ops.push_back(e);
    }
  }
}

}  // namespace

double mean(const std::vector<double>& v, size_t from) {
  double s = 0;
  size_t n = 0;
  for (size_t i = from; i < v.size(); ++i, ++n) s += v[i];
  return n ? s / static_cast<double>(n) : 0.0;
}

SyntheticRun run_synthetic(const SyntheticJob& job, int num_steps) {
  const int world = job.dp * job.pp;
  Generator gen(job);
  SyntheticRun run;
  std::vector<double> t(static_cast<size_t>(world), 0.0);
  uint64_t seq = 0;
  for (int step = 0; step < num_steps; ++step) {
    std::vector<runtime::StepSummary> out(static_cast<size_t>(world));
    Execution exec(job, gen.programs(step, t, &out), &t, &out);
    exec.run();
    exec.emit_collectives(seq);
    seq += static_cast<uint64_t>(job.buckets);
    double longest = 0;
    for (int r = 0; r < world; ++r) {
      runtime::StepSummary& s = out[static_cast<size_t>(r)];
      t[static_cast<size_t>(r)] += job.gap_s;  // the step mark comes a little after the optimizer
      s.step_end_ns = ns(t[static_cast<size_t>(r)]);
      longest = std::max(longest, static_cast<double>(s.step_end_ns - s.step_start_ns) * 1e-9);
      std::stable_sort(s.ops.begin(), s.ops.end(),
                       [](const sp_event& a, const sp_event& b) { return a.start_ns < b.start_ns; });
    }
    run.step_time_s.push_back(longest);
    run.steps.push_back(std::move(out));
  }
  return run;
}

}  // namespace sp::online::testing
