#include "fake_cupti.h"

#include <time.h>

#include <algorithm>
#include <cstring>

#include "loader/cupti_records.h"
#include "records/record_iterator.h"

namespace sp::cupti::testing {
namespace {

FakeCupti* g_fake = nullptr;

int get_version(uint32_t* v) {
  *v = 130001;
  return 0;
}

int get_timestamp(uint64_t* ts) {
  *ts = fake_device_time(fake_cpu_now());
  return 0;
}

int register_callbacks(BufferRequestedFn req, BufferCompletedFn done) {
  ++g_fake->register_calls;
  g_fake->requested = req;
  g_fake->completed = done;
  return 0;
}

int enable(uint32_t kind) {
  g_fake->enable_calls.push_back(kind);
  if (g_fake->enable_result != 0) return g_fake->enable_result;
  g_fake->enabled.push_back(kind);
  return 0;
}

int disable(uint32_t kind) {
  auto& e = g_fake->enabled;
  e.erase(std::remove(e.begin(), e.end(), kind), e.end());
  return 0;
}

int flush_all(uint32_t flag) {
  ++g_fake->flushes;
  if (flag != 0) ++g_fake->forced_flushes;
  for (SyntheticActivityBuffer& b : g_fake->pending) {
    uint8_t* buf = nullptr;
    size_t size = 0, max_records = 0;
    g_fake->requested(&buf, &size, &max_records);
    if (buf == nullptr) continue;  // refused: CUPTI would drop these records
    const size_t n = std::min(size, b.size());
    std::memcpy(buf, b.data(), n);
    g_fake->completed(nullptr, 0, buf, size, n);
  }
  g_fake->pending.clear();
  if (g_fake->complete_foreign_buffer) {
    static uint64_t foreign[8] = {};
    g_fake->completed(nullptr, 0, reinterpret_cast<uint8_t*>(foreign), sizeof(foreign), 0);
    g_fake->complete_foreign_buffer = false;
  }
  return 0;
}

int get_next_record(uint8_t* buffer, size_t valid, void** record) {
  Cupti13RecordIterator it;
  uint8_t* rec = static_cast<uint8_t*>(*record);
  if (!it.next(buffer, valid, &rec)) return kCuptiMaxLimitReached;
  *record = rec;
  return 0;
}

int get_dropped(void*, uint32_t, size_t* dropped) {
  *dropped = g_fake->dropped_to_report;
  g_fake->dropped_to_report = 0;
  return 0;
}

int push(uint32_t kind, uint64_t id) {
  if (kind != kProbeExternalKind) return 1;
  g_fake->pushed.push_back(id);
  g_fake->all_pushed.push_back(id);
  return 0;
}

int pop(uint32_t, uint64_t* last) {
  if (g_fake->pushed.empty()) return 1;
  if (last != nullptr) *last = g_fake->pushed.back();
  g_fake->pushed.pop_back();
  return 0;
}

int set_attribute(uint32_t attr, size_t* size, void* value) {
  if (attr == kAttrZeroedOutActivityBuffer && *size == 1) {
    g_fake->zeroed_attr = *static_cast<uint8_t*>(value);
  }
  return 0;
}

int device_ts(uint8_t enable) {
  g_fake->device_timestamps = enable;
  return 0;
}

bool kind_on(uint32_t kind) {
  const auto& e = g_fake->enabled;
  return std::find(e.begin(), e.end(), kind) != e.end();
}

int driver_api(uint32_t cbid, uint8_t on) {
  auto& v = g_fake->driver_cbids_on;
  if (on != 0 && !kind_on(kKindDriver)) ++g_fake->cbids_on_without_api_kinds;
  if (on != 0) {
    v.push_back(cbid);
  } else {
    v.erase(std::remove(v.begin(), v.end(), cbid), v.end());
  }
  return 0;
}

int runtime_api(uint32_t, uint8_t on) {
  if (on != 0 && !kind_on(kKindRuntime)) ++g_fake->cbids_on_without_api_kinds;
  return 0;
}

}  // namespace

FakeCupti& fake_cupti() { return *g_fake; }

void reset_fake_cupti() {
  delete g_fake;
  g_fake = new FakeCupti();
  g_fake->clock_base = fake_cpu_now();
}

uint64_t fake_device_time(uint64_t cpu) {
  if (g_fake->clock_rate == 1.0) return cpu + g_fake->clock_offset;
  const double since = static_cast<double>(static_cast<int64_t>(cpu - g_fake->clock_base));
  return static_cast<uint64_t>(static_cast<int64_t>(since * g_fake->clock_rate)) +
         g_fake->clock_offset;
}

uint64_t fake_cpu_now() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

CuptiApi fake_cupti_api() {
  CuptiApi a;
  a.get_version = &get_version;
  a.get_timestamp = &get_timestamp;
  a.register_callbacks = &register_callbacks;
  a.enable = &enable;
  a.disable = &disable;
  a.flush_all = &flush_all;
  a.get_next_record = &get_next_record;
  a.get_num_dropped_records = &get_dropped;
  a.push_external_correlation_id = &push;
  a.pop_external_correlation_id = &pop;
  a.set_attribute = &set_attribute;
  a.enable_cuda_event_device_timestamps = &device_ts;
  a.enable_driver_api = &driver_api;
  a.enable_runtime_api = &runtime_api;
  return a;
}

}  // namespace sp::cupti::testing
