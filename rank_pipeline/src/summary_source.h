// This rank's finished step summaries, popped from the runtime's bounded queue (sp_pop_summary),
// with the step label read from each. Only transport threads use it, never the training thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace sp::rank_pipeline {

struct EncodedSummary {
  int64_t step = 0;
  int32_t rank = 0;
  std::string bytes;
};

class SummarySource {
 public:
  enum class Status { kOk, kEmpty, kClosed, kBad };

  // Waits up to timeout_ms. kClosed: the runtime is off and nothing is queued any more.
  // kBad: a summary that does not decode (one line in error; it is dropped).
  Status pop(int timeout_ms, EncodedSummary* out, std::string* error);

 private:
  std::string buffer_ = std::string(64 * 1024, '\0');
};

}  // namespace sp::rank_pipeline
