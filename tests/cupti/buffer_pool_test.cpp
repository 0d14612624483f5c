// The pre-zeroed, bounded buffer pool CUPTI fills.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "records/buffer_pool.h"

namespace sp::cupti {
namespace {

bool all_zero(const uint8_t* p, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (p[i] != 0) return false;
  }
  return true;
}

TEST(BufferPool, HandsOutZeroedAlignedBuffersUpToItsBound) {
  BufferPool pool(1000, 3);
  EXPECT_EQ(pool.buffer_bytes() % 8, 0u);
  std::vector<uint8_t*> got;
  for (int i = 0; i < 3; ++i) {
    uint8_t* b = pool.acquire();
    ASSERT_NE(b, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(b) % 8, 0u);
    EXPECT_TRUE(all_zero(b, pool.buffer_bytes()));
    got.push_back(b);
  }
  EXPECT_EQ(pool.acquire(), nullptr) << "bounded: the fourth request is refused";
  EXPECT_EQ(pool.stats().exhausted, 1u);
  EXPECT_EQ(pool.stats().high_water, 3u);
  for (uint8_t* b : got) EXPECT_TRUE(pool.release(b, 0));
}

TEST(BufferPool, RecycledBuffersComeBackZeroed) {
  BufferPool pool(256, 1);
  uint8_t* b = pool.acquire();
  ASSERT_NE(b, nullptr);
  std::memset(b, 0xAB, 200);  // CUPTI wrote 200 bytes
  ASSERT_TRUE(pool.release(b, 200));
  uint8_t* again = pool.acquire();
  ASSERT_EQ(again, b);
  EXPECT_TRUE(all_zero(again, pool.buffer_bytes()));
  EXPECT_EQ(pool.stats().allocated, 1u);
}

TEST(BufferPool, RefusesToReleaseSomeoneElsesBuffer) {
  BufferPool pool(64, 2);
  std::vector<uint8_t> other(64, 0x5A);
  EXPECT_FALSE(pool.release(other.data(), 64));
  EXPECT_EQ(other[0], 0x5A) << "a foreign buffer is left untouched";
  EXPECT_EQ(pool.stats().foreign_releases, 1u);
  EXPECT_FALSE(pool.owns(other.data()));
}

}  // namespace
}  // namespace sp::cupti
