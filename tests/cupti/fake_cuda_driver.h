// A fake CUDA driver for the launch markers: one context, one stream, and every marker memset
// remembered (its value), so tests write the matching CUPTI memset records.
#pragma once

#include <cstdint>
#include <vector>

#include "loader/cuda_driver.h"

namespace sp::cupti::testing {

struct FakeCudaDriver {
  bool has_context = true;
  int memset_result = 0;        // a CUresult to fail with
  std::vector<uint32_t> values;  // marker values launched, in order
  int allocations = 0;
  int streams = 0;
  int capture_mode_exchanges = 0;
};

FakeCudaDriver& fake_driver();
void reset_fake_driver();
CudaDriverApi fake_driver_api();

}  // namespace sp::cupti::testing
