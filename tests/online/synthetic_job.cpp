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
  enum Type { kHost, kSend, kRecv } type = kHost;
  uint32_t kind = SP_OP_FORWARD;
  int mb = -1;
  double dur = 0;
  double gc_pause = 0;
  int peer = -1;
  bool ddp = false;  // launch the bucket all-reduces inside this op and wait for them at its end
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
  auto hooked = [&](const DurationSite& site, double d) {
    return job.duration_hook ? job.duration_hook(site, d) : d;
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
      const int stage = r / job.dp;
      double sp = speed(r);
      for (const auto& [ss, mult] : job.step_speed) {
        if (ss == step) sp *= mult;
      }
      std::vector<Instr>& p = prog[static_cast<size_t>(r)];
      p.push_back({Instr::kHost, SP_OP_DATA_WAIT, -1,
                   hooked({SP_OP_DATA_WAIT, step, r, -1, -1}, job.data_wait_s), 0, -1, false});
      std::vector<double> factor(static_cast<size_t>(job.microbatches), 1.0);
      for (int mb = 0; mb < job.microbatches; ++mb) {
        if (!job.seq_lens) continue;
        const Lens l = draw_lens();
        factor[static_cast<size_t>(mb)] = l.factor;
        if (job.annotate) s.annotations.push_back({mb, "seq_lens", l.text});
      }
      double gc_pause = 0;
      for (const auto& [gs, gr, pause] : job.gc) {
        if (gs == step && gr == r) gc_pause += pause;
      }
      for (int mb = 0; mb < job.microbatches; ++mb) {
        if (stage > 0) p.push_back({Instr::kRecv, SP_OP_RECV, mb, 0, 0, r - job.dp, false});
        p.push_back({Instr::kHost, SP_OP_FORWARD, mb,
                     hooked({SP_OP_FORWARD, step, r, -1, mb},
                            jittered(job.forward_s * sp * factor[static_cast<size_t>(mb)])),
                     mb == 0 ? gc_pause : 0.0, -1, false});
        if (stage < job.pp - 1) p.push_back({Instr::kSend, SP_OP_SEND, mb, 0, 0, r + job.dp, false});
      }
      for (int mb = 0; mb < job.microbatches; ++mb) {
        if (stage < job.pp - 1) p.push_back({Instr::kRecv, SP_OP_RECV, mb, 0, 0, r + job.dp, false});
        p.push_back({Instr::kHost, SP_OP_BACKWARD, mb,
                     hooked({SP_OP_BACKWARD, step, r, -1, mb},
                            jittered(job.backward_s * sp * factor[static_cast<size_t>(mb)])), 0, -1,
                     job.dp > 1 && mb == job.microbatches - 1});
        if (stage > 0) p.push_back({Instr::kSend, SP_OP_SEND, mb, 0, 0, r - job.dp, false});
      }
      p.push_back({Instr::kHost, SP_OP_OPTIMIZER, -1,
                   hooked({SP_OP_OPTIMIZER, step, r, -1, -1}, job.optimizer_s), 0, -1, false});
    }

    // Execute: each rank runs until it blocks on a peer; repeat until every program is done.
    std::map<std::pair<int, int>, Collective> colls;  // (stage, bucket) -> all-reduce
    std::map<std::tuple<int, int, int>, std::pair<std::optional<double>, std::optional<double>>> p2p;
    std::map<std::pair<int, int>, int> sent, received;  // (from, to) -> count so far
    std::vector<size_t> pc(static_cast<size_t>(world), 0);
    std::vector<int> phase(static_cast<size_t>(world), 0);
    std::vector<double> cur_start(static_cast<size_t>(world)), cur_compute_end(static_cast<size_t>(world));
    std::vector<int> p2p_index(static_cast<size_t>(world), -1);
    for (int stage = 0; stage < job.pp; ++stage) {
      for (int b = 0; b < job.buckets; ++b) {
        Collective& c = colls[{stage, b}];
        c.start.assign(static_cast<size_t>(job.dp), std::nullopt);
        for (int d = 0; d < job.dp; ++d) c.ranks.push_back(stage * job.dp + d);
      }
    }
    int done = 0;
    while (done < world) {
      bool progress = false;
      for (int r = 0; r < world; ++r) {
        const size_t ri = static_cast<size_t>(r);
        auto& ops = out[ri].ops;
        while (pc[ri] < prog[ri].size()) {
          const Instr& in = prog[ri][pc[ri]];
          const int stage = r / job.dp;
          if (in.type == Instr::kHost) {
            if (phase[ri] == 0) {
              cur_start[ri] = t[ri] + job.gap_s;
              cur_compute_end[ri] = cur_start[ri] + in.dur + in.gc_pause;
              if (in.gc_pause > 0) {
                const double g = cur_start[ri] + 0.3 * in.dur;
                ops.push_back(event(SP_OP_GC, g, g + in.gc_pause, -1));
              }
              if (in.ddp) {
                for (int b = 0; b < job.buckets; ++b) {
                  Collective& c = colls[{stage, b}];
                  c.start[static_cast<size_t>(r % job.dp)] =
                      cur_start[ri] + (in.dur + in.gc_pause) * (b + 1) / job.buckets;
                  if (++c.registered == job.dp) {
                    double latest = 0;
                    for (const auto& st : c.start) latest = std::max(latest, *st);
                    c.end = latest + hooked({SP_OP_COLLECTIVE, step, stage * job.dp, -1, b},
                                            job.allreduce_s);
                  }
                }
              }
              phase[ri] = 1;
            }
            double end = cur_compute_end[ri];
            if (in.ddp) {
              bool ready = true;
              double last = 0;
              for (int b = 0; b < job.buckets; ++b) {
                const Collective& c = colls[{stage, b}];
                ready = ready && c.end >= 0;
                last = std::max(last, c.end);
              }
              if (!ready) break;
              end = std::max(end, last) + job.finalize_s;
            }
            ops.push_back(event(in.kind, cur_start[ri], end, in.mb));
            t[ri] = end;
          } else {
            const bool send = in.type == Instr::kSend;
            const std::pair<int, int> chan = send ? std::make_pair(r, in.peer) : std::make_pair(in.peer, r);
            if (p2p_index[ri] < 0) {
              p2p_index[ri] = send ? sent[chan]++ : received[chan]++;
              auto& slot = p2p[{chan.first, chan.second, p2p_index[ri]}];
              (send ? slot.first : slot.second) = t[ri] + job.gap_s;
            }
            const auto& slot = p2p[{chan.first, chan.second, p2p_index[ri]}];
            if (!slot.first || !slot.second) break;
            const double start = *(send ? slot.first : slot.second);
            const double end =
                std::max(*slot.first, *slot.second) +
                hooked({SP_OP_SEND, step, chan.first, chan.second, p2p_index[ri]}, job.p2p_s);
            sp_event e = event(in.kind, start, end, in.mb);
            e.peer = in.peer;
            e.coll = send ? SP_COLL_SEND : SP_COLL_RECV;
            e.bytes = 1 << 20;
            ops.push_back(e);
            t[ri] = end;
            p2p_index[ri] = -1;
          }
          phase[ri] = 0;
          ++pc[ri];
          progress = true;
          if (pc[ri] == prog[ri].size()) ++done;
        }
      }
      if (!progress && done < world) throw std::logic_error("synthetic job deadlocked");
    }
    // The bucket all-reduces, now that their ends are known.
    for (const auto& [key, c] : colls) {
      if (c.registered != job.dp) continue;
      for (int d = 0; d < job.dp; ++d) {
        sp_event e = event(SP_OP_COLLECTIVE, *c.start[static_cast<size_t>(d)], c.end, -1);
        e.coll = SP_COLL_ALL_REDUCE;
        e.group_id = 0x1000 + static_cast<uint64_t>(key.first);
        e.seq = seq + static_cast<uint64_t>(key.second);
        e.group_size = job.dp;
        e.bytes = static_cast<uint64_t>(key.second + 1) * 1000;
        out[static_cast<size_t>(c.ranks[static_cast<size_t>(d)])].ops.push_back(e);
      }
    }
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
