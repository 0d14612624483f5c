// What verdict.h declares beside the verdict itself: the names of the causes.
#include "straggler_probe/online/verdict.h"

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
  }
  return "none";
}

}  // namespace sp::online
