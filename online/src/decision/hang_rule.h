// The hang cause: a step that took longer than the job's hang bound (the hang watch's own
// definition, rank_pipeline/src/host_transport/hang_watch.h: max(hang_multiple x the typical step,
// hang_after_s)) was not slow, it stopped. Which rank stopped is read from the step's own events,
// so that the verdict stands live and offline (analyze-dir) alike:
//
// - A rank that stopped outside communication (SIGSTOP, a descheduled process, a long CPU
//   call) shows it on its own chain: one compute segment, or one untraced gap between its ops
//   (a launch delay), as long as the stall. Every other rank waits for it in its next collective
//   or receive, which the model times as waiting (a comm node's launch, not its work), so only
//   the stopped rank has such a stretch of its own; it entered that collective last by about
//   as much. It is named when its longest own stretch is longer than every other rank's by at
//   least half of the stall (the step's time beyond the typical step): it alone explains more
//   of the stall than everything else in the step together (a step slow on every rank, or slow
//   ops on several, names no one).
// - A rank that stopped inside a collective after every member had entered it leaves no trace
//   of its own: every member's transfer is as long as the stall and ends together. The step is
//   still a hang; the events cannot tell which rank, the heartbeats can: live, StepAnalysis names
//   the one silent rank of the hang watch's latest episode (OnlineConfig::silent_ranks).
//
// StepAnalysis keeps a hang step out of everything it learns (the ideal, sequence and noise
// windows, the transfer reference, the noise model's observed scores and calibration, the alarm
// history): one stop of 20 s is no part of the job's jitter or of a link's level.
#pragma once

#include <string>

#include "model/step_model.h"

namespace sp::online {

struct HangFinding {
  bool hang = false;       // the step took longer than the bound
  int rank = -1;           // the rank that stopped, -1: not told by the events
  double stall_s = 0;      // the step's time beyond the typical step
  double stopped_s = 0;    // the named rank's longest own stretch
  std::string top_op;      // what it was in: an op type, or "launch-delay" (untraced time)
  std::string evidence;    // one line
};

// bound_s: the hang bound for this step; typical_s: the median recent step (0: none yet).
HangFinding find_hang(const StepModel& m, double bound_s, double typical_s);

}  // namespace sp::online
