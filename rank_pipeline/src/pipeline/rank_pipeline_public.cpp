// RankPipeline (include/straggler_probe/rank_pipeline/rank_pipeline.h): the public class in
// front of the running pipeline, forwarding to it.
#include "straggler_probe/rank_pipeline/rank_pipeline.h"

#include <stdexcept>
#include <string>

#include "rank_pipeline.h"
#include "store/kv_client.h"

namespace sp::rank_pipeline {

namespace {

// The options, or the store released (it is ours from the call on) and the error rethrown.
RankPipelineOptions options_or_release(const PipelineSettings& settings, sp_kv_store* store,
                                       const RuntimeCalls& runtime) {
  try {
    if (const std::string missing = missing_runtime_call(runtime); !missing.empty()) {
      throw std::invalid_argument("the rank pipeline was given a runtime without " + missing);
    }
    RankPipelineOptions options = to_pipeline_options(settings);
    options.transport.runtime = runtime;
    return options;
  } catch (...) {
    KvClient release(store);  // destroys the store as the running pipeline would have
    throw;
  }
}

}  // namespace

RankPipeline::RankPipeline(const PipelineSettings& settings, sp_kv_store* store,
                           const RuntimeCalls& runtime)
    : run_(std::make_unique<RunningPipeline>(options_or_release(settings, store, runtime), store)) {}

RankPipeline::~RankPipeline() {
  // stop() left a thread that still uses the running pipeline: it must outlive this object.
  if (run_ && run_->leaked()) (void)run_.release();
}

void RankPipeline::stop(std::chrono::milliseconds drain) { run_->stop(drain); }
void RankPipeline::request_stop(const std::string& why) { run_->request_stop(why); }
RankPipelineState RankPipeline::state() const { return run_->state(); }
bool RankPipeline::leaked() const { return run_->leaked(); }
std::string RankPipeline::message() const { return run_->message(); }
std::map<std::string, double> RankPipeline::stats() const { return run_->stats(); }
std::shared_ptr<HangBoard> RankPipeline::hang_board() const { return run_->hang_board(); }

uint64_t wait_hang_notice(HangBoard& board, uint64_t seen, std::chrono::milliseconds timeout) {
  return board.wait_notice(seen, timeout);
}

}  // namespace sp::rank_pipeline
