// transport=none: this rank's summaries are popped and dropped (counted), so that the runtime's
// queue does not overflow and warn about a transport nobody asked for.
#include "transport_loop.h"

namespace sp::rank_pipeline {
namespace {

class Discarder final : public StoppableLoop {
 public:
  Discarder(std::shared_ptr<TransportCounters> counters, std::shared_ptr<SummarySource> source)
      : counters_(std::move(counters)), source_(std::move(source)) {
    thread_.start("sp_discard", [this] { run(); });
  }

 private:
  void run() {
    while (!past_deadline()) {
      EncodedSummary s;
      std::string error;
      const auto status = source_->pop(stopping() ? 0 : 50, &s, &error);
      if (status == SummarySource::Status::kOk) {
        counters_->summaries_discarded++;
      } else if (status == SummarySource::Status::kClosed ||
                 (status == SummarySource::Status::kEmpty && stopping())) {
        return;
      }
    }
  }

  std::shared_ptr<TransportCounters> counters_;
  std::shared_ptr<SummarySource> source_;
};

}  // namespace

std::unique_ptr<TransportThread> start_discarder(std::shared_ptr<TransportCounters> counters,
                                                 const RuntimeCalls& runtime) {
  return std::make_unique<Discarder>(std::move(counters), runtime_summary_source(runtime));
}

}  // namespace sp::rank_pipeline
