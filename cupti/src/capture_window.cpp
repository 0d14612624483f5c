// One flush window of the CUPTI capture: the completed buffers parsed, the clock calibrated, the
// activities attributed to regions, and what is complete emitted (region spans, memcpys) through
// the runtime. Runs on the flush thread, or on the caller of flush_now / pause / stop, with the
// state mutex held.
#include <cstdlib>
#include <string>
#include <vector>

#include "capture_state.h"
#include "cupti_records.h"
#include "record_iterator.h"
#include "straggler_probe/gpu/event_sink.h"
#include "straggler_probe/gpu/external_ids.h"
#include "straggler_probe/log.h"

namespace sp::gpu {

namespace log = runtime::log;
namespace {

uint64_t cupti_now(void* ctx) {
  const auto* api = static_cast<const cupti::CuptiApi*>(ctx);
  uint64_t ts = 0;
  api->get_timestamp(&ts);
  return ts;
}

uint64_t host_now(void*) { return probe_now_ns(); }

}  // namespace

void CuptiCapture::Impl::emit(const sp_event& ev) {
  if (emit_event(ev) == SP_OK) {
    ++events_emitted;
  } else {
    ++emit_failures;
  }
}

void CuptiCapture::Impl::calibrate_locked() {
  if (api.get_timestamp == nullptr) return;
  clock.add(cupti::best_of_burst(&cupti_now, &api, &host_now, nullptr, 7));
}

void CuptiCapture::Impl::emit_spans(std::vector<cupti::RegionSpan>& spans) {
  for (const cupti::RegionSpan& s : spans) {
    sp_event ev = blank_event();
    ev.start_ns = clock.to_host(s.gpu_start);
    ev.end_ns = clock.to_host(s.gpu_end);
    if (ev.end_ns < ev.start_ns) ev.end_ns = ev.start_ns;
    ev.kind = s.key.kind;
    ev.microbatch = s.key.microbatch;
    ev.name_id = s.key.name_id;
    ev.time_source = SP_TIME_CUPTI;
    // The step of the launch, recovered from the serial: the latest step <= the current one
    // congruent to it mod 2^14.
    const int64_t now_step = current_step_label();
    if (now_step >= 0) {
      const auto serial = static_cast<int64_t>(s.external_id & kRegionSerialMask);
      tag_step(ev, now_step - ((now_step - serial) & static_cast<int64_t>(kRegionSerialMask)));
    }
    emit(ev);
  }
  spans.clear();
}

void CuptiCapture::Impl::emit_held_locked() {
  std::vector<cupti::GpuActivity> rest;
  parser->drain(rest);
  for (const auto& a : rest) regions.add(a, windows + 1);
  std::vector<cupti::RegionSpan> spans;
  regions.take_all(spans);
  emit_spans(spans);
}

bool CuptiCapture::Impl::process_locked(bool forced) {
  if (!activity || capture_in_forked_child()) return false;
  activity->flush(forced);
  std::vector<cupti::CompletedBuffer> buffers = activity->take_completed();
  std::vector<cupti::BufferView> views;
  views.reserve(buffers.size());
  for (const auto& b : buffers) views.push_back(cupti::BufferView{b.data, b.valid});

  std::vector<cupti::GpuActivity> acts;
  cupti::CuptiLibRecordIterator it(api);
  parser->parse_window(views, it, acts);
  for (const auto& b : buffers) {
    if (b.overflow) {
      std::free(b.data);
    } else {
      pool->release(b.data, b.valid);
    }
  }

  const uint64_t window = ++windows;
  // Calibrate before converting anything of this window: every window until a slope could be
  // fitted (the time base may be TSC ticks), then periodically to follow drift and catch a switch.
  if (!clock.slope_fitted() ||
      (opts.recalibrate_every_windows > 0 && window % opts.recalibrate_every_windows == 0)) {
    const uint32_t before = clock.time_base_changes();
    calibrate_locked();
    if (clock.time_base_changes() != before) {
      log::warn_once("cupti_time_base_changed",
                "CUPTI time base changed (another profiler installed a timestamp callback?); "
                "clock calibration restarted");
    }
  }
  NcclKernelObserver observer = nccl_observer.load(std::memory_order_acquire);
  for (const cupti::GpuActivity& a : acts) {
    regions.add(a, window);
    uint64_t op = 0;
    if (a.type == cupti::GpuActivity::Type::kKernel && observer != nullptr &&
        decode_nccl_op_id(a.external_id, &op)) {
      observer(op, clock.to_host(a.start), clock.to_host(a.end), a.name,
               nccl_observer_user.load(std::memory_order_relaxed));
    }
    if (a.type == cupti::GpuActivity::Type::kMemcpy) {
      sp_event ev = blank_event();
      ev.start_ns = clock.to_host(a.start);
      ev.end_ns = clock.to_host(a.end);
      if (ev.end_ns < ev.start_ns) ev.end_ns = ev.start_ns;
      ev.kind = SP_OP_MEMCPY;
      ev.bytes = a.bytes;
      ev.stream = a.stream;
      RegionKey key;
      if (decode_region_id(a.external_id, &key)) ev.microbatch = key.microbatch;
      if (memcpy_name == 0) memcpy_name = intern_name("gpu_memcpy");
      ev.name_id = memcpy_name;
      ev.time_source = SP_TIME_CUPTI;
      emit(ev);
    }
  }
  std::vector<cupti::RegionSpan> spans;
  regions.take_quiescent(window, spans);
  emit_spans(spans);

  const uint64_t dropped = activity->poll_dropped();
  if (dropped > 0) {
    log::warn_once("cupti_dropped",
              "CUPTI dropped " + std::to_string(dropped) +
                  " activity records (buffer pool full: raise STRAGGLER_PROBE_CUPTI_BUFFERS); "
                  "drops are counted in the GPU capture stats");
  }
  if (activity->stats().foreign_buffers > 0) {
    log::warn_once("cupti_foreign_profiler",
              "another CUPTI client (torch.profiler / Nsight?) registered activity buffers; GPU "
              "capture should be paused while it runs (sp_cupti_pause / sp_cupti_resume)");
  }
  return true;
}

}  // namespace sp::gpu
