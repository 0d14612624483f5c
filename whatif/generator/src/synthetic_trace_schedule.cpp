// The Megatron-style step program of every traced worker: what it issues, in which order, and
// which operations wait for which. This is where the synthetic traces get their shape.
//
// Streams per worker: the main stream (compute, post-backward collectives, optimizer, and in
// plain 1F1B the blocking pipeline send/recv), where each operation is issued after the
// previous one finished, as Megatron's blocking calls behave; a data-parallel stream for the
// parameter all-gathers (and, with overlap, the per-chunk gradient reduce-scatters) beside it;
// in the interleaved schedule, one stream per kind of asynchronous send/recv.
//
// The order of records is chosen so the analysis's pairing rules hold: the i-th forward-recv of
// a stage comes before its i-th forward compute (and after the one before), each send right
// after the compute whose output it carries, and the k-th real send of a stage meets the k-th
// real recv of its peer. Transfers are paired by the tensor they carry; the tests check that
// this pairing and the analysis's count-based one agree.
#include <algorithm>
#include <stdexcept>
#include <string>

#include "straggler_probe/whatif/synthetic_trace.h"
#include "synthetic_trace_graph_builder.h"

namespace sp::whatif::synth {

namespace {

constexpr uint32_t kNone = UINT32_MAX;

struct ComputeRef {
  bool forward;
  int32_t chunk;
  int32_t micro_batch;
};

// One end of a pipeline transfer. A no-op has no peer: the first model chunk receives no
// activations, the last sends none (and the reverse for gradients).
struct Endpoint {
  OpType type;
  bool is_send;
  bool noop;
  size_t key;  // (direction, consumer global chunk, micro-batch); meaningless for no-ops
};

// The forwards (or backwards) of one stage in Megatron's interleaved order: virtual
// micro-batch k runs model chunk (k mod pp*vpp) / pp (reversed for backward) on micro-batch
// (k / (pp*vpp)) * pp + k mod pp.
std::vector<ComputeRef> interleaved_sequence(int pp, int vpp, int micro_batches, bool forward) {
  std::vector<ComputeRef> seq;
  seq.reserve(static_cast<size_t>(micro_batches * vpp));
  for (int k = 0; k < micro_batches * vpp; ++k) {
    const int in_group = k % (pp * vpp);
    const int chunk = forward ? in_group / pp : vpp - 1 - in_group / pp;
    seq.push_back(ComputeRef{forward, chunk, (k / (pp * vpp)) * pp + in_group % pp});
  }
  return seq;
}

class ScheduleWriter {
 public:
  explicit ScheduleWriter(const SyntheticJobSpec& spec)
      : spec_(spec),
        pp_(spec.pp_size),
        vpp_(spec.vpp_size),
        mb_(spec.micro_batches),
        chunks_(spec.pp_size * spec.vpp_size),
        use_dp_(spec.dp_size * spec.dsp_size > 1),
        builder_(spec.dp_size * spec.pp_size) {}

  StepGraph build() && {
    create_collectives();
    for (int dp = 0; dp < spec_.dp_size; ++dp) {
      sender_.assign(static_cast<size_t>(2 * chunks_ * mb_), kNone);
      receiver_.assign(sender_.size(), kNone);
      for (int stage = 0; stage < pp_; ++stage) write_worker(dp, stage);
      pair_transfers(dp);
    }
    return std::move(builder_).finish();
  }

 private:
  // Rendezvous shared across workers: DP collectives per stage (and chunk), the embedding
  // all-reduce per dp rank (first and last stage), the optimizer's global clip.
  void create_collectives() {
    if (use_dp_) {
      for (int s = 0; s < pp_; ++s) {
        for (int c = 0; c < vpp_; ++c) {
          all_gather_.push_back(builder_.add_rendezvous(Transfer::kParamsAllGather));
          reduce_scatter_.push_back(builder_.add_rendezvous(Transfer::kGradsReduceScatter));
        }
        if (spec_.overlap_grad_reduce) {
          separate_all_reduce_.push_back(
              builder_.add_rendezvous(Transfer::kSeparateGradsAllReduce));
        }
      }
    }
    for (int dp = 0; dp < spec_.dp_size; ++dp) {
      embedding_.push_back(builder_.add_rendezvous(Transfer::kEmbeddingAllReduce));
    }
    clip_ = builder_.add_rendezvous(Transfer::kClipAllReduce);
  }

  void write_worker(int dp, int stage) {
    dp_ = dp;
    stage_ = stage;
    worker_ = dp * pp_ + stage;
    last_main_ = kNone;
    last_dp_stream_ = kNone;
    pending_p2p_.clear();
    all_gather_node_.assign(static_cast<size_t>(vpp_), kNone);
    forward_seen_.assign(static_cast<size_t>(vpp_), 0);
    backward_seen_.assign(static_cast<size_t>(vpp_), 0);
    computes_left_ = 2 * mb_ * vpp_;

    if (use_dp_) {
      for (int c = 0; c < vpp_; ++c) {
        const uint32_t node = dp_stream_node();
        builder_.add_record(OpType::kParamsAllGather, c, -1, -1);
        builder_.join(all_gather_[static_cast<size_t>(stage_ * vpp_ + c)], node);
        all_gather_node_[static_cast<size_t>(c)] = node;
      }
    }
    if (vpp_ == 1) {
      write_one_f_one_b();
    } else {
      write_interleaved();
    }
    write_post_backward();
  }

  // Megatron's non-interleaved 1F1B, with its exact calls: unbatched send/recv in warm-up and
  // cool-down, send_forward_recv_backward / send_backward_recv_forward in the steady state.
  // Stage 0 never receives activations and the last stage never sends them, so those calls
  // are not made at all (no records), as in real traces.
  void write_one_f_one_b() {
    const int warmup = std::min(pp_ - stage_ - 1, mb_);
    const int steady = mb_ - warmup;
    auto fwd = [](int m) { return ComputeRef{true, 0, m}; };
    auto bwd = [](int m) { return ComputeRef{false, 0, m}; };
    for (int i = 0; i < warmup; ++i) {
      batch({recv_for(fwd(i))});
      compute(fwd(i));
      batch({send_of(fwd(i))});
    }
    if (steady > 0) batch({recv_for(fwd(warmup))});
    for (int i = 0; i < steady; ++i) {
      compute(fwd(warmup + i));
      batch({send_of(fwd(warmup + i)), recv_for(bwd(i))});
      compute(bwd(i));
      if (i == steady - 1) {
        batch({send_of(bwd(i))});
      } else {
        batch({send_of(bwd(i)), recv_for(fwd(warmup + i + 1))});
      }
    }
    for (int i = steady; i < mb_; ++i) {
      batch({recv_for(bwd(i))});
      compute(bwd(i));
      batch({send_of(bwd(i))});
    }
  }

  // Megatron's interleaved schedule with its default overlap_p2p_comm: individual
  // asynchronous isend/irecv calls instead of blocking batches. After each forward, its output
  // is sent and the next forward's input is received; that forward waits only for its input.
  // Likewise for backwards; the first backward's input is received after the last warm-up
  // forward. Each kind of call (forward/backward send/recv) is its own stream, as the analysis
  // models them. Every compute gets exactly one send and one recv record; those without a peer
  // are recorded no-ops, as the profiler does.
  void write_interleaved() {
    const auto forwards = interleaved_sequence(pp_, vpp_, mb_, true);
    const auto backwards = interleaved_sequence(pp_, vpp_, mb_, false);
    const size_t total = forwards.size();
    const size_t warmup = warmup_count(total);
    uint32_t fwd_send = kNone;
    uint32_t fwd_recv = kNone;
    uint32_t bwd_send = kNone;
    uint32_t bwd_recv = kNone;

    async_call(fwd_recv, kNone, recv_for(forwards[0]));
    auto forward = [&](size_t k) {
      const uint32_t node = compute(forwards[k], fwd_recv);
      async_call(fwd_send, node, send_of(forwards[k]));
      if (k + 1 < total) async_call(fwd_recv, node, recv_for(forwards[k + 1]));
      if (k + 1 == warmup) async_call(bwd_recv, node, recv_for(backwards[0]));
    };
    auto backward = [&](size_t k) {
      const uint32_t node = compute(backwards[k], bwd_recv);
      async_call(bwd_send, node, send_of(backwards[k]));
      if (k + 1 < total) async_call(bwd_recv, node, recv_for(backwards[k + 1]));
    };
    for (size_t k = 0; k < warmup; ++k) forward(k);
    for (size_t k = 0; k + warmup < total; ++k) {
      forward(warmup + k);
      backward(k);
    }
    for (size_t k = total - warmup; k < total; ++k) backward(k);
    // The schedule waits for its outstanding calls before the gradients are reduced.
    pending_p2p_ = {fwd_send, fwd_recv, bwd_send, bwd_recv};
  }

  // One asynchronous p2p call issued after `after_compute` (if any), behind the previous call
  // of its stream; `stream_last` is updated to it.
  void async_call(uint32_t& stream_last, uint32_t after_compute, const Endpoint& endpoint) {
    const uint32_t node = builder_.add_node(worker_, Work::kP2pBatch);
    if (after_compute != kNone) builder_.add_edge(after_compute, node);
    if (stream_last != kNone) builder_.add_edge(stream_last, node);
    stream_last = node;
    add_endpoints(node, {endpoint}, true);
  }

  size_t warmup_count(size_t total) const {
    if (mb_ == pp_) return total;  // Megatron runs all forwards first in this case
    return std::min(static_cast<size_t>((pp_ - stage_ - 1) * 2 + (vpp_ - 1) * pp_), total);
  }

  // After the last backward: layer-norm and embedding all-reduces, the gradient collectives
  // (reduce-scatters here without overlap, the separate all-reduce with overlap), the global
  // gradient-norm clip and the optimizer, in Megatron's order.
  void write_post_backward() {
    const uint32_t layernorm = main_node(Work::kLayernorm);
    builder_.add_record(OpType::kLayernormGradsAllReduce, -1, -1, -1);
    for (const uint32_t p2p : pending_p2p_) {
      if (p2p != kNone) builder_.add_edge(p2p, layernorm);
    }
    if (use_dp_ && spec_.overlap_grad_reduce) builder_.add_edge(last_dp_stream_, layernorm);
    if (stage_ == 0 || stage_ == pp_ - 1) {
      const uint32_t node = main_node(Work::kNone);
      builder_.add_record(OpType::kEmbeddingGradsAllReduce, -1, -1, -1);
      builder_.join(embedding_[static_cast<size_t>(dp_)], node);
    }
    if (use_dp_) {
      if (spec_.overlap_grad_reduce) {
        const uint32_t node = main_node(Work::kNone);
        builder_.add_record(OpType::kSeparateGradsAllReduce, -1, -1, -1);
        builder_.join(separate_all_reduce_[static_cast<size_t>(stage_)], node);
      } else {
        for (int c = vpp_ - 1; c >= 0; --c) add_reduce_scatter(main_node(Work::kNone), c);
      }
    }
    const uint32_t clip = main_node(Work::kNone);
    builder_.add_record(OpType::kOptimizerClipMainGrad, -1, -1, -1);
    builder_.join(clip_, clip);
    main_node(Work::kOptimizer);
    builder_.add_record(OpType::kOptimizer, -1, -1, -1);
  }

  // A compute on the main stream; `wait_for` (if any) is the asynchronous call delivering its
  // input.
  uint32_t compute(const ComputeRef& c, uint32_t wait_for = kNone) {
    const uint32_t node = main_node(c.forward ? Work::kForward : Work::kBackward, c.micro_batch,
                                    c.chunk);
    if (wait_for != kNone) builder_.add_edge(wait_for, node);
    builder_.add_record(c.forward ? OpType::kForwardCompute : OpType::kBackwardCompute, c.chunk,
                        c.micro_batch, c.chunk * pp_ + stage_);
    const auto chunk = static_cast<size_t>(c.chunk);
    if (c.forward && forward_seen_[chunk]++ == 0 && use_dp_) {
      builder_.add_edge(all_gather_node_[chunk], node);  // parameters must be gathered first
    }
    if (!c.forward && ++backward_seen_[chunk] == mb_ && use_dp_ && spec_.overlap_grad_reduce) {
      // The chunk's gradients are complete: its reduce-scatter starts beside the compute.
      const uint32_t rs = dp_stream_node();
      builder_.add_edge(node, rs);
      add_reduce_scatter(rs, c.chunk);
    }
    if (--computes_left_ == 0) {
      main_node(Work::kGc);  // the gc record follows the last compute, as in real traces
      builder_.add_record(OpType::kGc, -1, 0, -1);
    }
    return node;
  }

  void add_reduce_scatter(uint32_t node, int chunk) {
    builder_.add_record(OpType::kGradsReduceScatter, chunk, -1, -1);
    builder_.join(reduce_scatter_[static_cast<size_t>(stage_ * vpp_ + chunk)], node);
  }

  // One blocking batched p2p call on the main stream. Calls without a peer are not made (1F1B
  // skips them), so nothing is issued when no endpoint has a peer.
  void batch(const std::vector<Endpoint>& endpoints) {
    const bool any = std::any_of(endpoints.begin(), endpoints.end(),
                                 [](const Endpoint& e) { return !e.noop; });
    if (any) add_endpoints(main_node(Work::kP2pBatch), endpoints, false);
  }

  void add_endpoints(uint32_t node, const std::vector<Endpoint>& endpoints, bool keep_noops) {
    for (const Endpoint& e : endpoints) {
      if (e.noop && !keep_noops) continue;
      builder_.add_record(e.type, -1, -1, -1);
      if (e.noop) continue;
      auto& slot = e.is_send ? sender_[e.key] : receiver_[e.key];
      if (slot != kNone) throw std::logic_error("synthetic trace: one transfer sent/received twice");
      slot = node;
    }
  }

  Endpoint send_of(const ComputeRef& c) const {
    const int g = c.chunk * pp_ + stage_;
    const int consumer = c.forward ? g + 1 : g - 1;
    const bool noop = consumer < 0 || consumer >= chunks_;
    return Endpoint{c.forward ? OpType::kForwardSend : OpType::kBackwardSend, true, noop,
                    noop ? 0 : key(c.forward, consumer, c.micro_batch)};
  }

  Endpoint recv_for(const ComputeRef& c) const {
    const int g = c.chunk * pp_ + stage_;
    const bool noop = c.forward ? g == 0 : g == chunks_ - 1;
    return Endpoint{c.forward ? OpType::kForwardRecv : OpType::kBackwardRecv, false, noop,
                    noop ? 0 : key(c.forward, g, c.micro_batch)};
  }

  size_t key(bool forward, int consumer_chunk, int micro_batch) const {
    return (static_cast<size_t>(forward ? 0 : 1) * static_cast<size_t>(chunks_) +
            static_cast<size_t>(consumer_chunk)) *
               static_cast<size_t>(mb_) +
           static_cast<size_t>(micro_batch);
  }

  void pair_transfers(int dp) {
    for (size_t k = 0; k < sender_.size(); ++k) {
      if ((sender_[k] == kNone) != (receiver_[k] == kNone)) {
        throw std::logic_error("synthetic trace: pipeline transfer without a peer on dp rank " +
                               std::to_string(dp));
      }
      if (sender_[k] == kNone) continue;
      const uint32_t rv = builder_.add_rendezvous(Transfer::kP2p);
      builder_.join(rv, sender_[k]);
      builder_.join(rv, receiver_[k]);
    }
  }

  uint32_t main_node(Work work, int32_t micro_batch = -1, int32_t chunk = -1) {
    const uint32_t node = builder_.add_node(worker_, work, micro_batch, chunk);
    if (last_main_ != kNone) builder_.add_edge(last_main_, node);
    last_main_ = node;
    return node;
  }

  uint32_t dp_stream_node() {
    const uint32_t node = builder_.add_node(worker_, Work::kNone);
    if (last_dp_stream_ != kNone) builder_.add_edge(last_dp_stream_, node);
    last_dp_stream_ = node;
    return node;
  }

  const SyntheticJobSpec& spec_;
  const int pp_;
  const int vpp_;
  const int mb_;
  const int chunks_;  // pp * vpp global model chunks
  const bool use_dp_;
  GraphBuilder builder_;

  std::vector<uint32_t> all_gather_;      // per stage x chunk
  std::vector<uint32_t> reduce_scatter_;  // per stage x chunk
  std::vector<uint32_t> separate_all_reduce_;  // per stage
  std::vector<uint32_t> embedding_;       // per dp rank
  uint32_t clip_ = kNone;

  // Per dp rank: the node that sends / receives each pipeline transfer.
  std::vector<uint32_t> sender_;
  std::vector<uint32_t> receiver_;

  // The worker being written.
  int dp_ = 0;
  int stage_ = 0;
  int32_t worker_ = 0;
  uint32_t last_main_ = kNone;
  uint32_t last_dp_stream_ = kNone;
  std::vector<uint32_t> pending_p2p_;      // asynchronous calls to finish before layer-norm
  std::vector<uint32_t> all_gather_node_;  // per chunk
  std::vector<int> forward_seen_;          // per chunk
  std::vector<int> backward_seen_;         // per chunk
  int computes_left_ = 0;
};

}  // namespace

StepGraph build_step_graph(const SyntheticJobSpec& spec) { return ScheduleWriter(spec).build(); }

}  // namespace sp::whatif::synth
