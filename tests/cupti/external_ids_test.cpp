// The external correlation ids carry their meaning: regions and NCCL operations round-trip.
#include <gtest/gtest.h>

#include "straggler_probe/gpu/external_ids.h"
#include "straggler_probe/probe.h"

namespace sp::gpu {
namespace {

TEST(ExternalIds, RegionRoundTrip) {
  for (int32_t mb : {-1, 0, 7, 1000}) {
    const RegionKey key{SP_OP_BACKWARD, mb, 12345};
    const uint64_t id = encode_region_id(key, 99);
    RegionKey back;
    ASSERT_TRUE(decode_region_id(id, &back));
    EXPECT_EQ(back, key);
    uint64_t op = 0;
    EXPECT_FALSE(decode_nccl_op_id(id, &op));
  }
}

TEST(ExternalIds, SerialsTellInstancesApart) {
  const RegionKey key{SP_OP_FORWARD, 0, 3};
  EXPECT_NE(encode_region_id(key, 1), encode_region_id(key, 2));
}

TEST(ExternalIds, NcclRoundTripAndNoZeroId) {
  uint64_t op = 0;
  ASSERT_TRUE(decode_nccl_op_id(encode_nccl_op_id(123456789), &op));
  EXPECT_EQ(op, 123456789u);
  RegionKey key;
  EXPECT_FALSE(decode_region_id(encode_nccl_op_id(5), &key));
  EXPECT_FALSE(decode_region_id(0, &key));
  EXPECT_FALSE(decode_nccl_op_id(0, &op));
  EXPECT_NE(encode_region_id(RegionKey{}, 0), 0u);
}

}  // namespace
}  // namespace sp::gpu
