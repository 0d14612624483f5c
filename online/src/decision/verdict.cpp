// What verdict.h declares beside the verdict itself: the names of the causes, and reading a
// target ("rank:N", "stage:N") back.
#include "straggler_probe/online/verdict.h"

#include <cstdlib>
#include <string>

namespace sp::online {

std::string_view cause_name(Cause c) {
  switch (c) {
    case Cause::kNone: return "none";
    case Cause::kWorker: return "worker";
    case Cause::kStageImbalance: return "stage-imbalance";
    case Cause::kSeqImbalance: return "seq-imbalance";
    case Cause::kGc: return "gc";
    case Cause::kComm: return "comm";
    case Cause::kHostDelay: return "host-delay";
    case Cause::kHang: return "hang";
  }
  return "none";
}

int target_index(std::string_view target, std::string_view prefix) {
  if (target.substr(0, prefix.size()) != prefix) return -1;
  return std::atoi(std::string(target.substr(prefix.size())).c_str());
}

}  // namespace sp::online
