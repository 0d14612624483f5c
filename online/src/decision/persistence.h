// Persistence as evidence: who leads, step after step, tested without the null's scale.
//
// The magnitude tests (significance.h) ask how far a unit is behind its peers against the
// jitter the null model learned. Where that model is wider than how much the units really
// differ (per-op times that scatter while a rank's total does not: work charged to whichever
// op waits for it), a unit that is the slowest on every step stays "within the noise" on every
// step. Its identity is evidence the magnitudes throw away: when no unit is special the units
// are exchangeable, and which one leads a step is a fair draw among them.
//
// The test, over the last `window` steps of a family of units, per step the units ranked by
// their relative log score (significance.h; less each unit's own null mean where the family
// has one). Used for the dp ranks, which do the same work: stages are not exchangeable
// (noise_units.cpp, stage_evidence). For the unit that led the most steps, u, two paired
// tests by step, each exact under its own exchangeability and needing no scale:
// - it leads more often than its strongest rival v (the other unit that led the most steps):
//   on the steps one of the two led, which one did is a fair coin when u and v are
//   exchangeable, whatever the other units do (a host of ranks late together splits its leads
//   among its ranks, each of them only one rival's worth of evidence against the others);
//   P(Bin(L_u + L_v, 1/2) >= L_u). Against v, the rival that led the most, because that p is
//   the largest over all rivals (the test is an intersection over rivals: u must out-lead
//   each of them).
// - it is ahead of every other unit, pairwise: for each v the sign test of "u later than v"
//   over the steps where they differ, P(Bin(n_uv, 1/2) >= wins_uv), and the largest of these
//   (again an intersection: ahead of each). Why too: a unit with a wider spread than its
//   peers, not later, leads more often than they do (a maximum favours spread) but is ahead of
//   each of them on half the steps only (the sign test needs a common centre, not a common
//   spread): a noisier rank on a real machine is not a straggler.
// Both must hold: p = the larger. Corrected for the family (Bonferroni over its N units: only
// the unit that led the most is tested, and choosing it is paid for by testing as if every
// unit had been). Ties within the replay's time resolution are no one's lead and no one's win.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

#include "significance.h"

namespace sp::online {

struct Persistence {
  int unit = -1;      // the unit tested: the one that led the most steps (-1: none led any)
  int led = 0;        // steps of the window it led
  int rival = -1;     // the other unit that led the most steps (-1: none)
  int rival_led = 0;
  int ahead = 0;      // the fewest steps it was ahead of any one other unit ...
  int ahead_of = 0;   // ... of the steps where those two differed
  int steps = 0;      // steps in the window
  double p = 1.0;     // both tests, corrected for the family's units
};

// The family's unit that led the most of its last `window` observed steps, or `unit` when one
// is given (>= 0: that unit's evidence, e.g. the rules' culprit or an alarm's unit).
// O(units x window).
Persistence persistence(const UnitFamily& family, int window, int unit = -1);

// P(Bin(n, 1/2) >= k): a sign test's upper tail.
double sign_test_p(int k, int n);

// Who does more work, step after step: the persistence test on the CPU time of each unit's
// step-marking threads, where the ranks' work is on the CPU (StepModel::rank_cpu_s). On a host
// whose cores the ranks share, a rank that computes more slows whichever rank shares its core
// too, so wall times scatter more than the work does and the wall tests above see a lead
// within the noise; CPU time leaves out the time a thread waited for a core.
//
// Per step, each unit's excess (its CPU time less the upper median of its peers', as a share of
// the step's ideal time) and its rank among all units (0 = least work). Over the last k steps the
// tested unit with the largest rank sum, u, is tested on that sum: for exchangeable units each
// step's rank is uniform, so the sum's tail is exact (RankSumTail, significance.h) at any N and
// any k. A rank test uses every step's order, not only whether u did the most (1 in N) or more
// than half of its peers: 4 units, 8 steps, u the most on 7 and second on 1 is p = 1.4e-4,
// where "the most on k of 8" needs all 8 at the same level. Its CPU time's scale never enters
// (thread CPU time scatters differently per job and per host).
// p: Bonferroni over the units tested (the excluded unit is compared with, never tested).
// How much: u's lead, per step its CPU time less the largest of the other tested units', as a
// share of the ideal step; its median over the steps is what u's extra work costs a
// synchronous step beyond what every other rank's work needs (NoiseVerdict names u only when
// it is at least min_slowdown). A group of units that all do more (the synthetic matrix's
// drifting host: 8 of 64 ranks up to 2% slower; a slower host in a real job) puts each of them
// high in the order, and the rank sum alone named one of them on 33-53% of 1000 clean steps
// at 64 and 512 ranks; within the group each one's lead is the scatter among them, about 0.
class WorkHistory {
 public:
  explicit WorkHistory(int window) : window_(std::max(1, window)) {}
  // One step: CPU seconds per unit (any <= 0: unknown, the step is not kept) and the step's
  // ideal time. A change in the number of units starts the history again.
  void add(const std::vector<double>& unit_cpu_s, double ideal_s);

  struct Lead {
    int unit = -1;             // -1: no step kept
    int above = 0, steps = 0;  // steps its excess was above 0, of the steps kept
    int rank_sum = 0;          // the sum of its rank's levels over them (RankSumTail)
    int most = 0;              // steps it did more work than every other tested unit
    double median_lead = 0;    // its median lead over them (above), a share of the ideal step
    double median_excess = 0;  // its median excess over them, a share of the ideal step
    double p = 1.0;            // the rank-sum test, corrected for the units tested
  };
  // Over the last k kept steps (at most the window; k <= 0: the window). `excluded` (>= 0): a
  // unit that is compared with but never tested (NoiseVerdict: the one hosting the analysis).
  Lead lead(int k = 0, int excluded = -1) const;

 private:
  int window_;
  struct Step {
    std::vector<float> excess;    // per unit
    std::vector<float> share;     // per unit: its CPU time over the ideal step
    std::vector<uint8_t> level;   // per unit: its rank's level, 0 = least work (RankSumTail)
  };
  std::deque<Step> steps_;  // the kept steps, newest last
  RankSumTail tail_;        // for the current number of units
  std::vector<size_t> order_;  // add()'s scratch: the units by CPU time, least first
};

}  // namespace sp::online
