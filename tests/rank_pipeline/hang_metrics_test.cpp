// Rank 0's hang episodes on the metrics server (rank_pipeline/src/http/hang_metrics.h): the
// families and /status' "hang" key as the hang board holds an episode open, shows who it names
// and closes it. The board here is written as the hang watch writes it (hang_watch_test.cpp
// runs the watch itself).
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>

#include "hang/hang_board.h"
#include "http/metrics_board.h"

namespace sp::rank_pipeline::http {
namespace {

using namespace std::chrono_literals;

HangRank named(const char* state, int rank, const char* host, int gpu, double ago_s) {
  HangRank r;
  r.state = state;
  r.rank = rank;
  r.host = host;
  r.gpu = gpu;
  r.last = "allreduce mb=0";
  r.step = 12;
  r.ago_s = ago_s;
  r.silent_s = ago_s;
  return r;
}

// An episode as the watch has it on its first line: rank 2 silent on node-b, rank 5 behind,
// three ranks waiting (one of them shown only in /status).
OpenHang episode(uint64_t id, OpenHang::Clock::time_point now) {
  OpenHang o;
  o.id = id;
  o.step = 12;
  o.bound_s = 3;
  o.lines = 1;
  o.stalled_since = now - 5s;
  o.looked = now;
  o.ranks = {named("silent", 2, "node-b", 2, 4.5), named("behind", 5, "node-c", -1, 0.2),
             named("waiting", 0, "node-a", 0, 4.6)};
  o.silent = 1;
  o.behind = 1;
  o.waiting = 3;
  return o;
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// The value of the one sample that starts with `prefix` (NaN when there is none).
double sample(const std::string& text, const std::string& prefix) {
  const size_t at = text.find("\n" + prefix);
  if (at == std::string::npos) return std::nan("");
  return std::stod(text.substr(text.find(' ', at + 1 + prefix.size()) + 1));
}

TEST(HangMetrics, AnOpenEpisodeNamesItsRanksWithHostsAndGoesAwayWhenClosed) {
  MetricsBoard board("job-7", 8, {});
  auto hangs = std::make_shared<HangBoard>();
  board.show_hangs(hangs);
  std::string text = board.metrics_text({});
  EXPECT_TRUE(has(text, "\nstraggler_probe_hang_suspected{job=\"job-7\"} 0\n")) << text;
  EXPECT_TRUE(has(text, "\nstraggler_probe_hang_episodes_total{job=\"job-7\"} 0\n")) << text;
  EXPECT_TRUE(has(text, "# TYPE straggler_probe_hang_rank_seconds gauge\n")) << text;
  EXPECT_FALSE(has(text, "straggler_probe_hang_rank_seconds{")) << text;
  EXPECT_TRUE(board.status({})["hang"]["open"].is_null());

  const uint64_t before = board.generation();
  HangEpisode first;
  first.id = 1;
  first.step = 12;
  hangs->record(first);  // the first line said
  const auto now = OpenHang::Clock::now();
  hangs->show_open(episode(1, now));
  EXPECT_NE(board.generation(), before);  // the textfile is rewritten
  text = board.metrics_text({});
  EXPECT_TRUE(has(text, "\nstraggler_probe_hang_suspected{job=\"job-7\"} 1\n")) << text;
  EXPECT_TRUE(has(text, "\nstraggler_probe_hang_step{job=\"job-7\"} 12\n")) << text;
  EXPECT_GE(sample(text, "straggler_probe_hang_stalled_seconds{job=\"job-7\"}"), 5.0) << text;
  const double silent_age =
      sample(text, "straggler_probe_hang_rank_seconds{job=\"job-7\",state=\"silent\",rank=\"2\",host=\"node-b\",gpu=\"2\"}");
  EXPECT_GE(silent_age, 4.5) << text;  // grown since the look
  EXPECT_LT(silent_age, 60.0) << text;
  // no GPU known: no gpu label
  EXPECT_TRUE(has(text, "\nstraggler_probe_hang_rank_seconds{job=\"job-7\",state=\"behind\",rank=\"5\",host=\"node-c\"} ")) << text;
  EXPECT_FALSE(has(text, "state=\"waiting\",rank=")) << text;  // the waiting are counted, not named
  EXPECT_TRUE(has(text, "\nstraggler_probe_hang_ranks{job=\"job-7\",state=\"waiting\"} 3\n")) << text;
  EXPECT_TRUE(has(text, "\nstraggler_probe_hang_episodes_total{job=\"job-7\"} 1\n")) << text;

  const nlohmann::ordered_json status = board.status({});
  const auto& open = status["hang"]["open"];
  ASSERT_TRUE(open.is_object()) << status["hang"].dump();
  EXPECT_EQ(open["step"], 12);
  EXPECT_GE(open["stalled_s"].get<double>(), 5.0);
  const double wall = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  EXPECT_NEAR(open["since"].get<double>(), wall - open["stalled_s"].get<double>(), 1.0);
  ASSERT_EQ(open["ranks"].size(), 3u);
  EXPECT_EQ(open["ranks"][0]["state"], "silent");
  EXPECT_EQ(open["ranks"][0]["rank"], 2);
  EXPECT_EQ(open["ranks"][0]["host"], "node-b");
  EXPECT_EQ(open["ranks"][0]["gpu"], 2);
  EXPECT_EQ(open["ranks"][0]["last"], "allreduce mb=0");
  EXPECT_EQ(open["ranks"][2]["state"], "waiting");
  EXPECT_EQ(open["counts"]["waiting"], 3);
  EXPECT_EQ(open["left_out"], 2);  // two of the three waiting
  EXPECT_EQ(status["hang"]["episodes_total"], 1);

  // Said again (a still-suspected line) and shown at later looks: still one episode.
  first.lines = 2;
  hangs->record(first);
  hangs->show_open(episode(1, OpenHang::Clock::now()));
  EXPECT_TRUE(has(board.metrics_text({}), "\nstraggler_probe_hang_episodes_total{job=\"job-7\"} 1\n"));

  // Closed: the gauge goes 0, the step, age and rank series go, the count stays.
  hangs->record(first);
  hangs->clear_open();
  text = board.metrics_text({});
  EXPECT_TRUE(has(text, "\nstraggler_probe_hang_suspected{job=\"job-7\"} 0\n")) << text;
  EXPECT_FALSE(has(text, "straggler_probe_hang_rank_seconds{")) << text;
  EXPECT_FALSE(has(text, "straggler_probe_hang_step{")) << text;
  EXPECT_FALSE(has(text, "straggler_probe_hang_ranks{")) << text;
  EXPECT_TRUE(has(text, "\nstraggler_probe_hang_episodes_total{job=\"job-7\"} 1\n")) << text;
  EXPECT_TRUE(board.status({})["hang"]["open"].is_null());

  // A second episode counts once more.
  HangEpisode second;
  second.id = 2;
  hangs->record(second);
  hangs->show_open(episode(2, OpenHang::Clock::now()));
  text = board.metrics_text({});
  EXPECT_TRUE(has(text, "\nstraggler_probe_hang_episodes_total{job=\"job-7\"} 2\n")) << text;
  EXPECT_TRUE(has(text, "\nstraggler_probe_hang_suspected{job=\"job-7\"} 1\n")) << text;
}

// A host name or op name that reached the board with a quote, a newline or a control byte (the
// rank table and heartbeat parsers refuse them; the writer does not rely on it) neither breaks
// a line of the exposition nor reaches /status raw.
TEST(HangMetrics, UntrustedNamesAreEscaped) {
  MetricsBoard board("", 4, {});
  auto hangs = std::make_shared<HangBoard>();
  board.show_hangs(hangs);
  OpenHang o = episode(1, OpenHang::Clock::now());
  o.ranks = {named("silent", 1, "evil\"host\nstraggler_probe_hang_suspected 0", 1, 1.0)};
  o.ranks[0].last = std::string("op\x01\x1b[2J");
  hangs->show_open(o);
  const std::string text = board.metrics_text({});
  EXPECT_TRUE(has(text, "host=\"evil\\\"host\\nstraggler_probe_hang_suspected 0\"")) << text;
  EXPECT_FALSE(has(text, "\nstraggler_probe_hang_suspected 0\n")) << text;
  const auto row = board.status({})["hang"]["open"]["ranks"][0];
  EXPECT_EQ(row["host"], "evil\"host\\x0astraggler_probe_hang_suspected 0");
  EXPECT_EQ(row["last"], "op\\x01\\x1b[2J");
}

// Without a hang board (rank 0's board before the pipeline sets it, or the unit tests'): no
// hang families and no "hang" key.
TEST(HangMetrics, NoBoardNoFamilies) {
  MetricsBoard board("", 2, {});
  EXPECT_FALSE(has(board.metrics_text({}), "straggler_probe_hang_"));
  EXPECT_FALSE(board.status({}).contains("hang"));
}

}  // namespace
}  // namespace sp::rank_pipeline::http
