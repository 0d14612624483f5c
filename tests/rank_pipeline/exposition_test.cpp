// The Prometheus exposition writer (rank_pipeline/src/http/exposition.h) and the board's families
// (metrics_board.h): the text format's lines, escaping that no label value can break out of, the
// ledger's sums and the hosts to drain, and the control token's comparison.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "http/control.h"
#include "http/exposition.h"
#include "http/metrics_board.h"

namespace sp::rank_pipeline::http {
namespace {

TEST(Exposition, WritesFamiliesWithHelpTypeAndLabels) {
  Exposition e;
  e.family("straggler_probe_steps_total", MetricType::kCounter, "Steps by cause.");
  e.sample({{"job", "42"}, {"cause", "worker"}}, 3);
  e.sample({}, 0.5);
  EXPECT_EQ(e.text(),
            "# HELP straggler_probe_steps_total Steps by cause.\n"
            "# TYPE straggler_probe_steps_total counter\n"
            "straggler_probe_steps_total{job=\"42\",cause=\"worker\"} 3\n"
            "straggler_probe_steps_total 0.5\n");
}

TEST(Exposition, EscapesLabelValuesSoNoneBreaksALine) {
  Exposition e;
  e.family("m", MetricType::kGauge, "help with \\ and\nnewline");
  e.sample({{"host", "a\"b\\c\nd"}}, 1);
  EXPECT_EQ(e.text(),
            "# HELP m help with \\\\ and\\nnewline\n# TYPE m gauge\nm{host=\"a\\\"b\\\\c\\nd\"} 1\n");
}

TEST(Exposition, RefusesBadNamesAndWritesSpecialValues) {
  Exposition e;
  e.family("1bad", MetricType::kGauge, "x");
  e.sample({}, 1);
  EXPECT_EQ(e.text(), "");
  e.family("good", MetricType::kGauge, "x");
  e.sample({{"bad-label", "v"}, {"__reserved", "v"}, {"ok", "v"}}, std::nan(""));
  e.sample({}, std::numeric_limits<double>::infinity());
  e.sample({}, -std::numeric_limits<double>::infinity());
  EXPECT_NE(e.text().find("good{ok=\"v\"} NaN\n"), std::string::npos);
  EXPECT_NE(e.text().find("good +Inf\n"), std::string::npos);
  EXPECT_NE(e.text().find("good -Inf\n"), std::string::npos);
  EXPECT_EQ(format_value(0.1), "0.1");
}

online::StepVerdict analysed(int64_t step, double time_s, double ideal_s, online::Cause cause,
                             const std::string& worst) {
  online::StepVerdict v;
  v.step = step;
  v.analyzed = true;
  v.time_s = time_s;
  v.ideal_s = ideal_s;
  v.S = time_s / ideal_s;
  v.cause = cause;
  v.worst = online::Culprit::parse(worst).value();
  return v;
}

TEST(MetricsBoard, SumsTheLedgerByCauseHostAndRankAndNamesHostsToDrain) {
  MetricsBoard board("job-7", 4, {{"significance", 1e-3}});
  board.set_rank_table({{"node-a", 0, -1}, {"node-b", 0, 3}, {"node-b", 1, -1}, {"node-c", 0, -1}});
  online::StepVerdict slow = analysed(10, 1.5, 1.0, online::Cause::kWorker, "rank:1");
  slow.fix_gain_s = 0.4;  // fixing rank 1 alone gives back 0.4 s of the 0.5 s lost
  online::AlarmEvent alarm;
  alarm.target = online::Culprit::rank(1);
  alarm.cause = online::Cause::kWorker;
  slow.alarms.push_back(alarm);
  online::StepVerdict skipped;
  skipped.step = 12;
  skipped.skip_reason = "incomplete";
  board.add_verdicts({slow, analysed(11, 1.0, 1.25, online::Cause::kNone, ""), skipped});
  const std::string text = board.metrics_text({});
  EXPECT_NE(text.find("straggler_probe_steps_total{job=\"job-7\",cause=\"worker\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("straggler_probe_lost_gpu_seconds_total{job=\"job-7\",cause=\"worker\"} 2\n"),
            std::string::npos);  // (1.5 - 1.0) x 4 GPUs; the faster-than-ideal step loses 0
  EXPECT_NE(text.find("straggler_probe_host_lost_gpu_seconds_total{job=\"job-7\",host=\"node-b\"} 1.6\n"),
            std::string::npos);  // its what-if share, as the ledger charges it
  EXPECT_NE(text.find("straggler_probe_fixable_gpu_seconds_total{job=\"job-7\"} 1.6\n"), std::string::npos);
  EXPECT_NE(text.find("straggler_probe_lost_gpu_seconds_total{job=\"job-7\",cause=\"unattributed\"} 0\n"),
            std::string::npos);
  EXPECT_NE(text.find("straggler_probe_alarm_open{job=\"job-7\",cause=\"worker\",rank=\"1\",host=\"node-b\",gpu=\"3\"} 1\n"),
            std::string::npos);
  EXPECT_NE(text.find("straggler_probe_steps_skipped_total{job=\"job-7\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("straggler_probe_last_step{job=\"job-7\"} 11\n"), std::string::npos);
  EXPECT_EQ(board.hosts_to_drain(), std::vector<std::string>{"node-b"});
  const nlohmann::ordered_json status = board.status({});
  EXPECT_DOUBLE_EQ(status["ledger"]["lost_gpu_seconds"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(status["ledger"]["gpu_seconds"].get<double>(), 10.0);
  EXPECT_EQ(status["ledger"]["top_ranks"][0]["host"], "node-b");
  EXPECT_EQ(status["exclude_hosts"][0], "node-b");
  online::AlarmEvent cleared = alarm;
  cleared.raised = false;
  online::StepVerdict next = analysed(13, 1.0, 1.0, online::Cause::kNone, "");
  next.alarms.push_back(cleared);
  board.add_verdicts({next});
  EXPECT_TRUE(board.hosts_to_drain().empty());
}

TEST(MetricsBoard, SaysNoLedgerBeforeAnyAnalysedStep) {
  MetricsBoard board("", 2, {});
  EXPECT_EQ(board.status({})["ledger"], "no ledger");
  EXPECT_EQ(board.metrics_text({}).find("job="), std::string::npos);
}

TEST(Control, ComparesTokensWholeAndRefusesWithoutOne) {
  EXPECT_TRUE(equal_constant_time("abc", "abc"));
  EXPECT_FALSE(equal_constant_time("abc", "abd"));
  EXPECT_FALSE(equal_constant_time("abc", "abcd"));
  EXPECT_FALSE(equal_constant_time("", "a"));
  ControlState state;
  Request r;
  r.method = "POST";
  r.path = "/control";
  r.body = "{\"action\":\"pause\"}";
  EXPECT_EQ(handle_control(r, "", &state, {1e-3, 1e-5}).status, 403);
  EXPECT_EQ(handle_control(r, "tok", &state, {1e-3, 1e-5}).status, 403);
  r.headers.emplace_back("authorization", "Bearer nope");
  EXPECT_EQ(handle_control(r, "tok", &state, {1e-3, 1e-5}).status, 403);
  EXPECT_TRUE(state.take().empty());
  r.headers.back().second = "Bearer tok";
  EXPECT_EQ(handle_control(r, "tok", &state, {1e-3, 1e-5}).status, 202);
  const ControlChange c = state.take();
  ASSERT_TRUE(c.paused);
  EXPECT_TRUE(*c.paused);
  r.body = "{\"action\":\"significance\",\"significance\":2}";
  EXPECT_EQ(handle_control(r, "tok", &state, {1e-3, 1e-5}).status, 400);
  r.body = "{\"action\":\"significance\",\"alarm_significance\":1e-6}";  // the other kept
  EXPECT_EQ(handle_control(r, "tok", &state, {1e-3, 1e-5}).status, 202);
  const ControlChange levels = state.take();
  ASSERT_TRUE(levels.significance);
  EXPECT_DOUBLE_EQ(levels.significance->first, 1e-3);
  EXPECT_DOUBLE_EQ(levels.significance->second, 1e-6);
  r.body = "not json";
  EXPECT_EQ(handle_control(r, "tok", &state, {1e-3, 1e-5}).status, 400);
  r.body = std::string(4000, '[');  // as deep as a body may be: refused, no deep recursion
  EXPECT_EQ(handle_control(r, "tok", &state, {1e-3, 1e-5}).status, 400);
  r.body = std::string(2000, '[') + std::string(2000, ']');
  EXPECT_EQ(handle_control(r, "tok", &state, {1e-3, 1e-5}).status, 400);
  EXPECT_TRUE(state.take().empty());
}

}  // namespace
}  // namespace sp::rank_pipeline::http
