// A summary source its owner fills (push, close): the ranks that bench/scale and the tests
// simulate, each with the summaries of a synthetic job, through the real transport.
#pragma once

#include <condition_variable>
#include <deque>
#include <mutex>

#include "summary_source.h"

namespace sp::rank_pipeline {

class QueuedSummarySource final : public SummarySource {
 public:
  void push(EncodedSummary summary);
  void close();  // after what is queued, pop() says kClosed
  size_t queued() const;
  Status pop(int timeout_ms, EncodedSummary* out, std::string* error) override;

 private:
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<EncodedSummary> queue_;
  bool closed_ = false;
};

}  // namespace sp::rank_pipeline
