#include "synthetic_summaries.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <stdexcept>

#include "synthetic_job.h"

namespace sp::bench {
namespace {

void put_u32(std::ostream& out, uint32_t v) {
  const char b[4] = {static_cast<char>(v & 0xFF), static_cast<char>((v >> 8) & 0xFF),
                     static_cast<char>((v >> 16) & 0xFF), static_cast<char>((v >> 24) & 0xFF)};
  out.write(b, 4);
}

uint32_t get_u32(std::istream& in) {
  unsigned char b[4] = {};
  in.read(reinterpret_cast<char*>(b), 4);
  if (!in) throw std::runtime_error("summaries file cut short");
  return b[0] | (b[1] << 8) | (b[2] << 16) | (static_cast<uint32_t>(b[3]) << 24);
}

bool is_compute(uint32_t kind) { return kind == SP_OP_FORWARD || kind == SP_OP_BACKWARD || kind == SP_OP_OPTIMIZER; }
bool is_comm(uint32_t kind) { return kind == SP_OP_COLLECTIVE || kind == SP_OP_SEND || kind == SP_OP_RECV; }

}  // namespace

std::vector<std::vector<std::string>> make_summaries(const ScaleJob& job) {
  online::testing::SyntheticJob sj;
  sj.dp = job.dp;
  sj.pp = job.pp;
  sj.microbatches = job.microbatches;
  sj.jitter = job.jitter;
  if (job.straggler >= 0) {
    sj.rank_speed.assign(static_cast<size_t>(job.dp * job.pp), 1.0);
    sj.rank_speed[static_cast<size_t>(job.straggler)] = job.slow;
  }
  online::testing::SyntheticRun run = online::testing::run_synthetic(sj, job.steps);
  std::vector<std::vector<std::string>> out(run.steps.size());
  for (size_t s = 0; s < run.steps.size(); ++s) {
    for (runtime::StepSummary& summary : run.steps[s]) {
      if (job.gpu) add_gpu_records(&summary);
      out[s].push_back(runtime::encode_summary(summary));
    }
  }
  return out;
}

void add_gpu_records(runtime::StepSummary* s) {
  constexpr uint64_t kGpuLagNs = 150'000;  // GPU work runs a little after its launch
  const uint64_t label = static_cast<uint64_t>(s->step) + 1;
  std::vector<runtime::OpRecord> extra;
  for (const runtime::OpRecord& op : s->ops) {
    if (is_compute(op.kind)) {
      for (uint32_t source : {SP_TIME_CUPTI, SP_TIME_CUDA_EVENT}) {
        runtime::OpRecord g = op;
        g.start_ns += kGpuLagNs;
        g.end_ns += kGpuLagNs + (source == SP_TIME_CUDA_EVENT ? 2'000 : 0);
        g.time_source = source;
        g.stream = 7;
        g.step_plus_one = label;
        extra.push_back(g);
      }
      if (op.kind == SP_OP_FORWARD) {
        for (int i = 0; i < 2; ++i) {
          runtime::OpRecord m{};
          m.kind = SP_OP_MEMCPY;
          m.start_ns = op.start_ns + static_cast<uint64_t>(i) * 20'000;
          m.end_ns = m.start_ns + 12'000;
          m.bytes = 4u << 20;
          m.microbatch = op.microbatch;
          m.peer = -1;
          m.stream = 7;
          m.time_source = SP_TIME_CUPTI;
          m.step_plus_one = label;
          extra.push_back(m);
        }
      }
    } else if (is_comm(op.kind)) {
      runtime::OpRecord n = op;
      n.start_ns += kGpuLagNs;
      n.end_ns += kGpuLagNs;
      n.time_source = SP_TIME_NCCL;
      n.stream = 9;
      n.step_plus_one = label;
      extra.push_back(n);
    }
  }
  s->ops.insert(s->ops.end(), extra.begin(), extra.end());
  std::stable_sort(s->ops.begin(), s->ops.end(),
                   [](const runtime::OpRecord& a, const runtime::OpRecord& b) { return a.start_ns < b.start_ns; });
}

size_t v1_encoded_size(const runtime::StepSummary& s) {
  size_t n = 16 + 56 + 4 + 4 + 4 + s.ops.size() * 80;
  const bool empty_first = !s.names.empty() && s.names.front().empty();
  n += empty_first ? 0 : 4;
  for (const std::string& name : s.names) n += 4 + name.size();
  for (const runtime::Annotation& a : s.annotations) n += 12 + a.key.size() + a.value.size();
  return n;
}

void write_summaries(const std::string& path, const std::vector<std::vector<std::string>>& s) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  put_u32(out, static_cast<uint32_t>(s.size()));
  put_u32(out, static_cast<uint32_t>(s.empty() ? 0 : s[0].size()));
  for (const auto& step : s) {
    for (const std::string& bytes : step) {
      put_u32(out, static_cast<uint32_t>(bytes.size()));
      out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    }
  }
  if (!out) throw std::runtime_error("cannot write " + path);
}

std::vector<std::vector<std::string>> read_summaries(const std::string& path, int from, int to,
                                                     int* world) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  const uint32_t steps = get_u32(in);
  *world = static_cast<int>(get_u32(in));
  std::vector<std::vector<std::string>> out(steps);
  for (uint32_t s = 0; s < steps; ++s) {
    for (int r = 0; r < *world; ++r) {
      const uint32_t n = get_u32(in);
      if (r < from || r >= to) {
        in.seekg(n, std::ios::cur);
        continue;
      }
      std::string bytes(n, '\0');
      in.read(bytes.data(), n);
      out[s].push_back(std::move(bytes));
    }
  }
  if (!in) throw std::runtime_error(path + " is cut short");
  return out;
}

}  // namespace sp::bench
