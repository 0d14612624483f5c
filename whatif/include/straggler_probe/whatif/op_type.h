// Operation types of a Megatron-style training step, as the paper's traces name them.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

namespace sp::whatif {

enum class OpType : uint8_t {
  kForwardCompute,
  kBackwardCompute,
  kForwardSend,
  kForwardRecv,
  kBackwardSend,
  kBackwardRecv,
  kParamsAllGather,
  kGradsReduceScatter,
  kSeparateGradsAllReduce,
  kLayernormGradsAllReduce,
  kEmbeddingGradsAllReduce,
  kOptimizerClipMainGrad,
  kOptimizer,
  kGc,
};

inline constexpr int kNumOpTypes = 14;

// Trace spelling of each type, indexed by the enum value.
inline constexpr std::array<std::string_view, kNumOpTypes> kOpTypeNames = {
    "forward-compute",         "backward-compute",           "forward-send",
    "forward-recv",            "backward-send",              "backward-recv",
    "params-all-gather",       "grads-reduce-scatter",       "separate-grads-all-reduce",
    "layernorm-grads-all-reduce", "embedding-grads-all-reduce", "optimizer-clip-main-grad",
    "optimizer",               "gc",
};

constexpr std::string_view op_type_name(OpType t) { return kOpTypeNames[static_cast<int>(t)]; }

constexpr std::optional<OpType> parse_op_type(std::string_view s) {
  for (int i = 0; i < kNumOpTypes; ++i) {
    if (kOpTypeNames[static_cast<size_t>(i)] == s) return static_cast<OpType>(i);
  }
  return std::nullopt;
}

constexpr bool is_compute(OpType t) {
  return t == OpType::kForwardCompute || t == OpType::kBackwardCompute;
}

constexpr bool is_p2p(OpType t) {
  return t == OpType::kForwardSend || t == OpType::kForwardRecv || t == OpType::kBackwardSend ||
         t == OpType::kBackwardRecv;
}

constexpr bool is_dp_comm(OpType t) {
  return t == OpType::kParamsAllGather || t == OpType::kGradsReduceScatter ||
         t == OpType::kSeparateGradsAllReduce;
}

// "Communication" in the sense of the ideal-duration rule (median of transfer time): p2p, DP
// collectives, the layer-norm and embedding all-reduces and the optimizer's global sync.
constexpr bool is_comm_for_ideal(OpType t) {
  return is_p2p(t) || is_dp_comm(t) || t == OpType::kLayernormGradsAllReduce ||
         t == OpType::kEmbeddingGradsAllReduce || t == OpType::kOptimizerClipMainGrad;
}

}  // namespace sp::whatif
