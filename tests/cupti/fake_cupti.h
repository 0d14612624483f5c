// A fake CUPTI Activity API for GPU-free tests of the capture pipeline: it asks the probe for
// buffers through the registered callbacks, fills them with prepared synthetic records on flush,
// and hands them back as CUPTI would. Its clock is programmable (offset, TSC-like rates).
#pragma once

#include <cstdint>
#include <vector>

#include "loader/cupti_loader.h"
#include "synthetic_activity_buffer.h"

namespace sp::cupti::testing {

struct FakeCupti {
  // Behaviour.
  int enable_result = 0;          // 999 mimics "no driver"
  uint64_t clock_offset = 0;      // device = cpu + offset, or with rate != 1:
  double clock_rate = 1.0;        // (cpu - clock_base) * rate + offset (3.0: a 3 GHz TSC)
  uint64_t clock_base = 0;        // set at reset
  size_t dropped_to_report = 0;   // returned once by GetNumDroppedRecords

  // What the probe did.
  int register_calls = 0;
  std::vector<uint32_t> enabled;  // currently enabled kinds
  std::vector<uint32_t> enable_calls;
  std::vector<uint32_t> driver_cbids_on;
  // Launch callback ids turned on while the DRIVER / RUNTIME kinds were off: CUPTI then writes no
  // API record, so no external correlation either (issue 22's first GPU run).
  int cbids_on_without_api_kinds = 0;
  int zeroed_attr = -1;
  int device_timestamps = -1;
  std::vector<uint64_t> pushed;   // current external-id stack (this test is single-threaded)
  std::vector<uint64_t> all_pushed;
  int flushes = 0;
  int forced_flushes = 0;

  // Prepared records: each entry becomes one buffer at the next flush.
  std::vector<SyntheticActivityBuffer> pending;
  // A buffer CUPTI got from someone else, completed to us (foreign).
  bool complete_foreign_buffer = false;

  BufferRequestedFn requested = nullptr;
  BufferCompletedFn completed = nullptr;
};

// The fake's state (one at a time) and a CuptiApi table pointing at it.
FakeCupti& fake_cupti();
void reset_fake_cupti();
CuptiApi fake_cupti_api();
uint64_t fake_cpu_now();
// The fake CUPTI clock at a given CPU time.
uint64_t fake_device_time(uint64_t cpu);

}  // namespace sp::cupti::testing
