// The result of analysing one training step on rank 0.
#pragma once

#include <compare>
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sp::online {

enum class Cause : uint8_t {
  kNone,
  kWorker,          // one or few ranks explain the slowdown (isolated hot cell)
  kStageImbalance,  // one pipeline stage is heavier (hot row), M_S high
  kSeqImbalance,    // compute tracks the micro-batches' sum(seq_len^2)
  kGc,              // garbage-collection pauses
  kComm,            // communication transfer time
  kCpuDelay,       // CPU side: launch delays, data-loader waits
  kHang,            // the step took longer than the hang bound: a rank stopped (src/hang_rule.h)
};

std::string_view cause_name(Cause c);

// Who a verdict, an alarm or the persistence evidence names: one global rank, one pipeline stage,
// or no one (cause none, or a cause without one place). The line, the JSONL, the report and the
// metrics spell it "rank:N", "stage:N" or "" (text()); readers of those files get it back with
// parse(). Inside C++ it is only ever this type, compared and indexed as such.
struct Culprit {
  enum class Kind : uint8_t { kNone, kRank, kStage };
  Kind kind = Kind::kNone;
  int index = -1;  // the global rank or the stage; -1 for kNone

  static Culprit rank(int r) { return r >= 0 ? Culprit{Kind::kRank, r} : Culprit{}; }
  static Culprit stage(int s) { return s >= 0 ? Culprit{Kind::kStage, s} : Culprit{}; }
  // "rank:N" / "stage:N" (N a non-negative decimal int) or "": the culprit; anything else:
  // nullopt (the caller says what it was reading).
  static std::optional<Culprit> parse(std::string_view text);

  bool empty() const { return kind == Kind::kNone; }
  int rank_index() const { return kind == Kind::kRank ? index : -1; }    // -1 unless a rank
  int stage_index() const { return kind == Kind::kStage ? index : -1; }  // -1 unless a stage
  std::string text() const;

  friend bool operator==(const Culprit&, const Culprit&) = default;
  friend auto operator<=>(const Culprit&, const Culprit&) = default;
};
// Against the spelling (tests and readers of the outputs): c.text() == text.
bool operator==(const Culprit& c, std::string_view text);
// Its spelling, for GoogleTest's messages.
void PrintTo(const Culprit& c, std::ostream* os);

// A job-level alarm raised or cleared at some step (src/alarms.cpp): the same rank, stage or
// cause significant over recent steps.
struct AlarmEvent {
  bool raised = true;         // false: cleared
  Culprit target;             // none: a cause without one rank or stage
  Cause cause{};
  int64_t step = 0;           // the step it was raised or cleared at
  int64_t since = 0;          // first step of the evidence (raised_step for a clear)
  int steps = 0, of = 0;      // named on `steps` of the last `of` analysed steps
  double score = 1.0;         // mean S_w (rank), stage score (stage) or S (cause) over them
  double p = 1.0;             // the alarm test's p-value at this step
  int unit = -1;              // the dp rank or stage the alarm's test is about (-1: a cause)
};

// Who led the recent steps (src/persistence.h): a dp rank (named by the rank of its column
// that the verdict would name), on `led` of the last `of` analysed steps; the most any other
// dp rank led; the fewest steps it was ahead of any one other dp rank (`ahead` of the
// `ahead_of` steps where the two differed); and the test's p, every dp rank corrected for.
// target none: no dp rank led a step.
struct PersistenceEvidence {
  Culprit target;
  int led = 0, of = 0, rival_led = 0, ahead = 0, ahead_of = 0;
  double p = 1.0;
};

// The CPU work test (persistence.h, WorkHistory), on every step where the ranks' CPU times are
// known: the dp rank it tests, pointed at by `target` (a rank of that dp column), did more CPU
// work than the upper median of its peers on `above` of the last `of` steps, by a median of
// `excess` (a share of the ideal step), and more than every other on `most` of them, by a
// median of `lead`; `p`, its test (both windows corrected for). It names the rank (named_by
// "cpu-work") only under the conditions noise_verdict.cpp gives.
struct CpuWorkEvidence {
  Culprit target;  // empty: no CPU times (a device's work, or a summary without them)
  int above = 0, of = 0, most = 0;
  double excess = 0, lead = 0;
  double p = 1.0;
};

struct StepVerdict {
  int64_t step = 0;
  bool analyzed = false;
  std::string skip_reason;  // set when !analyzed: one line saying why the step was skipped

  // Times in seconds. time_s: the measured step (latest step mark - earliest step start).
  // replay_s: the op graph replayed with the recorded durations and launch delays.
  // nodelay_s: replayed with recorded durations and no launch delays.
  // ideal_s: every op at its ideal duration and ideal launch delay.
  double time_s = 0, replay_s = 0, nodelay_s = 0, ideal_s = 0;
  double S = 1.0;             // replay_s / ideal_s
  double launch_share = 0;    // (replay_s - nodelay_s) / replay_s: untraced CPU gaps
  double fidelity_err = 0;    // |replay_s - time_s| / time_s

  int dp_size = 1, pp_size = 1;
  std::vector<int> rank_dp, rank_stage;  // per global rank
  std::vector<double> worker_S;          // S_w per global rank: min(dp-rank, stage) score
  std::vector<double> dp_S, stage_S;     // slowdown left when only that dp rank / stage is real
  std::vector<std::pair<std::string, double>> op_S;  // S_t per op type (incl. launch-delay)
  double M_S = 0;             // share of the slowdown fixed by fixing only the last stage
  double M_W = 0;             // share fixed by fixing only the top workers (W)
  std::vector<int> top_workers;          // W (global ranks)
  double seq_corr = 0;        // r(compute, sum seq_len^2), 0 when not measurable
  double fb_corr = 0;         // r(forward, backward) over micro-batches, 0 when not measurable

  Cause cause = Cause::kNone;
  Culprit worst;              // none for cause none
  std::string worst_host;     // the worst rank's host, when worst is a rank and the host is known
  int worst_device = -1;      // ... and its GPU (-1: none or not known)
  double worst_S = 1.0;       // S_w of the worst rank, or the stage score for a stage
  // Seconds of this step that fixing the named culprit (`worst`) alone would give back: its
  // what-if share (src/ledger.h), 0 when none is named. The ledger charges it to the culprit.
  double fix_gain_s = 0.0;
  std::string top_op;         // op type with the largest S_t
  std::string evidence;       // one line: the numbers behind the cause

  // Against the job's noise model (src/significance.h): the null's mean S (what jitter alone
  // costs), the part of S - 1 it explains (jitter = min(S, S_null) - 1), P(null S >= S), and
  // the p-value of the verdict: of the test that named the cause, or for cause none the
  // smallest of the tests (all >= alpha). null_ready: the null had draws to test against.
  double S_null = 1.0;
  double jitter = 0.0;
  double p_S = 1.0;
  double p = 1.0;
  bool null_ready = false;
  // Which test named the cause: "step" (this step against the null), "window" (the recent
  // steps' mean lateness against the null), "persistence" (who led the recent steps:
  // `persist`) or "cpu-work" (who did more CPU work over them: `cpu_work`); "" for cause
  // none. persist: the evidence of the dp rank of the rank named, or, naming none, of the dp
  // rank that led the most recent steps.
  std::string named_by;
  PersistenceEvidence persist;
  CpuWorkEvidence cpu_work;
  std::vector<AlarmEvent> alarms;  // alarms raised or cleared at this step
};

}  // namespace sp::online
