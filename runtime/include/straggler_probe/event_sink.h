// Where the GPU-capture layers (cupti/, nccl_hooks/) send finished events: the runtime as they see
// it (library sp_event_sink, src/event_sink.cpp).
//
// In libstraggler_probe.so the sink is the runtime's sp_record / sp_intern (probe.h). The layers
// reference those through weak symbols so that they also link into test programs and test
// libraries without the runtime core; tests install their own sink to capture what is emitted.
#pragma once

#include <cstdint>

#include "straggler_probe/probe.h"

namespace sp::gpu {

using EventSinkFn = int (*)(const sp_event* ev, void* user);
using NameInternFn = uint32_t (*)(const char* name, void* user);

// nullptr restores the default (sp_record / sp_intern when linked in, otherwise drop).
void set_event_sink(EventSinkFn fn, void* user);
void set_name_interner(NameInternFn fn, void* user);

// Sends one event; returns an sp_status. Never throws; safe from any thread.
int emit_event(const sp_event& ev);
// Interns a name through the runtime (0 if none is available).
uint32_t intern_name(const char* name);

// The probe clock (probe.h: CLOCK_REALTIME ns). Uses sp_now_ns when linked in.
uint64_t probe_now_ns();

// A zero-initialised event with the "none" values of probe.h (microbatch=-1, peer=-1).
sp_event blank_event();

// Whether the runtime core (sp_record) is linked into this process image.
bool runtime_core_present();

// --- the rest of the runtime, as seen from the GPU layers (all no-ops without the core) -------

// Starts the runtime from the environment (sp_init(NULL)); SP_ERR_DISABLED without the core.
int runtime_init_from_env();
// The step label current events belong to: last sp_mark_step label + 1 (0 before the first
// mark), or -1 when the runtime is absent.
int64_t current_step_label();
// sp_mark_step; false without the core or when it failed.
bool runtime_mark_step(int64_t step);
// Steps the runtime saw marked (by anyone).
uint64_t runtime_marked_steps();

// Tags an event with the step it belongs to (probe.h: step_plus_one), for
// producers whose events arrive after the step's mark (GPU times resolved later). No-op for -1.
inline void tag_step(sp_event& ev, int64_t step_label) {
  if (step_label >= 0) ev.step_plus_one = static_cast<uint64_t>(step_label) + 1;
}

// Tests: stand-ins for the runtime's step functions (nullptr restores the default).
struct RuntimeStepHooks {
  int64_t (*last_marked_step)() = nullptr;
  int (*mark_step)(int64_t) = nullptr;
};
void set_runtime_step_hooks(const RuntimeStepHooks& hooks);

}  // namespace sp::gpu
