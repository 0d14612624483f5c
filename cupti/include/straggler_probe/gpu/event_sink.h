// Where the GPU-capture layers send finished events.
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

}  // namespace sp::gpu
