// The external correlation ids the probe pushes to CUPTI (kind CUSTOM2; PyTorch uses CUSTOM0/1).
//
// The id itself carries what it stands for, so the record parser needs no table shared with the
// hot path: a region id holds (kind, micro-batch, name, serial); an NCCL id holds the interposer's
// or plugin's operation number.
//
//   bits 62-63  tag: 01 region, 10 NCCL operation
//   region:     bits 54-61 sp_op_kind, 38-53 micro-batch + 1 (0 = none), 14-37 name id,
//               0-13 serial (tells apart successive instances of the same region)
//   NCCL:       bits 0-61 operation number
#pragma once

#include <cstdint>

namespace sp::gpu {

struct RegionKey {
  uint32_t kind = 0;       // sp_op_kind
  int32_t microbatch = -1;
  uint32_t name_id = 0;
  bool operator==(const RegionKey&) const = default;
};

constexpr uint64_t kTagShift = 62;
constexpr uint64_t kTagRegion = 1;
constexpr uint64_t kTagNccl = 2;
constexpr uint32_t kMaxRegionNameId = (1u << 24) - 1;
constexpr uint32_t kRegionSerialMask = (1u << 14) - 1;

constexpr uint64_t encode_region_id(const RegionKey& key, uint32_t serial) {
  const uint64_t mb = key.microbatch < 0 ? 0 : (static_cast<uint64_t>(key.microbatch) + 1) & 0xffff;
  const uint64_t name = key.name_id > kMaxRegionNameId ? 0 : key.name_id;
  return (kTagRegion << kTagShift) | ((static_cast<uint64_t>(key.kind) & 0xff) << 54) | (mb << 38) |
         (name << 14) | (serial & kRegionSerialMask);
}

constexpr bool decode_region_id(uint64_t id, RegionKey* key) {
  if ((id >> kTagShift) != kTagRegion) return false;
  key->kind = static_cast<uint32_t>((id >> 54) & 0xff);
  const auto mb = static_cast<uint32_t>((id >> 38) & 0xffff);
  key->microbatch = mb == 0 ? -1 : static_cast<int32_t>(mb) - 1;
  key->name_id = static_cast<uint32_t>((id >> 14) & kMaxRegionNameId);
  return true;
}

constexpr uint64_t encode_nccl_op_id(uint64_t op) {
  return (kTagNccl << kTagShift) | (op & ((1ull << kTagShift) - 1));
}

constexpr bool decode_nccl_op_id(uint64_t id, uint64_t* op) {
  if ((id >> kTagShift) != kTagNccl) return false;
  *op = id & ((1ull << kTagShift) - 1);
  return true;
}

}  // namespace sp::gpu
