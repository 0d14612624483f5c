// Where a rank's finished step summaries come from. In a training rank: the runtime's bounded
// queue (sp_pop_summary), with the step label read from each; in bench/scale and the tests: a
// synthetic job. Only transport threads use it, never the training thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "straggler_probe/rank_pipeline/runtime_calls.h"

namespace sp::rank_pipeline {

struct EncodedSummary {
  int64_t step = 0;
  int32_t rank = 0;
  std::string bytes;
};

class SummarySource {
 public:
  enum class Status { kOk, kEmpty, kClosed, kBad };
  virtual ~SummarySource() = default;
  // Waits up to timeout_ms. kClosed: the source is off and nothing is queued any more.
  // kBad: a summary that does not decode (one line in error; it is dropped).
  virtual Status pop(int timeout_ms, EncodedSummary* out, std::string* error) = 0;
};

// This process's runtime's queue (its pop_summary, runtime_calls.h).
class RuntimeSummarySource final : public SummarySource {
 public:
  explicit RuntimeSummarySource(const RuntimeCalls& runtime) : pop_summary_(runtime.pop_summary) {}
  Status pop(int timeout_ms, EncodedSummary* out, std::string* error) override;

 private:
  int (*pop_summary_)(void*, size_t, size_t*, int32_t);
  std::string buffer_ = std::string(64 * 1024, '\0');
};

std::shared_ptr<SummarySource> runtime_summary_source(const RuntimeCalls& runtime);

}  // namespace sp::rank_pipeline
