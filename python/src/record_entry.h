// The runtime's sp_record as _core binds it (runtime_table.h), handed to straggler_probe._c10d in a
// capsule, so that the C++ process-group hooks (group_observer.h) record into the same runtime
// instance as everything else in the process, without a Python call per operation.
#pragma once

#include "straggler_probe/probe.h"

namespace sp::pyext {

inline constexpr const char* kRecordEntryCapsule = "straggler_probe.record_entry";

struct RecordEntry {
  int (*record)(const sp_event*) = nullptr;
};

}  // namespace sp::pyext
