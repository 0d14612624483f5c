// One flush window of the CUPTI capture: the completed buffers parsed, the clock calibrated, the
// activities attributed to regions, and what is complete emitted (region spans, memcpys) through
// the runtime. Runs on the flush thread, or on the caller of flush_now / pause / stop, with the
// state mutex held.
#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "capture_state.h"
#include "loader/cupti_records.h"
#include "records/record_iterator.h"
#include "straggler_probe/event_sink.h"
#include "straggler_probe/gpu/external_ids.h"
#include "straggler_probe/log.h"

namespace sp::gpu {

namespace log = runtime::log;
namespace {

// 0 when CUPTI cannot say: best_of_burst then keeps no sample of it (a zero reading is never
// the tightest valid bracket the fit accepts: ClockCalibration::add sees it disagree or skips it).
uint64_t cupti_now(void* ctx) {
  const auto* api = static_cast<const cupti::CuptiApi*>(ctx);
  uint64_t ts = 0;
  if (api->get_timestamp(&ts) != cupti::kCuptiSuccess) return 0;
  return ts;
}

uint64_t cpu_now(void*) { return probe_now_ns(); }

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
  const uint32_t before = clock.time_base_changes();
  const cupti::ClockSample first = cupti::best_of_burst(&cupti_now, &api, &cpu_now, nullptr, 7);
  if (first.device_ts == 0) {
    log::warn_once("cupti_timestamp_failed",
                   "cuptiGetTimestamp failed: GPU times keep the last clock fit");
    return;
  }
  clock.add(first);
  if (clock.slope_fitted() && clock.time_base_changes() == before) return;
  // A new model (first start, or a time-base switch such as Kineto's TSC callback): its slope
  // needs a baseline (ClockCalibrationOptions::min_slope_baseline_ns), or this window's records
  // would be mapped as if a tick were a nanosecond. One short wait, once per switch.
  std::this_thread::sleep_for(std::chrono::milliseconds(6));
  const cupti::ClockSample second = cupti::best_of_burst(&cupti_now, &api, &cpu_now, nullptr, 7);
  if (second.device_ts != 0) clock.add(second);
  if (clock.time_base_changes() != before && before_changes_warned != clock.time_base_changes()) {
    before_changes_warned = clock.time_base_changes();
    log::info(std::string("CUPTI time base is now ") +
              (clock.time_base() == cupti::ClockCalibration::TimeBase::kTicks ? "ticks" : "ns") +
              " (" + std::to_string(clock.ns_per_unit()) + " ns per unit); mapped through the fit");
  }
}

void CuptiCapture::Impl::emit_spans(std::vector<cupti::RegionSpan>& spans) {
  for (const cupti::RegionSpan& s : spans) {
    sp_event ev = blank_event();
    ev.start_ns = s.gpu_start;  // already on the probe clock (handle_activity_locked)
    ev.end_ns = s.gpu_end;
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
  std::vector<cupti::GpuActivity> ready;
  bracket_locked(rest, windows + 1, /*final=*/true, ready);
  for (const auto& a : ready) handle_activity_locked(a, windows + 1);
  std::vector<cupti::RegionSpan> spans;
  regions.take_all(spans);
  emit_spans(spans);
}

void CuptiCapture::Impl::bracket_locked(std::vector<cupti::GpuActivity>& acts, uint64_t window,
                                        bool final, std::vector<cupti::GpuActivity>& ready) {
  if (!markers) {
    ready.insert(ready.end(), acts.begin(), acts.end());
    return;
  }
  // The markers first: this window's may bracket activities of this window and of earlier ones.
  std::vector<cupti::GpuActivity> rest;
  rest.reserve(acts.size());
  for (const cupti::GpuActivity& a : acts) {
    if (a.type == cupti::GpuActivity::Type::kMemset &&
        cupti::LaunchMarkers::is_marker_value(a.subtype, a.bytes)) {
      cupti::LaunchMarkers::Marker m;
      if (markers->lookup(a.subtype, &m)) brackets.add_marker(a.correlation, m, window);
      marker_stream_cupti = a.stream;
      continue;  // the probe's own memset, never the job's activity
    }
    if (a.correlation == 0) ++zero_correlation;
    rest.push_back(a);
  }
  const uint64_t hold = static_cast<uint64_t>(opts.hold_windows) + 1;
  constexpr size_t kMaxUndecided = 1u << 16;
  std::vector<Undecided> still;
  // Decided now, or held for a later marker; released with the best answer known when its time
  // is up (or at a forced final flush).
  auto decide = [&](cupti::GpuActivity a, uint64_t since) {
    const bool last_chance = final || window >= since + hold;
    if (a.external_id == 0) {
      uint64_t id = 0;
      const auto d = brackets.assign(a.correlation, &id, last_chance);
      if (d == cupti::LaunchBrackets::Decision::kUndecided) {
        if (still.size() < kMaxUndecided) {
          still.push_back(Undecided{a, since});
          return;
        }
        brackets.assign(a.correlation, &id, /*best_known=*/true);
        ++undecided_released;
      }
      a.external_id = id;
    }
    ready.push_back(a);
  };
  for (const Undecided& u : undecided) decide(u.activity, u.window);
  for (const cupti::GpuActivity& a : rest) decide(a, window);
  undecided.swap(still);
  brackets.prune(window);
}

void CuptiCapture::Impl::handle_activity_locked(const cupti::GpuActivity& raw, uint64_t window) {
  // Onto the probe clock first, through the fit: in a tick base a duration in ticks is not ns.
  cupti::GpuActivity a = raw;
  a.start = clock.to_cpu(raw.start);
  a.end = clock.to_cpu(raw.end);
  if (a.end < a.start) a.end = a.start;
  regions.add(a, window);
  uint64_t op = 0;
  NcclKernelObserver observer = nccl_observer.load(std::memory_order_acquire);
  if (a.type == cupti::GpuActivity::Type::kKernel && observer != nullptr &&
      decode_nccl_op_id(a.external_id, &op)) {
    observer(op, a.start, a.end, a.name,
             nccl_observer_user.load(std::memory_order_relaxed));
  }
  if (a.type == cupti::GpuActivity::Type::kMemcpy) {
    sp_event ev = blank_event();
    ev.start_ns = a.start;
    ev.end_ns = a.end;
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

bool CuptiCapture::Impl::process_locked(bool forced) {
  if (!activity || capture_in_forked_child()) return false;
  if (const cupti::CuptiResult r = activity->flush(forced); r != cupti::kCuptiSuccess) {
    log::warn_once("cupti_flush_failed", "cuptiActivityFlushAll failed: " +
                                             cupti::result_string(api, r) +
                                             "; buffers come back when CUPTI completes them");
  }
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
  // Calibrate before converting anything of this window, every window: a time-base switch
  // (another profiler's timestamp callback) must be caught before its records are mapped.
  calibrate_locked();
  if (clock.time_base_changes() > 0) {
    log::warn_once("cupti_time_base_changed",
                   "CUPTI time base changed (another profiler installed a timestamp callback?); "
                   "timestamps are mapped through a new fit, records of the old base through the "
                   "old one");
  }
  std::vector<cupti::GpuActivity> ready;
  bracket_locked(acts, window, forced, ready);
  for (const cupti::GpuActivity& a : ready) handle_activity_locked(a, window);
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
