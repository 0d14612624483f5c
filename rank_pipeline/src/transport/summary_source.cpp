#include "summary_source.h"

#include "straggler_probe/probe.h"
#include "straggler_probe/step_summary.h"

namespace sp::rank_pipeline {

SummarySource::Status RuntimeSummarySource::pop(int timeout_ms, EncodedSummary* out, std::string* error) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    size_t size = 0;
    const int rc = pop_summary_(buffer_.data(), buffer_.size(), &size, timeout_ms);
    if (rc == SP_ERR_TIMEOUT) return Status::kEmpty;
    if (rc == SP_ERR_DISABLED) return Status::kClosed;
    if (rc == SP_ERR_INVALID && size > buffer_.size()) {
      buffer_.resize(size);  // the summary stays queued: pop it again with room for it
      timeout_ms = 0;
      continue;
    }
    if (rc != SP_OK) {
      *error = "sp_pop_summary failed with status " + std::to_string(rc);
      return Status::kBad;
    }
    runtime::StepSummary summary;
    std::string decode_error;
    if (!runtime::decode_summary(std::string_view(buffer_.data(), size), &summary, &decode_error)) {
      *error = "this rank produced a summary that does not decode: " + decode_error;
      return Status::kBad;
    }
    out->step = summary.step;
    out->rank = summary.rank;
    out->bytes.assign(buffer_.data(), size);
    return Status::kOk;
  }
  *error = "sp_pop_summary kept asking for a larger buffer";
  return Status::kBad;
}

std::shared_ptr<SummarySource> runtime_summary_source(const RuntimeCalls& runtime) {
  return std::make_shared<RuntimeSummarySource>(runtime);
}

}  // namespace sp::rank_pipeline
