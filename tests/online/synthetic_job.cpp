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

// A duration through the job's duration hook, if it has one.
double hooked(const SyntheticJob& job, const DurationSite& site, double d) {
  return job.duration_hook ? job.duration_hook(site, d) : d;
}

// One p2p op of a batch: issued with the others, done when its peer has issued its side.
struct P2p {
  bool send = false;
  int peer = -1;
  int mb = -1;
};

struct Instr {
  enum Type { kCompute, kComm } type = kCompute;
  uint32_t kind = SP_OP_FORWARD;
  int mb = -1;
  double dur = 0;
  double gc_pause = 0;
  bool ddp = false;  // launch the bucket all-reduces inside this op and wait for them at its end
  std::vector<P2p> p2p;  // kComm: issued together, the rank waits for all of them
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

// The per-micro-batch pieces of one rank's program: compute, and its sends and receives to
// the neighbouring stages (global rank = stage * dp + dp rank).
struct StageProgram {
  const SyntheticJob& job;
  int rank = 0, stage = 0;
  std::vector<double> fwd, bwd;  // durations per micro-batch
  double gc_pause = 0;           // inside the first forward
  std::vector<Instr>* out = nullptr;

  bool first() const { return stage == 0; }
  bool last() const { return stage == job.pp - 1; }
  int prev() const { return rank - job.dp; }
  int next() const { return rank + job.dp; }
  void comm(std::vector<P2p> ops) const {
    if (!ops.empty()) out->push_back({Instr::kComm, 0, -1, 0, 0, false, std::move(ops)});
  }
  std::vector<P2p> recv_act(int mb) const { return first() ? std::vector<P2p>{} : std::vector<P2p>{{false, prev(), mb}}; }
  std::vector<P2p> send_act(int mb) const { return last() ? std::vector<P2p>{} : std::vector<P2p>{{true, next(), mb}}; }
  std::vector<P2p> recv_grad(int mb) const { return last() ? std::vector<P2p>{} : std::vector<P2p>{{false, next(), mb}}; }
  std::vector<P2p> send_grad(int mb) const { return first() ? std::vector<P2p>{} : std::vector<P2p>{{true, prev(), mb}}; }
  void forward(int mb) const {
    out->push_back({Instr::kCompute, SP_OP_FORWARD, mb, fwd[static_cast<size_t>(mb)],
                    mb == 0 ? gc_pause : 0.0, false, {}});
  }
  void backward(int mb) const {
    out->push_back({Instr::kCompute, SP_OP_BACKWARD, mb, bwd[static_cast<size_t>(mb)], 0,
                    job.dp > 1 && mb == job.microbatches - 1, {}});
  }
};

std::vector<P2p> both(std::vector<P2p> a, const std::vector<P2p>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// GPipe: every forward, then every backward, each transfer on its own.
void gpipe(const StageProgram& p) {
  for (int mb = 0; mb < p.job.microbatches; ++mb) {
    p.comm(p.recv_act(mb));
    p.forward(mb);
    p.comm(p.send_act(mb));
  }
  for (int mb = 0; mb < p.job.microbatches; ++mb) {
    p.comm(p.recv_grad(mb));
    p.backward(mb);
    p.comm(p.send_grad(mb));
  }
}

// 1F1B as torch.distributed.pipelining's Schedule1F1B runs it: pp - stage warm-up forwards, the
// last one's send batched with the first gradient's receive; then one backward, one forward,
// each gradient send batched with the next activation's receive; then the remaining backwards.
void one_f_one_b(const StageProgram& p) {
  const int m = p.job.microbatches;
  const int warmup = std::min(m, p.job.pp - p.stage);
  int fwd = 0;
  for (; fwd < warmup; ++fwd) {
    p.comm(p.recv_act(fwd));
    p.forward(fwd);
    if (fwd != warmup - 1) p.comm(p.send_act(fwd));
  }
  int bwd = 0;
  while (true) {
    p.comm(both(p.send_act(fwd - 1), p.recv_grad(bwd)));
    p.backward(bwd);
    if (fwd == m) break;
    p.comm(both(p.send_grad(bwd), p.recv_act(fwd)));
    p.forward(fwd);
    ++fwd;
    ++bwd;
  }
  p.comm(p.send_grad(bwd++));
  for (; bwd < m; ++bwd) {
    p.comm(p.recv_grad(bwd));
    p.backward(bwd);
    p.comm(p.send_grad(bwd));
  }
}

// Executes one step of every rank's program with blocking semantics: each rank runs until it
// waits for a peer; p2p ends at max(both sides' issue) + p2p_s, a bucket all-reduce at the
// latest launch + allreduce_s.
class StepExecutor {
 public:
  StepExecutor(const SyntheticJob& job, int64_t step, std::vector<std::vector<Instr>> prog,
               std::vector<runtime::StepSummary>* out, std::vector<double>* t)
      : job_(job), step_(step), prog_(std::move(prog)), out_(*out), t_(*t), world_(job.dp * job.pp) {
    pc_.assign(static_cast<size_t>(world_), 0);
    phase_.assign(static_cast<size_t>(world_), 0);
    cur_start_.assign(static_cast<size_t>(world_), 0);
    cur_end_.assign(static_cast<size_t>(world_), 0);
    issued_.resize(static_cast<size_t>(world_));
    for (int stage = 0; stage < job.pp; ++stage) {
      for (int b = 0; b < job.buckets; ++b) {
        Collective& c = colls_[{stage, b}];
        c.start.assign(static_cast<size_t>(job.dp), std::nullopt);
        for (int d = 0; d < job.dp; ++d) c.ranks.push_back(stage * job.dp + d);
      }
    }
  }

  void run(uint64_t seq) {
    int done = 0;
    while (done < world_) {
      bool progress = false;
      for (int r = 0; r < world_; ++r) {
        const size_t ri = static_cast<size_t>(r);
        while (pc_[ri] < prog_[ri].size()) {
          const Instr& in = prog_[ri][pc_[ri]];
          if (!(in.type == Instr::kCompute ? host(r, in) : comm(r, in))) break;
          phase_[ri] = 0;
          ++pc_[ri];
          progress = true;
          if (pc_[ri] == prog_[ri].size()) ++done;
        }
      }
      if (!progress && done < world_) throw std::logic_error("synthetic job deadlocked");
    }
    emit_collectives(seq);
  }

 private:
  // Returns false while the op waits for its buckets' all-reduces.
  bool host(int r, const Instr& in) {
    const size_t ri = static_cast<size_t>(r);
    const int stage = r / job_.dp;
    auto& ops = out_[ri].ops;
    if (phase_[ri] == 0) {
      cur_start_[ri] = t_[ri] + job_.gap_s;
      cur_end_[ri] = cur_start_[ri] + in.dur + in.gc_pause;
      if (in.gc_pause > 0) {
        const double g = cur_start_[ri] + 0.3 * in.dur;
        ops.push_back(event(SP_OP_GC, g, g + in.gc_pause, -1));
      }
      if (in.ddp) launch_buckets(r, stage, in.dur + in.gc_pause);
      phase_[ri] = 1;
    }
    double end = cur_end_[ri];
    if (in.ddp) {
      double last = 0;
      for (int b = 0; b < job_.buckets; ++b) {
        const Collective& c = colls_[{stage, b}];
        if (c.end < 0) return false;
        last = std::max(last, c.end);
      }
      end = std::max(end, last) + job_.finalize_s;
    }
    ops.push_back(event(in.kind, cur_start_[ri], end, in.mb));
    t_[ri] = end;
    return true;
  }

  void launch_buckets(int r, int stage, double dur) {
    for (int b = 0; b < job_.buckets; ++b) {
      Collective& c = colls_[{stage, b}];
      c.start[static_cast<size_t>(r % job_.dp)] = cur_start_[static_cast<size_t>(r)] + dur * (b + 1) / job_.buckets;
      if (++c.registered == job_.dp) {
        double latest = 0;
        for (const auto& st : c.start) latest = std::max(latest, *st);
        c.end = latest + hooked(job_, {SP_OP_COLLECTIVE, step_, stage * job_.dp, -1, b}, job_.allreduce_s);
      }
    }
  }

  // Returns false until every op of the batch has its peer's side.
  bool comm(int r, const Instr& in) {
    const size_t ri = static_cast<size_t>(r);
    std::vector<Key>& mine = issued_[ri];
    if (phase_[ri] == 0) {
      mine.clear();
      for (const P2p& op : in.p2p) {
        const std::pair<int, int> chan = op.send ? std::make_pair(r, op.peer) : std::make_pair(op.peer, r);
        const int index = (op.send ? sent_ : received_)[chan]++;
        Slot& slot = p2p_[{chan.first, chan.second, index}];
        (op.send ? slot.send : slot.recv) = t_[ri] + job_.gap_s;
        mine.push_back({chan.first, chan.second, index});
      }
      phase_[ri] = 1;
    }
    for (const Key& k : mine) {
      const Slot& slot = p2p_[k];
      if (!slot.send || !slot.recv) return false;
    }
    double end_all = t_[ri];
    for (size_t i = 0; i < mine.size(); ++i) {
      const P2p& op = in.p2p[i];
      const Slot& slot = p2p_[mine[i]];
      const auto& [from, to, index] = mine[i];
      const double end = std::max(*slot.send, *slot.recv) + hooked(job_, {SP_OP_SEND, step_, from, to, index}, job_.p2p_s);
      sp_event e = event(op.send ? SP_OP_SEND : SP_OP_RECV, *(op.send ? slot.send : slot.recv), end, op.mb);
      e.peer = op.peer;
      e.coll = op.send ? SP_COLL_SEND : SP_COLL_RECV;
      e.bytes = 1 << 20;
      out_[ri].ops.push_back(e);
      end_all = std::max(end_all, end);
    }
    t_[ri] = end_all;
    return true;
  }

  // The bucket all-reduces, now that their ends are known.
  void emit_collectives(uint64_t seq) {
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

  using Key = std::tuple<int, int, int>;  // (from, to, index)
  struct Slot {
    std::optional<double> send, recv;  // issue times
  };
  const SyntheticJob& job_;
  int64_t step_;
  std::vector<std::vector<Instr>> prog_;
  std::vector<runtime::StepSummary>& out_;
  std::vector<double>& t_;
  int world_;
  std::map<std::pair<int, int>, Collective> colls_;  // (stage, bucket) -> all-reduce
  std::map<Key, Slot> p2p_;
  std::map<std::pair<int, int>, int> sent_, received_;  // (from, to) -> count so far
  std::vector<size_t> pc_;
  std::vector<int> phase_;
  std::vector<double> cur_start_, cur_end_;
  std::vector<std::vector<Key>> issued_;  // per rank: the batch it waits for
};

}  // namespace

double mean(const std::vector<double>& v, size_t from) {
  double s = 0;
  size_t n = 0;
  for (size_t i = from; i < v.size(); ++i, ++n) s += v[i];
  return n ? s / static_cast<double>(n) : 0.0;
}

SyntheticRun run_synthetic(const SyntheticJob& job, int num_steps) {
  const int world = job.dp * job.pp;
  std::mt19937 rng(job.seed);
  std::normal_distribution<double> noise(0.0, 1.0);
  std::uniform_real_distribution<double> unit(1e-6, 1.0);
  auto speed = [&](int rank) {
    const double r = rank < static_cast<int>(job.rank_speed.size()) ? job.rank_speed[rank] : 1.0;
    const int stage = rank / job.dp;
    const double s = stage < static_cast<int>(job.stage_speed.size()) ? job.stage_speed[stage] : 1.0;
    return r * s;
  };
  auto jittered = [&](double d) {
    return job.jitter > 0 ? d * std::max(0.5, 1.0 + job.jitter * noise(rng)) : d;
  };
  // Long-tailed lengths (Pareto, alpha 1.2, 128..2048); cost = sum(len) + sum(len^2)/1024,
  // normalised so that a micro-batch of 256-token sequences costs 1.
  auto draw_lens = [&]() {
    Lens l;
    double cost = 0;
    for (int i = 0; i < job.seqs_per_microbatch; ++i) {
      const double len = std::min(2048.0, std::floor(128.0 / std::pow(unit(rng), 1.0 / 1.2)));
      cost += len + len * len / 1024.0;
      if (i) l.text += ',';
      l.text += std::to_string(static_cast<int>(len));
    }
    l.factor = cost / (job.seqs_per_microbatch * 320.0);
    return l;
  };

  SyntheticRun run;
  std::vector<double> t(static_cast<size_t>(world), 0.0);
  uint64_t seq = 0;
  for (int step = 0; step < num_steps; ++step) {
    std::vector<runtime::StepSummary> out(static_cast<size_t>(world));
    std::vector<std::vector<Instr>> prog(static_cast<size_t>(world));
    for (int r = 0; r < world; ++r) {
      runtime::StepSummary& s = out[static_cast<size_t>(r)];
      s.rank = r;
      s.world_size = world;
      s.dp_rank = r % job.dp;
      s.pp_stage = job.pp > 1 ? r / job.dp : -1;
      s.step = step;
      s.step_start_ns = ns(t[static_cast<size_t>(r)]);
      s.names = {""};
      double sp = speed(r);
      for (const auto& [ss, mult] : job.step_speed) {
        if (ss == step) sp *= mult;
      }
      std::vector<Instr>& p = prog[static_cast<size_t>(r)];
      p.push_back({Instr::kCompute, SP_OP_DATA_WAIT, -1, hooked(job, {SP_OP_DATA_WAIT, step, r, -1, -1}, job.data_wait_s),
                   0, false, {}});
      StageProgram stage{job, r, r / job.dp, {}, {}, 0.0, &p};
      for (int mb = 0; mb < job.microbatches; ++mb) {
        double factor = 1.0;
        if (job.seq_lens) {
          const Lens l = draw_lens();
          factor = l.factor;
          if (job.annotate) s.annotations.push_back({mb, "seq_lens", l.text});
        }
        stage.fwd.push_back(job.forward_s * sp * factor);
        stage.bwd.push_back(job.backward_s * sp * factor);
      }
      for (double& d : stage.fwd) d = jittered(d);
      for (double& d : stage.bwd) d = jittered(d);
      for (int mb = 0; mb < job.microbatches; ++mb) {
        double& f = stage.fwd[static_cast<size_t>(mb)];
        double& b = stage.bwd[static_cast<size_t>(mb)];
        f = hooked(job, {SP_OP_FORWARD, step, r, -1, mb}, f);
        b = hooked(job, {SP_OP_BACKWARD, step, r, -1, mb}, b);
      }
      for (const auto& [gs, gr, pause] : job.gc) {
        if (gs == step && gr == r) stage.gc_pause += pause;
      }
      if (job.schedule == Schedule::k1F1B) {
        one_f_one_b(stage);
      } else {
        gpipe(stage);
      }
      p.push_back({Instr::kCompute, SP_OP_OPTIMIZER, -1, hooked(job, {SP_OP_OPTIMIZER, step, r, -1, -1}, job.optimizer_s),
                   0, false, {}});
    }
    StepExecutor(job, step, std::move(prog), &out, &t).run(seq);
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
