#include "region_attribution.h"

#include <algorithm>

namespace sp::cupti {
namespace {

constexpr uint32_t kOverflowName = 0;  // names_[0] collects everything past the caps

uint64_t type_key(uint32_t kind, uint32_t name_id) {
  return (static_cast<uint64_t>(kind) << 32) | name_id;
}

}  // namespace

uint32_t RegionAttribution::kernel_name_index(const char* name) {
  if (names_.empty()) names_.emplace_back("<other kernels>");
  const std::string key = name != nullptr ? std::string(name) : std::string("<unnamed>");
  auto it = name_index_.find(key);
  if (it != name_index_.end()) return it->second;
  if (names_.size() >= opts_.max_kernel_names) {
    ++stats_.names_overflowed;
    return kOverflowName;
  }
  const auto idx = static_cast<uint32_t>(names_.size());
  names_.push_back(key);
  name_index_.emplace(key, idx);
  return idx;
}

void RegionAttribution::note_kernel(uint32_t kind, uint32_t name_id, const GpuActivity& a) {
  uint32_t idx = kernel_name_index(a.name);
  auto& table = kernels_[type_key(kind, name_id)];
  if (table.find(idx) == table.end() && table.size() >= opts_.max_kernels_per_region) {
    ++stats_.names_overflowed;
    idx = kOverflowName;
  }
  KernelStat& s = table[idx];
  const uint64_t dur = a.end >= a.start ? a.end - a.start : 0;
  ++s.count;
  s.total_ns += dur;
  s.max_ns = std::max(s.max_ns, dur);
}

void RegionAttribution::add(const GpuActivity& a, uint64_t window) {
  if (a.type != GpuActivity::Type::kKernel && a.type != GpuActivity::Type::kMemcpy &&
      a.type != GpuActivity::Type::kMemset) {
    return;
  }
  gpu::RegionKey key;
  uint64_t op = 0;
  if (!gpu::decode_region_id(a.external_id, &key)) {
    const bool graph = a.graph_id != 0;
    if (gpu::decode_nccl_op_id(a.external_id, &op)) {
      ++stats_.nccl_tagged;
    } else {
      ++stats_.untagged;
      if (graph) ++stats_.graph_untagged;
    }
    if (a.type == GpuActivity::Type::kKernel) {
      note_kernel(graph ? kCudaGraphType : 0, graph ? a.graph_id : 0, a);
    }
    return;
  }
  ++stats_.tagged;
  if (a.type == GpuActivity::Type::kKernel) note_kernel(key.kind, key.name_id, a);

  auto it = open_.find(a.external_id);
  if (it == open_.end()) {
    if (open_.size() >= opts_.max_open_instances) {
      ++stats_.instances_evicted;
      return;
    }
    RegionSpan span;
    span.key = key;
    span.external_id = a.external_id;
    span.gpu_start = a.start;
    span.gpu_end = a.end;
    it = open_.emplace(a.external_id, span).first;
  }
  RegionSpan& s = it->second;
  s.gpu_start = std::min(s.gpu_start, a.start);
  s.gpu_end = std::max(s.gpu_end, a.end);
  s.busy_ns += a.end >= a.start ? a.end - a.start : 0;
  ++s.activities;
  s.last_window = window;
}

void RegionAttribution::take_quiescent(uint64_t window, std::vector<RegionSpan>& out) {
  for (auto it = open_.begin(); it != open_.end();) {
    if (it->second.last_window < window) {
      out.push_back(it->second);
      ++stats_.instances_emitted;
      it = open_.erase(it);
    } else {
      ++it;
    }
  }
}

void RegionAttribution::take_all(std::vector<RegionSpan>& out) {
  for (auto& [id, span] : open_) {
    out.push_back(span);
    ++stats_.instances_emitted;
  }
  open_.clear();
}

std::vector<TopKernel> RegionAttribution::top_kernels(uint32_t kind, uint32_t name_id,
                                                      size_t k) const {
  std::vector<TopKernel> out;
  auto it = kernels_.find(type_key(kind, name_id));
  if (it == kernels_.end()) return out;
  for (const auto& [idx, s] : it->second) {
    out.push_back(TopKernel{idx < names_.size() ? names_[idx] : std::string("?"), s.count,
                            s.total_ns, s.max_ns});
  }
  std::sort(out.begin(), out.end(), [](const TopKernel& a, const TopKernel& b) {
    return a.total_ns != b.total_ns ? a.total_ns > b.total_ns : a.name < b.name;
  });
  if (out.size() > k) out.resize(k);
  return out;
}

std::vector<std::pair<uint32_t, uint32_t>> RegionAttribution::region_types() const {
  std::vector<std::pair<uint32_t, uint32_t>> out;
  for (const auto& [key, table] : kernels_) {
    out.emplace_back(static_cast<uint32_t>(key >> 32), static_cast<uint32_t>(key & 0xffffffffu));
  }
  return out;
}

}  // namespace sp::cupti
