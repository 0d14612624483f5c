// Small store values of the rank pipeline (rank_pipeline/src): the rank table's rows, the
// integers (acks, heads, tickets, rank 0's clock answers), the clock-sync results the ranks
// report to rank 0, what a client's estimator makes of rank 0's answers, and the host leader key
// a rank reads at election. Each is another process's bytes.
#include <gtest/gtest.h>

#include <cmath>

#include "clock/clock_sync.h"
#include "fuzz_engine.h"
#include "host/host_election.h"
#include "host/host_identity.h"
#include "host/host_keys.h"
#include "store/kv_client.h"
#include "store/local_kv_store.h"
#include "base/rank_row.h"

namespace sp::rank_pipeline {
namespace {

using fuzz::Outcome;
using fuzz::Stats;

const std::vector<std::string> kNumbers = {"-", "+", "0", "9223372036854775807",
                                           "-9223372036854775808", "9223372036854775808",
                                           "2147483648", "1e9", " ", "\n", "nan", "inf", "0x10"};

TEST(FuzzStoreValues, RankTableRows) {
  fuzz::Corpus c;
  c.seeds = {encode_rank_row(rank_row(0, 0, 0, 3, "node-0")) + encode_rank_row(rank_row(1, 0, 1, -1, "node-0")),
             encode_rank_row(rank_row(7, 4, 3, 3, "gpu-host.example_1")), "2 2 0 0 h\n3 2 1 1 h\n"};
  c.dictionary = kNumbers;
  const Stats st = fuzz::run_cases("rank table rows (store ranks, r/<rank>)", c, fuzz::case_count(),
                                   [](const std::string& text) {
    std::vector<RankInfo> table(8);
    Outcome o;
    o.accepted = parse_rank_rows(text, &table, &o.error) == 0;
    for (const RankInfo& row : table) {  // every row taken is clean and round-trips
      if (row.host.empty()) continue;
      EXPECT_EQ(clean_host_name(row.host), row.host);
      std::vector<RankInfo> again(8);
      std::string error;
      EXPECT_EQ(parse_rank_rows(encode_rank_row(row), &again, &error), 0u) << error;
      const RankInfo& back = again[static_cast<size_t>(row.rank)];
      EXPECT_TRUE(back.host == row.host && back.leader == row.leader &&
                  back.local_rank == row.local_rank && back.device == row.device);
    }
    return o;
  });
  EXPECT_GT(st.rejected, 0u);
  EXPECT_GT(st.accepted, 0u);
}

TEST(FuzzStoreValues, Integers) {
  fuzz::Corpus c;
  c.seeds = {"0", "12", "-1", "1700000000123456789", "9223372036854775807"};
  c.dictionary = kNumbers;
  const Stats st = fuzz::run_cases("store integers (ack, head, ticket, serving)", c, fuzz::case_count(),
                                   [](const std::string& text) {
    Outcome o;
    const std::optional<int64_t> v = parse_store_int(text);
    o.accepted = v.has_value();
    o.quiet = true;  // nullopt: each caller says what it expected
    if (v) {
      EXPECT_EQ(parse_store_int(std::to_string(*v)), v);
    }
    return o;
  });
  EXPECT_GT(st.rejected, 0u);
  EXPECT_GT(st.accepted, 0u);
}

// Rank 0's ctl value as a leader reads it (host_keys.h): the ack, a hang ask, /control's
// recording notice, or a stop. Whatever it takes round-trips; a stop's reason is printable.
TEST(FuzzStoreValues, ControlKey) {
  fuzz::Corpus c;
  c.seeds = {"12", "12 hang 3 5", "12 rec 4 1", "12 hang 3 5 rec 4 0", "stop rank 3: boom"};
  c.dictionary = kNumbers;
  c.dictionary.insert(c.dictionary.end(), {" rec ", " hang ", "stop ", " 1", " 0"});
  const Stats st = fuzz::run_cases("ctl values (ack, hang ask, recording, stop)", c, fuzz::case_count(),
                                   [](const std::string& text) {
    Outcome o;
    const host::Control v = host::parse_control(text);
    o.accepted = v.ack.has_value() || v.stop.has_value();
    o.quiet = true;
    if (v.stop) {
      EXPECT_TRUE(fuzz::printable_ascii(*v.stop));
    }
    if (v.ack) {
      const host::Control again = host::parse_control(host::control_value(*v.ack, v.ask, v.recording));
      EXPECT_EQ(again.ack, v.ack);
      EXPECT_EQ(again.ask.has_value(), v.ask.has_value());
      EXPECT_EQ(again.recording.has_value(), v.recording.has_value());
      if (v.recording) {
        EXPECT_EQ(again.recording->generation, v.recording->generation);
        EXPECT_EQ(again.recording->paused, v.recording->paused);
      }
    }
    return o;
  });
  EXPECT_GT(st.rejected, 0u);
  EXPECT_GT(st.accepted, 0u);
}

// A result as rank 0 takes it: a row of its clock table, printed in its start-up line and
// report.json. Whatever it accepts must be a row those can print.
TEST(FuzzStoreValues, ClockSyncResults) {
  fuzz::Corpus c;
  for (const bool ok : {true, false}) {
    ClockEstimate e;
    e.ok = ok;
    e.offset_ns = ok ? -250'000'123 : 0;
    e.uncertainty_ns = 4'000;
    e.rtt_ns = 8'000;
    c.seeds.push_back(format_clock_result(3, e, ok ? std::optional<double>(-12.5) : std::nullopt));
  }
  c.dictionary = kNumbers;
  c.dictionary.push_back("res ");
  const Stats st = fuzz::run_cases("clock sync results (store clk/q)", c, fuzz::case_count(),
                                   [](const std::string& text) {
    RankClock row;
    Outcome o;
    o.accepted = parse_clock_result(text, &row);
    o.quiet = true;  // false: rank 0 drops the result and counts the rank as not estimated
    if (o.accepted) {
      EXPECT_GT(row.offset_ns, INT64_MIN) << "|offset| must be printable (llabs)";
      EXPECT_GE(row.uncertainty_ns, 0);
      EXPECT_GE(row.rtt_ns, 0);
      if (row.skew_ppm) {
        EXPECT_TRUE(std::isfinite(*row.skew_ppm));
      }
    }
    return o;
  });
  EXPECT_GT(st.rejected, 0u);
  EXPECT_GT(st.accepted, 0u);
}

// Rank 0's answers (store clk/a/<ticket>/<i>) as a client's estimator and skew tracker take
// them: one round per input (an answer a line), many rounds in a row.
TEST(FuzzStoreValues, ClockAnswersThroughTheEstimator) {
  fuzz::Corpus c;
  c.seeds = {"1700000000000000000\n1700000000000001000\n1700000000000002000",
             "5", "1700000000000000000\n-1700000000000000000"};
  c.dictionary = kNumbers;
  SkewTracker skew;
  int64_t now = 1'700'000'000'000'000'000;
  const Stats st = fuzz::run_cases("clock answers (store clk/a) through the estimator", c,
                                   fuzz::case_count(), [&](const std::string& text) {
    std::vector<std::string> answers;
    for (size_t at = 0; at <= text.size();) {
      const size_t nl = std::min(text.find('\n', at), text.size());
      answers.push_back(text.substr(at, nl - at));
      at = nl + 1;
    }
    ClockEstimatorOptions options;
    options.round_trips = 4;
    const LocalClock clock = [&now] { return now += 1'000; };
    const ClockEstimate e = estimate_clock_offset(
        options, clock,
        [&](int i, std::chrono::steady_clock::time_point, std::string* error) -> std::optional<int64_t> {
          if (static_cast<size_t>(i) >= answers.size()) return std::nullopt;
          const std::optional<int64_t> v = parse_store_int(answers[static_cast<size_t>(i)]);
          if (!v) *error = "malformed answer from rank 0";
          return v;
        });
    Outcome o;
    o.accepted = e.ok;
    o.error = e.error;
    skew.add(e);
    (void)skew.ppm();
    (void)skew.projected_offset(now += 1'000'000'000);
    return o;
  });
  EXPECT_GT(st.accepted, 0u);
}

// The leader key a rank reads when its own offer lost ("<rank> <socket name>").
TEST(FuzzStoreValues, HostElectionLeaderKey) {
  fuzz::Corpus c;
  c.seeds = {"0 straggler_probe.1234.00000000deadbeef", "17 x", "3 -"};
  c.dictionary = kNumbers;
  const Stats st = fuzz::run_cases("host election: leader key (store host/<host>)", c,
                                   fuzz::case_count(), [](const std::string& value) {
    TransportContext t;
    t.o.rank = 1;
    t.o.world_size = 4;
    t.o.prefix = "f/";
    t.o.identity.host = "fuzzhost";
    t.store = std::make_shared<KvClient>(make_local_kv_store());
    t.counters = std::make_shared<TransportCounters>();
    std::vector<std::string> warnings;
    t.warn = [&](const std::string& w) { warnings.push_back(w); };
    TransportWarning warning(1, t.warn);
    std::string error;
    t.store->set(host::leader_key(t.o, this_host(t.o.identity.host).key), value, &error);
    const Election e = elect_host_leader(t, &warning);
    EXPECT_LE(warnings.size(), 1u);
    if (!e.leader) {
      EXPECT_GE(e.leader_rank, 0);
      EXPECT_LT(e.leader_rank, t.o.world_size) << "a leader outside the world";
      EXPECT_FALSE(e.leader_socket.empty());
    }
    Outcome o;
    o.accepted = warnings.empty();
    if (!o.accepted) o.error = warnings[0];
    return o;
  });
  EXPECT_GT(st.rejected, 0u);
  EXPECT_GT(st.accepted, 0u);
}

}  // namespace
}  // namespace sp::rank_pipeline
