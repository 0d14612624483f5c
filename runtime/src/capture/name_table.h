// Interned region names. sp_intern is called once per distinct name (not on the hot path), so a
// mutex-protected table is fine. Ids are stable for the life of the process; 0 means "no name".
// Summaries carry only the names their ops use, renumbered densely (localize).
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "straggler_probe/step_summary.h"

namespace sp::runtime {

inline constexpr uint32_t kMaxNames = 65536;
inline constexpr size_t kMaxNameLength = 1024;

class NameTable {
 public:
  NameTable();

  enum class InternError { kNone, kEmpty, kTooLong, kFull };
  // Stable id (>= 1) for `name`; 0 and *error set when it cannot be interned.
  uint32_t intern(std::string_view name, InternError* error);

  // Replaces the process-wide name ids of s->ops by indices into s->names, which receives only
  // the names used (names[0] == ""). Unknown ids become 0.
  void localize(StepSummary* s) const;

  size_t size() const;
  // The name of `id` ("" for 0 or an unknown id): the consumer's heartbeat, when its last
  // event's name changes.
  std::string name(uint32_t id) const;

 private:
  mutable std::mutex mutex_;
  std::vector<std::string> names_;  // names_[id]; names_[0] == ""
  std::unordered_map<std::string, uint32_t> ids_;
};

}  // namespace sp::runtime
