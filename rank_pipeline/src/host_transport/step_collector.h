// Rank 0's side of the host-aggregated protocol (transport.h): knows which steps exist from its
// own summaries, polls n/<step> (how many ranks the hosts' messages of the step cover) with a
// short back-off once its own summary of the step is out, reads d/<step> in one get when every
// rank is covered, when a later step covers every rank (the hosts post in order, so nothing more
// comes), or when the step timed out; deletes both keys, and hands the step to the analysis in
// order. Publishes its ack with one compare_set on ctl, whose answer also shows a stop that
// another rank wrote there. Reads the rank table (key ranks) until every rank's row is in.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "host/host_keys.h"
#include "host/host_message.h"
#include "straggler_probe/online/step_assembly.h"
#include "transport/transport_loop.h"

namespace sp::rank_pipeline {

class StepCollector {
 public:
  using Clock = std::chrono::steady_clock;
  StepCollector(const TransportContext& c, TransportWarning* warning);

  // Publishes the first ack (first_step - 1): no host posts before it.
  void start();
  // Rank 0's own summary of `step` has gone to its host's leader (steps it skipped are implied).
  void note_own(int64_t step);
  bool pump(Clock::time_point now);
  // Every step up to rank 0's own last one is dealt with.
  bool caught_up() const { return own_latest_ == INT64_MIN || next() > own_latest_; }
  // The drain deadline passed: hand over what the store holds for the remaining steps.
  void give_up_all();
  std::optional<std::string> remote_stop() const { return remote_stop_; }
  void publish_stop(const std::string& why);
  // Rank 0's hang watch asks the hosts' leaders for their heartbeats (nullopt: no more). Written
  // to ctl with the ack (host_keys.h), now and with every later ack.
  void set_hang_ask(std::optional<host::HangAsk> ask);
  // /control paused or resumed recording: written to ctl with the ack, now and with every later
  // ack (the leaders see it at their next ctl read).
  void set_recording(const RecordingNotice& notice);
  // The rank table as read so far (rows not in yet have an empty host).
  const std::vector<RankInfo>& rank_table() const { return table_; }

 private:
  int64_t next() const { return ack_ + 1; }
  // Hands `step` over; given_up: the reason's tail when the step is not whole (empty: whole).
  void settle(int64_t step, const std::string& given_up);
  bool overtaken(Clock::time_point now);
  void fill(const std::vector<HostMessage>& messages, int64_t step, const std::string& given_up,
            StepBatch* batch);
  void publish_ack();
  void read_rank_table(Clock::time_point now);
  void watch_control(Clock::time_point now);
  void store_error(const std::string& error);

  const TransportContext& c_;
  TransportWarning* warning_;
  online::AssemblyLimits limits_;  // the give-up rules' limits (step_assembly.h)
  int64_t ack_;
  std::string ctl_value_;  // what rank 0 last wrote to ctl
  std::optional<host::HangAsk> hang_ask_;
  std::optional<RecordingNotice> recording_;
  int64_t own_latest_ = INT64_MIN;
  int64_t final_through_ = INT64_MIN;  // steps up to it get nothing more (a later one is whole)
  // The step being waited for: since when, and when its counter is polled next.
  std::optional<Clock::time_point> waiting_since_;
  Clock::time_point next_poll_;
  std::chrono::milliseconds poll_interval_;
  std::optional<std::string> remote_stop_;
  Clock::time_point last_control_;  // the last ack or ctl read (either shows a stop)
  std::vector<RankInfo> table_;
  int rows_known_ = 0;
  bool table_changed_ = false;
  Clock::time_point next_table_read_;
  std::optional<Clock::time_point> first_table_read_;
};

}  // namespace sp::rank_pipeline
